/* common.h: the subcommands of `axon` and what they share: reporting a
 * library failure, --threads and --precision, loading a model and checking
 * that data fit it. */
#ifndef AXON_CLI_COMMON_H
#define AXON_CLI_COMMON_H

#include <stdbool.h>

#include "axon.h"
#include "options.h"

/* Each subcommand: argv[0] is its name, the options follow; returns the
 * exit status (see options.h). */
int command_train(int argc, char **argv);
int command_eval(int argc, char **argv);
int command_predict(int argc, char **argv);
int command_export(int argc, char **argv);
int command_plot(int argc, char **argv);
int command_info(int argc, char **argv);
int command_stats(int argc, char **argv);
int command_prep(int argc, char **argv);
int command_bench(int argc, char **argv);

/* Restarts axon without an OPENBLAS_CORETYPE that holds an AVX-512 CPU to
 * older kernels, and with GOMP_SPINCOUNT=1000 unless the user set OpenMP's
 * waiting (see blas_env.c); returns when there is nothing to do. */
void cli_release_blas_core_override(char **argv);

/* After a run with profiling on: prints the per-operation table (when print)
 * and writes it as JSON to json_path (when not NULL). */
int profile_report(ax_net *net, const ax_train_summary *summary, int64_t batch, bool print,
                   const char *json_path);

/* Prints "axon: <message>" for a failed library call, prefixed with subject
 * (a file name) when the message does not name it already. Returns
 * CLI_EXIT_INTERRUPTED for AX_STATUS_INTERRUPTED, else CLI_EXIT_RUNTIME. */
int report_failure(ax_status status, const char *subject);

/* The optional components of a build (CMake's AXON_PREP and AXON_STATS).
 * cli_component_built answers from ax_build_info; cli_refuse_unbuilt prints
 * "axon COMMAND: this build of axon has no ..." with the CMake option and the
 * Debian packages that bring the component back, and returns
 * CLI_EXIT_RUNTIME. */
typedef enum cli_component { CLI_COMPONENT_PREP, CLI_COMPONENT_STATS } cli_component;
bool cli_component_built(cli_component component);
int cli_refuse_unbuilt(const char *command, cli_component component);

/* Option-table entries shared by several subcommands. */
#define THREADS_OPTION                                                                  \
    {"threads", CLI_INT, "N", "auto",                                                   \
     "threads for OpenMP and the BLAS; auto = OMP_NUM_THREADS, else all cores"}
#define PRECISION_OPTION \
    {"precision", CLI_STRING, "P", "f32",                                             \
     "compute precision: f32, f64 or bf16 (bfloat16 GEMM operands, float32 weights, "  \
     "sums and everything else; the CPU and CUDA devices)"}
#define DEVICE_OPTION                                                 \
    {"device", CLI_STRING, "D", "cpu",                                \
     "where to compute: cpu, NAME (device 0 of backend NAME) or NAME:N\n" \
     "(device N), for the backends and devices axon info lists"}

/* Reads --threads and applies it with ax_set_threads; returns an exit
 * status (usage error for a bad value). */
int apply_threads(const cli_args *args);
/* True when the user left the thread count to axon (no --threads N, no
 * OMP_NUM_THREADS): training may then use fewer under load
 * (ax_train_config.adapt_threads). */
bool threads_left_to_axon(const cli_args *args);
/* Reads --precision; false after printing a usage message. */
bool read_precision(const cli_args *args, ax_precision *precision);
/* The precision with what it computes in, for the header lines ("f64 (double)"). */
const char *precision_description(ax_precision precision, ax_device device);
/* Reads --device: cpu, NAME or NAME:N, as ax_device_parse reads them, for
 * the backends the library found (ax_backend_name); false after printing a
 * usage message. */
bool read_device(const cli_args *args, ax_device *device);
/* Moves a loaded network onto device (nothing to do for the CPU): a copy is
 * created there with the same weights and the original freed. Names the
 * device in a failure (no such backend, no such device). */
int move_to_device(ax_net **net, ax_device device);

/* Loads a model file (ax_net_load), naming the option and the file in any
 * failure. */
int load_model(const char *option, const char *path, ax_precision precision, ax_net **out);
/* load_model, then move_to_device: the model ready to run on device. */
int load_model_on_device(const char *option, const char *path, ax_precision precision,
                         ax_device device, ax_net **out);
/* Checks that data can go through net: features = input width, labels
 * below the output width of a softmax, targets = output width. */
int check_data_fits(const ax_net_config *config, const ax_dataset *data, const char *model_name);
/* Refuses (CLI_EXIT_RUNTIME, printing why) images of another shape than the
 * network's input_shape; data without an image shape is taken as it is. */
int check_image_shape(const ax_net_config *config, const ax_dataset *data, const char *model_name);
/* True when the output layer gives class probabilities (softmax or sigmoid). */
bool output_is_classification(const ax_net_config *config);

#endif
