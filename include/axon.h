/* axon.h: the one public header of libaxon, and its manual.
 *
 * axon trains neural networks of dense (fully connected), convolution and
 * pooling layers on the CPU (and, where built, a GPU or another device of a
 * backend plugin) and reports how fast: every run counts its FLOPs with the
 * performance model from the analysis of ROOT/TMVA's deep-learning backend
 * on CPU, CUDA and OpenCL ("TMVA's FLOP count": ax_net_train_flops).
 *
 * Conventions used throughout:
 * - Matrices are row-major; shapes are written (rows, cols), e.g. inputs are
 *   (rows, features), a layer's weights are (out, in).
 * - Every fallible call returns ax_status. AX_STATUS_OK is zero; on any other
 *   value ax_error_message() holds a sentence for the user naming the file,
 *   line or option at fault. The library never prints, exits or aborts on bad
 *   input.
 * - Objects come in create/free pairs; every _free accepts NULL. Pointers
 *   returned by accessors are owned by the object they came from.
 * - Dimensions are int64_t, sizes in bytes are size_t.
 *
 * Versioned structs. ax_net_config, ax_train_config, ax_data_options,
 * ax_prep_options and ax_regularization grow at their end as the library
 * gains settings; their first member, size, is sizeof the struct in the header the program was
 * built against. Start every one from its _defaults() function (inline
 * here: it asks the library to fill sizeof bytes, so a newer library never
 * writes past an older program's struct); the library copies size bytes
 * over its own defaults, so the settings an older program does not know keep
 * their defaults, and it refuses (AX_STATUS_BAD_ARGUMENT) a size from a
 * newer header than its own, whose settings it would silently ignore. A
 * binding in another language calls the _init(config, size) functions with
 * its own size. Fields are only ever added at the end; none is removed,
 * reordered or retyped without a new major version.
 *
 * The results the library writes into the caller's memory, ax_train_summary,
 * ax_evaluation and ax_prep_summary, follow the same rule the other way
 * round: their first member, size, is set by the caller (start from their
 * _empty() functions, inline here; a binding calls _init(result, size)), and
 * the library writes no byte past it: a program built against an older
 * header gets the fields it knows, and what the library allocated for fields
 * past its size is freed, not leaked. A size below sizeof (size_t) or above
 * this library's sizeof is refused (AX_STATUS_BAD_ARGUMENT) before anything
 * is written.
 *
 * Threads. The library starts OpenMP and BLAS threads of its own and is
 * safe to call from several threads under these rules:
 * - An ax_net (and the profile and workspace inside it) is used by one
 *   thread at a time, ax_train included; different networks may train on
 *   different threads at once (axon train --replicas does).
 * - An ax_dataset is read-only once loaded: any number of threads may
 *   train, evaluate or predict on one at the same time. Functions taking a
 *   non-const ax_dataset * change it and need it to themselves.
 * - Config structs are plain values, copied by the functions that take
 *   them; an ax_train_state resumed from is read only (several ax_train
 *   calls may share one). An ax_communicator of a thread team belongs to
 *   the one thread that trains with it.
 * - ax_error_message() is per thread: it holds the last failure of the
 *   calling thread.
 * - ax_set_threads() is process-wide for the BLAS (OpenBLAS and BLIS keep
 *   one thread count) and sets the calling thread's OpenMP count: call it
 *   before starting threads, or from each thread under a lock of the
 *   program's (tools/axon/replicas.c). ax_build_info_get() fills its text on
 *   the first call: make that call before starting threads.
 * - ax_train with adapt_threads (the default) changes the BLAS's
 *   process-wide thread count while it runs (never ax_threads()): when
 *   several threads of a program train at once, set adapt_threads false
 *   in each. Replicas and MPI ranks keep their count by themselves.
 * - Backend plugins are loaded once, under a lock, by whichever thread first
 *   asks for a device.
 */
#ifndef AXON_H
#define AXON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* memset, for the header-only _empty() initialisers */

#ifdef __cplusplus
extern "C" {
#endif

#define AX_VERSION "0.1.0"

#if defined(__GNUC__)
#define AX_NODISCARD __attribute__((warn_unused_result))
#else
#define AX_NODISCARD
#endif

/* ---------------------------------------------------------------- status */

typedef enum ax_status {
    AX_STATUS_OK = 0,
    AX_STATUS_BAD_ARGUMENT,   /* an option or argument is out of range or malformed */
    AX_STATUS_BAD_FILE,       /* a file is missing, truncated or not in the format claimed */
    AX_STATUS_BAD_DATA,       /* well-formed data that cannot be used: NaN, label out of range, shape mismatch */
    AX_STATUS_IO_ERROR,       /* reading or writing failed (disk full, permissions) */
    AX_STATUS_OUT_OF_MEMORY,  /* an allocation failed or would exceed available memory */
    AX_STATUS_DIVERGED,       /* training produced NaN or Inf */
    AX_STATUS_UNSUPPORTED,    /* a combination this build or backend does not offer */
    AX_STATUS_INTERRUPTED,    /* the progress callback asked to stop */
    AX_STATUS_DEVICE,         /* the device computing (a GPU) or its runtime failed mid-computation;
                                 the message names the operation and the runtime's error */
} ax_status;

/* The message describing the last failure on this thread ("" if none). */
const char *ax_error_message(void);
/* A short constant name for a status, e.g. "bad file". */
const char *ax_status_name(ax_status status);

/* ------------------------------------------------------------ enumerations */

typedef enum ax_precision {
    AX_PRECISION_F32 = 0, /* float, the default */
    AX_PRECISION_F64 = 1, /* double */
    /* float32 weights, gradients, optimizer state and elementwise work; the
     * GEMMs' operands (activations, weights, deltas) rounded to bfloat16
     * with float32 sums. CPU only; see ax_bf16_native. */
    AX_PRECISION_BF16 = 2,
} ax_precision;

typedef enum ax_activation {
    AX_ACT_IDENTITY = 0,
    AX_ACT_SIGMOID,
    AX_ACT_TANH,
    AX_ACT_RELU,
    AX_ACT_SOFTMAX, /* output layer only; goes with AX_LOSS_CROSS_ENTROPY */
} ax_activation;

typedef enum ax_loss {
    AX_LOSS_AUTO = 0,              /* from the output activation: softmax -> cross-entropy,
                                      sigmoid -> binary cross-entropy, else MSE */
    AX_LOSS_CROSS_ENTROPY,         /* softmax output, integer class labels; mean over rows */
    AX_LOSS_BINARY_CROSS_ENTROPY,  /* sigmoid outputs, summed over outputs, mean over rows */
    AX_LOSS_MSE,                   /* mean over all elements of (output - target)^2 (PyTorch's MSELoss) */
} ax_loss;

typedef enum ax_init {
    AX_INIT_AUTO = 0, /* He for ReLU layers, Xavier otherwise */
    AX_INIT_HE,       /* normal(0, sqrt(2 / in)) */
    AX_INIT_XAVIER,   /* uniform(-a, a), a = sqrt(6 / (in + out)) */
    AX_INIT_UNIFORM,  /* uniform(-r, r), r = init_range (the galaxy classifier: 0.2) */
} ax_init;

typedef enum ax_optimizer_kind {
    AX_OPTIMIZER_SGD = 0, /* SGD with optional (Nesterov) momentum */
    AX_OPTIMIZER_ADAM,
    AX_OPTIMIZER_CG,      /* full-batch Polak-Ribiere nonlinear CG (scipy.optimize.fmin_cg) */
    AX_OPTIMIZER_LBFGS,   /* full-batch L-BFGS with the same strong-Wolfe line search */
    AX_OPTIMIZER_ADAMW,   /* Adam with decoupled weight decay (torch.optim.AdamW) */
} ax_optimizer_kind;

/* Learning-rate schedules (ax_train_config.lr_schedule): the rate of each
 * epoch, e = 0, 1, ... the epochs before it, from ax_train_config's
 * learning_rate (lr0) as PyTorch's schedulers compute it, stepped once per
 * epoch (their recursive forms, so the same rounding). */
typedef enum ax_lr_schedule {
    AX_LR_SCHEDULE_CONSTANT = 0, /* lr0 every epoch (the default) */
    AX_LR_SCHEDULE_STEP,         /* times lr_gamma every lr_step_every epochs (StepLR) */
    AX_LR_SCHEDULE_EXP,          /* times lr_gamma every epoch (ExponentialLR) */
    AX_LR_SCHEDULE_COSINE,       /* CosineAnnealingLR(T_max = epochs, eta_min = lr_min) */
    AX_LR_SCHEDULE_PLATEAU,      /* ReduceLROnPlateau on the validation loss (mode min,
                                    relative threshold 1e-4, cooldown 0, min_lr 0, eps 1e-8):
                                    times lr_gamma after more than lr_patience epochs without
                                    improvement; needs a validation set */
    AX_LR_SCHEDULE_INVSCALING,   /* scikit-learn's: lr0 / (rows seen + 1)^lr_power after each
                                    epoch (SGD only) */
    AX_LR_SCHEDULE_ADAPTIVE,     /* scikit-learn's: divided by 5 once the training loss has
                                    not fallen by lr_tol for more than lr_patience epochs;
                                    training stops when the rate is already 1e-6 or less
                                    (SGD only) */
} ax_lr_schedule;

/* The options of ax_train_config an optimizer kind reads beyond those every
 * kind reads (ax_optimizer_uses); bits, so that a kind's set is one value. */
typedef enum ax_optimizer_setting {
    AX_OPTIMIZER_SETTING_LEARNING_RATE = 1 << 0, /* learning_rate (CG, L-BFGS search their steps) */
    AX_OPTIMIZER_SETTING_MOMENTUM = 1 << 1,      /* momentum, nesterov */
    AX_OPTIMIZER_SETTING_BETAS = 1 << 2,         /* beta1, beta2, epsilon */
    AX_OPTIMIZER_SETTING_LINE_SEARCH = 1 << 3,   /* gtol, line_search_max_evaluations; its
                                                    summary counts evaluations */
    AX_OPTIMIZER_SETTING_LBFGS_MEMORY = 1 << 4,  /* lbfgs_memory */
    AX_OPTIMIZER_SETTING_WEIGHT_DECAY = 1 << 5,  /* weight_decay (AdamW's decoupled decay) */
} ax_optimizer_setting;

const char *ax_activation_name(ax_activation activation);
const char *ax_loss_name(ax_loss loss);
const char *ax_init_name(ax_init init);
/* "f32", "f64" or "bf16" ("unknown" for a value no precision has). */
const char *ax_precision_name(ax_precision precision);
const char *ax_optimizer_name(ax_optimizer_kind kind);
/* Parse a name ("relu", "cross-entropy", "he", "f64", "sgd", ...) into the enum. */
AX_NODISCARD ax_status ax_activation_parse(const char *name, ax_activation *out);
AX_NODISCARD ax_status ax_loss_parse(const char *name, ax_loss *out);
AX_NODISCARD ax_status ax_init_parse(const char *name, ax_init *out);
AX_NODISCARD ax_status ax_precision_parse(const char *name, ax_precision *out);
AX_NODISCARD ax_status ax_optimizer_parse(const char *name, ax_optimizer_kind *out);
/* How many optimizer kinds this build has; their values are 0 .. count - 1. */
int ax_optimizer_count(void);
/* Whether kind trains on the full batch only, with no dropout, one epoch being one
 * iteration (CG, L-BFGS); false for a value no kind has. */
bool ax_optimizer_is_full_batch(ax_optimizer_kind kind);
/* Whether kind reads the option(s) `setting` names (any one, for several bits); false for a
 * value no kind has. */
bool ax_optimizer_uses(ax_optimizer_kind kind, ax_optimizer_setting setting);
/* The learning rate to use for kind when none is chosen: 0.001 for Adam, else 0.1. */
double ax_optimizer_default_learning_rate(ax_optimizer_kind kind);
/* Writes the names of the kinds that read `setting` as "a", "a and b" or "a, b and c"
 * into text (capacity bytes, truncated to fit), for messages. */
void ax_optimizer_names_using(ax_optimizer_setting setting, char *text, size_t capacity);

/* ----------------------------------------------------------------- runtime */

/* Sets the threads used by OpenMP loops and the BLAS; n <= 0 means the
 * default (OMP_NUM_THREADS, else the cores this process may run on). */
AX_NODISCARD ax_status ax_set_threads(int n);
/* The threads set (ax_set_threads, or the default); a training run may use
 * fewer of them while other processes hold the cores
 * (ax_train_config.adapt_threads; ax_progress.threads says how many). */
int ax_threads(void);
/* Seconds on axon's one monotonic clock, the one training, evaluation and
 * the benchmarks are timed with; only differences mean anything. */
double ax_seconds_now(void);
/* Tasks of other processes running or waiting for a core now, or -1 where
 * that cannot be told (not Linux, or the process may not run on every CPU of
 * the machine). The CLI chooses OpenMP's spin count from it. */
int ax_others_running(void);
/* Makes libgomp's waiting threads spin 100 rounds before they sleep, for the
 * rest of the process, where libgomp was loaded before axon could set
 * GOMP_SPINCOUNT (a Python program importing scikit-learn first): a thread
 * of axon's holds an idle OpenMP team of one thread per CPU, and libgomp
 * spins briefly while it manages more threads than CPUs. Idempotent; one
 * sleeping thread per CPU is its cost. The Python package calls it. */
AX_NODISCARD ax_status ax_openmp_spin_briefly(void);

/* How AX_PRECISION_BF16's GEMMs run here. Native: on VDPBF16PS
 * (AVX512_BF16), two bf16 products per float32 lane and instruction.
 * Emulated: float32 GEMMs of operands rounded to bfloat16, the same
 * roundings at float32's speed. Native where the CPU has the instructions
 * and a probe (about 3 ms, once per process) finds them at least 1.25x
 * float32 FMAs' multiply-adds per second; AXON_BF16_KERNEL=native,
 * emulated or auto in the environment overrides, and without it
 * AXON_CPU_KERNELS=generic means emulated (docs/cli.md). */
typedef struct ax_bf16_support {
    bool instructions;  /* the CPU has AVX512_BF16 */
    bool native;        /* the GEMMs run on VDPBF16PS; else emulated */
    double speed_ratio; /* VDPBF16PS multiply-adds per second over float32
                           FMAs', as measured; 0 when not measured */
    const char *reason; /* one line saying which and why */
} ax_bf16_support;
ax_bf16_support ax_bf16_support_get(void);
/* ax_bf16_support_get().native */
bool ax_bf16_native(void);
/* Whether the CPU backend's float32 convolutions with 5x5 kernels of
 * stride 1 (channels in 16s, filters in 32s; LeNet's second layer) run
 * Winograd's F(4x4, 5x5) in their forward pass and input gradient, and
 * F(5x5, 4x4) in their weight gradient (filters in 16s): on a
 * CPU with AVX-512 whose kernels may be used, unless AXON_CONV_WINOGRAD is
 * "off". Their rates (--profile, axon info --peak) count a direct
 * convolution's FLOPs, 3-6x the products made, so they may pass the
 * machine's peak. */
bool ax_conv_winograd_enabled(void);

typedef struct ax_build_info {
    const char *version;       /* AX_VERSION */
    const char *blas;          /* BLAS library linked, e.g. "BLIS 0.9.0" */
    const char *blas_kernels;  /* kernel set it runs, e.g. "skx" or "Haswell" */
    const char *cpu_features;  /* e.g. "avx2 fma avx512f" */
    const char *backends;      /* the backends found, ax_backend_name's, separated by spaces */
    const char *compiler;      /* compiler and flags summary */
    bool openmp;               /* built with OpenMP */
    bool prep;                 /* image preparation built (AXON_PREP): else ax_prep_run refuses */
    bool stats;                /* activation statistics built (AXON_STATS): else ax_stats_* refuse */
} ax_build_info;

/* Facts about this build and machine; the strings are static. */
ax_build_info ax_build_info_get(void);

/* ----------------------------------------------------------------- dataset */

/* A table of rows: float32 features (rows, features) and either integer
 * class labels (rows) or float targets (rows, targets). */
typedef struct ax_dataset ax_dataset;

/* A dataset of the given shape, zero-filled. classes > 0 makes it a
 * classification set with labels; targets > 0 makes it a regression set. */
AX_NODISCARD ax_status ax_dataset_create(int64_t rows, int64_t features, int64_t classes,
                                         int64_t targets, ax_dataset **out);
void ax_dataset_free(ax_dataset *dataset);

int64_t ax_dataset_rows(const ax_dataset *dataset);
int64_t ax_dataset_features(const ax_dataset *dataset);
/* Number of classes (max label + 1), or 0 for a regression set. */
int64_t ax_dataset_classes(const ax_dataset *dataset);
/* Width of the float targets, or 0 for a classification set. */
int64_t ax_dataset_targets(const ax_dataset *dataset);
/* Where the data came from, for messages (a path or "synth:linear"). */
const char *ax_dataset_source(const ax_dataset *dataset);
/* Where the labels came from, for messages about them: the labels file of an
 * IDX pair or of .npy features with a separate labels file, else the same
 * as ax_dataset_source. */
const char *ax_dataset_labels_source(const ax_dataset *dataset);
/* (rows, features), owned by the dataset, writable; NULL for a streamed or a sparse set. */
float *ax_dataset_features_data(ax_dataset *dataset);
/* (rows) class labels, or NULL for a regression set or a streamed set. */
int32_t *ax_dataset_labels_data(ax_dataset *dataset);
/* Whether the set is batches:DIR streamed (ax_data_options.stream): its rows
 * are read from disk as ax_train (mini-batches) and ax_net_evaluate use
 * them, and are not in memory. */
bool ax_dataset_is_streamed(const ax_dataset *dataset);
/* (rows, targets), or NULL for a classification set. */
float *ax_dataset_targets_data(ax_dataset *dataset);
/* Whether the rows are images, and if so their shape (height, width,
 * channels), each row holding its pixels in (row, column, channel) order:
 * IDX images (28, 28, 1), batches:DIR (S, S, C), a 4-D .npy (N, H, W, C).
 * shape gets zeros when they are not. Convolution and pooling layers need it. */
bool ax_dataset_image_shape(const ax_dataset *dataset, int64_t shape[3]);
/* Declares the rows images of shape (height, width, channels); refused
 * (AX_STATUS_BAD_ARGUMENT) unless the product is the features per row. */
AX_NODISCARD ax_status ax_dataset_set_image_shape(ax_dataset *dataset, const int64_t shape[3]);

/* A dataset over the caller's arrays, without a copy (a binding's NumPy
 * arrays): features (rows, features) row-major, and labels (rows) in
 * [0, classes) when classes > 0, or targets (rows, targets) when targets > 0
 * (exactly one of the two). The arrays stay the caller's: they must outlive
 * the dataset and not change while the library uses it; the library only
 * reads them, and ax_dataset_free leaves them alone (ax_dataset_features_data
 * and the like hand the caller's pointers back). source (nullable: "(in
 * memory)") names the data in messages. Checked at once: a shape with no
 * rows or features is AX_STATUS_BAD_ARGUMENT, a NaN or Inf value or a label
 * out of range AX_STATUS_BAD_DATA naming its row (and column). */
AX_NODISCARD ax_status ax_dataset_wrap(int64_t rows, int64_t features, int64_t classes,
                                       int64_t targets, const float *features_data,
                                       const int32_t *labels, const float *targets_data,
                                       const char *source, ax_dataset **out);
/* ax_dataset_wrap for features in compressed sparse rows (CSR), as scipy.sparse.csr_matrix
 * holds them: row r's stored values are values[row_starts[r] .. row_starts[r + 1]), in the
 * columns columns[...] (in any order; a column given twice adds up, as scipy's toarray),
 * every other feature 0. row_starts (rows + 1) starts at 0 and never falls; columns and
 * values hold row_starts[rows] items. Training, evaluation and prediction make the rows of
 * each batch dense as they use them, the same float32 rows the dense matrix holds, so the
 * results equal the dense set's bit for bit; the whole set is never dense. The arrays stay
 * the caller's, as with ax_dataset_wrap. Checked at once: the row starts, every column in
 * [0, features) (AX_STATUS_BAD_ARGUMENT naming the row), values finite and labels in range
 * (AX_STATUS_BAD_DATA). A sparse set is used by a network in float32 on a backend in host
 * memory (the CPU; AX_STATUS_UNSUPPORTED otherwise), not by ax_dataset_split, checkpoints or
 * ax_net_activations; ax_dataset_features_data gives NULL. */
AX_NODISCARD ax_status ax_dataset_wrap_csr(int64_t rows, int64_t features, int64_t classes,
                                           int64_t targets, const int64_t *row_starts,
                                           const int32_t *columns, const float *values,
                                           const int32_t *labels, const float *targets_data,
                                           const char *source, ax_dataset **out);
/* Whether the set is ax_dataset_wrap_csr's (its rows are made dense batch by batch). */
bool ax_dataset_is_sparse(const ax_dataset *dataset);

/* MNIST-format IDX files (gzipped or not); pixels scaled to [0, 1]. */
AX_NODISCARD ax_status ax_dataset_load_idx(const char *images_path, const char *labels_path,
                                           ax_dataset **out);
/* The standard pair in a folder: train-images-idx3-ubyte[.gz] and
 * train-labels-idx1-ubyte[.gz], or the t10k pair when test is true. */
AX_NODISCARD ax_status ax_dataset_load_idx_dir(const char *dir, bool test, ax_dataset **out);

/* Row ranges (an MPI rank's shard; docs/mpi.md): the *_rows loaders return
 * rows [first, first + count) of the file (count 0 allowed) exactly as the
 * whole-file loader would, reading and keeping only what the range needs;
 * a range outside the file is AX_STATUS_BAD_ARGUMENT. Headers and size
 * checks run as for the whole file, and labels are read whole (classes are
 * the file's, the same for every range), but damage in the feature data
 * after the range is not seen. The ax_dataset_count_* functions give the
 * rows of a file, for choosing a range, as cheaply as the format allows. */
/* IDX: seeks (plain) or inflates and discards (gzip) up to first, stops after the range. */
AX_NODISCARD ax_status ax_dataset_load_idx_rows(const char *images_path, const char *labels_path,
                                                int64_t first, int64_t count, ax_dataset **out);
/* ax_dataset_load_idx_dir's pair, rows [first, first + count). */
AX_NODISCARD ax_status ax_dataset_load_idx_dir_rows(const char *dir, bool test, int64_t first,
                                                    int64_t count, ax_dataset **out);
/* The image count in an IDX images file's header. */
AX_NODISCARD ax_status ax_dataset_count_idx(const char *images_path, int64_t *rows);
/* The image count of a folder's train (or t10k when test) images file. */
AX_NODISCARD ax_status ax_dataset_count_idx_dir(const char *dir, bool test, int64_t *rows);

/* ax_csv_options.label_column for a file of features only: every column is a
 * feature and the set has neither labels nor targets (for prediction). */
#define AX_CSV_NO_LABEL (-2)

typedef struct ax_csv_options {
    int64_t label_column;  /* 0-based column of the label; -1 = last column; AX_CSV_NO_LABEL:
                              none */
    bool header;           /* skip the first line */
    bool regression;       /* label is a float target, not a class */
    double scale;          /* features are multiplied by this (e.g. 1/255) */
    char delimiter;        /* ',' by default */
} ax_csv_options;

ax_csv_options ax_csv_defaults(void);
/* A CSV file of numbers, one row per line. Errors name the line and column. */
AX_NODISCARD ax_status ax_dataset_load_csv(const char *path, const ax_csv_options *options,
                                           ax_dataset **out);
/* Rows [first, first + count) of ax_dataset_load_csv's set: streams the file, parsing and
 * checking every line (for the classes) but keeping only the range's rows. */
AX_NODISCARD ax_status ax_dataset_load_csv_rows(const char *path, const ax_csv_options *options,
                                                int64_t first, int64_t count, ax_dataset **out);
/* The data rows of a CSV file (lines after the header, trailing blank lines not counted):
 * one streaming pass that counts line ends and keeps nothing; the lines are not parsed. */
AX_NODISCARD ax_status ax_dataset_count_csv(const char *path, const ax_csv_options *options,
                                            int64_t *rows);
/* NumPy .npy features (float32, float64 or uint8; 2-D (rows, features)) and
 * optional labels (1-D integers) or targets (1-D/2-D floats); labels_path may
 * be NULL when the label is the first column of the features file. Features
 * are multiplied by scale. */
AX_NODISCARD ax_status ax_dataset_load_npy(const char *features_path, const char *labels_path,
                                           double scale, ax_dataset **out);
/* Rows [first, first + count) of ax_dataset_load_npy's set: seeks to the range's rows (labels
 * from column 0 or integer labels are read whole, in bounded chunks, for the classes). */
AX_NODISCARD ax_status ax_dataset_load_npy_rows(const char *features_path,
                                                const char *labels_path, double scale,
                                                int64_t first, int64_t count, ax_dataset **out);
/* The rows (first dimension) in a .npy file's header. */
AX_NODISCARD ax_status ax_dataset_count_npy(const char *features_path, int64_t *rows);
/* The data of TMVA's regression benchmark: rows x features drawn from
 * N(0, 1), target x . w for a fixed random w drawn from the same seed. */
AX_NODISCARD ax_status ax_dataset_synth_linear(int64_t rows, int64_t features, uint64_t seed,
                                               ax_dataset **out);
/* Splits rows at random (from seed) into train and holdout, holdout getting
 * round(fraction * rows) rows. The source is unchanged. */
AX_NODISCARD ax_status ax_dataset_split(const ax_dataset *source, double fraction, uint64_t seed,
                                        ax_dataset **train, ax_dataset **holdout);
/* ax_dataset_split for MPI ranks, without the whole set: rank `rank` of
 * `size` holds rows [r*n/size, (r+1)*n/size) of each part of n rows (the
 * trainer's shards). ax_dataset_split_span gives the rows [first, first +
 * count) of a set of `rows` rows that hold both of the rank's shards (about
 * rows/size: the parts keep the set's order); ax_dataset_split_shards cuts
 * the two shards from those rows (span = rows [first, first + span's rows)
 * of the set, e.g. from an ax_dataset_load_*_rows loader), the same rows
 * ax_dataset_split of the whole set and sharding would give. */
AX_NODISCARD ax_status ax_dataset_split_span(int64_t rows, double fraction, uint64_t seed, int rank,
                                             int size, int64_t *first, int64_t *count);
AX_NODISCARD ax_status ax_dataset_split_shards(const ax_dataset *span, int64_t first, int64_t rows,
                                               double fraction, uint64_t seed, int rank, int size,
                                               ax_dataset **train, ax_dataset **holdout);
/* Fails with AX_STATUS_BAD_DATA naming the row and column of the first NaN
 * or Inf feature or target. */
AX_NODISCARD ax_status ax_dataset_check_finite(const ax_dataset *dataset);

/* ----------------------------------------------------------------- devices */
/* Where a network or a statistic computes: a backend's name and a device
 * number within it. "cpu" is the CPU (index 0); every other backend is a
 * plugin, libaxon_<name>.so, found in the plugin folders and loaded the
 * first time one of its devices is used (docs/design.md), so that
 * {"<name>", N} is device N of that plugin. A zeroed ax_device is the CPU. */
#define AX_DEVICE_NAME_CAPACITY 16

typedef struct ax_device {
    char backend[AX_DEVICE_NAME_CAPACITY]; /* "cpu" or a plugin's name; "" is the CPU too */
    int index;                             /* the backend's device number, from 0 */
} ax_device;

/* The CPU. */
ax_device ax_device_cpu(void);
/* True when device is the CPU ("cpu" or ""). */
bool ax_device_is_cpu(ax_device device);
/* Parses "cpu", "NAME" (device 0 of backend NAME) or "NAME:N" (N from 0
 * to 1023; NAME letters, digits and '_') into out; fails with
 * AX_STATUS_BAD_ARGUMENT naming the text otherwise. Whether the backend and
 * the device exist is checked where the device is used. */
AX_NODISCARD ax_status ax_device_parse(const char *text, ax_device *out);
/* Writes "cpu" or "NAME:N" into text. */
void ax_device_format(ax_device device, char *text, size_t capacity);
/* Devices of a backend this process can use: 1 for "cpu"; 0 when the
 * backend is not built, its plugin cannot be loaded or it finds none. */
int ax_device_count(const char *backend);
/* One line describing a device into text (its plugin's words: name,
 * memory, peak). AX_STATUS_UNSUPPORTED without the backend or the device. */
AX_NODISCARD ax_status ax_device_info(ax_device device, char *text, size_t capacity);

/* The backends of this process (ggml's backend registry): "cpu" first,
 * then each plugin found in the plugin folders (libaxon_<name>.so beside
 * the program or libaxon.so, in the build folder and in the install
 * folder), in the order of their names. Finding them opens no plugin. */
int ax_backend_count(void);
/* Backend `index`'s name ("cpu", or a plugin's), static; NULL out of range. */
const char *ax_backend_name(int index);
/* The runtime a backend was built against, one line, e.g. the GPU
 * toolkit's name and version (static; "" where the plugin says none);
 * loads the plugin. NULL when the backend cannot be loaded
 * (ax_error_message says why). */
const char *ax_backend_runtime(const char *backend);

/* Whether `name` is a backend of axon: "cpu", a backend of its sources
 * (built here or not: its devices are then refused where used, saying
 * how to build it) or a plugin found. */
bool ax_backend_known(const char *name);
/* The backends of axon's sources but "cpu", built here or not, separated
 * by spaces (static): for messages listing what a device may name. */
const char *ax_backend_source_list(void);

/* What a device is. */
typedef enum ax_device_kind {
    AX_DEVICE_KIND_CPU,         /* the host's processors */
    AX_DEVICE_KIND_GPU,         /* a graphics processor */
    AX_DEVICE_KIND_ACCELERATOR, /* anything else a plugin drives (an OpenCL CPU device, say) */
} ax_device_kind;

/* What a device can do beyond the operations every backend has
 * (ax_device_properties.capabilities, bits). */
enum {
    AX_DEVICE_CAPABILITY_F64 = 1 << 0,         /* float64 networks (AX_PRECISION_F64) */
    AX_DEVICE_CAPABILITY_BF16 = 1 << 1,        /* bf16 GEMM operands (AX_PRECISION_BF16) */
    AX_DEVICE_CAPABILITY_IMAGES = 1 << 2,      /* convolution and pooling layers */
    AX_DEVICE_CAPABILITY_DEVICE_DATA = 1 << 3, /* data sets held in device memory */
    AX_DEVICE_CAPABILITY_DEVICE_LOSS = 1 << 4, /* losses summed on the device */
    AX_DEVICE_CAPABILITY_STATS = 1 << 5,       /* ax_stats_entropy_mi_on, ax_stats_tensor_mean_on */
};

/* Structured facts about a device (ggml's device properties); 0 or "" for
 * what its backend does not say. */
typedef struct ax_device_properties {
    ax_device device;         /* which */
    ax_device_kind kind;
    char name[128];           /* the device's own name, e.g. the CPU's or GPU's model */
    char description[512];    /* one line, as ax_device_info writes it */
    int64_t memory_bytes;     /* memory the device computes in (the CPU: the host's RAM) */
    int compute_units;        /* multiprocessors, OpenCL compute units, or CPU cores */
    double clock_ghz;         /* the compute units' clock */
    double peak_f32_gflops;   /* float32 peak by the device's datasheet rules (no tensor cores) */
    double peak_f64_gflops;   /* float64 peak likewise; 0 without float64 */
    unsigned capabilities;    /* AX_DEVICE_CAPABILITY_* */
} ax_device_properties;

/* The properties of a device into *out (zeroed first). The CPU's peak is
 * left 0 here: measuring it takes a second (ax_machine_peak).
 * AX_STATUS_UNSUPPORTED without the backend or the device. */
AX_NODISCARD ax_status ax_device_properties_get(ax_device device, ax_device_properties *out);

/* -------------------------------------------------------------- data specs */

/* A data spec is one string naming data, as `axon --data` takes it:
 *   NAME           a data set folder under /usr/share/datasets (where Debian's
 *                  dataset-fashion-mnist puts fashion-mnist; the environment
 *                  variable AXON_DATASETS replaces that folder)
 *   DIR            a folder of MNIST-format IDX files: train-* as the training
 *                  part, t10k-* as the test part (gzipped or not)
 *   FILE.csv       one row per line (options.csv)
 *   FILE.npy       NumPy features; labels from options.labels, else column 0
 *   batches:DIR    the output of ax_prep_run (pixels / 255; scale is not applied);
 *                  with options.stream, read from disk as it is used (below)
 *   synth:linear   TMVA's regression benchmark: synth_rows x synth_features from the
 *                  seed; its test part is the synth_rows/5 rows that follow in
 *                  the same stream (the same w)
 * ax_dataset_open reads it, scales the features, and fails for NaN or Inf
 * (AX_STATUS_BAD_DATA naming row and column) and for a set of no rows. A spec
 * naming no kind of data (an unknown extension, synth:NAME other than linear,
 * labels given with data that is not .npy) fails with AX_STATUS_BAD_ARGUMENT
 * before anything is read; a missing file or data set with AX_STATUS_BAD_FILE
 * (a bare name not found says how to install or give one); damaged data as
 * its loader says. Messages name the spec ("SPEC: ..."), or the file at
 * fault, with the loaders' words. */

typedef enum ax_data_part {
    AX_DATA_PART_TRAIN = 0, /* an IDX folder's train-* files; synth:linear's synth_rows */
    AX_DATA_PART_TEST,      /* an IDX folder's t10k-* files; synth:linear's test rows */
} ax_data_part;

typedef struct ax_data_options {
    size_t size;             /* sizeof (ax_data_options), set by ax_data_options_defaults(): lets
                                the struct grow without breaking programs built against an
                                older header */
    ax_data_part part;       /* which part of an IDX folder or synth:linear (train) */
    ax_csv_options csv;      /* FILE.csv's columns, header and delimiter (its scale is replaced
                                by scale) */
    double scale;            /* features are multiplied by this, batches:DIR's excepted (1) */
    const char *labels;      /* FILE.npy: a labels or targets .npy file, or NULL (column 0) */
    int64_t synth_rows;      /* synth:linear: training rows (500000) */
    int64_t synth_features;  /* synth:linear: features (20) */
    uint64_t seed;           /* synth:linear draws from this (1) */
    const char *name;        /* messages name the spec after this, e.g. "--data" gives
                                "--data SPEC: ..."; NULL gives "SPEC: ..." */
    const char *labels_name; /* the same for the labels file, e.g. "--labels" */
    /* batches:DIR streamed (docs/cli.md, "Streamed batches"): */
    bool stream;             /* read the batch files as training and evaluation use them, by a
                                prefetch thread, at most two files in memory (as uint8): for
                                ax_train with mini-batches in one process and ax_net_evaluate
                                (false: the set is loaded whole as float32) */
    int64_t crop;            /* streamed: rows are crop x crop pieces of the S x S images, random
                                in training, the centre in evaluation (0: whole images) */
    bool mirror;             /* streamed: training rows mirrored left-right at random (false) */
    const char *mean;        /* streamed: a float32 (S, S, C) .npy such as prep's mean.npy,
                                subtracted before the scaling by 1/255 (NULL: none) */
    int views;               /* streamed, ax_net_evaluate: 1 (default) the centre crop; 10
                                cuda-convnet2's multiview test: the four corner crops and the
                                centre one, each also mirrored, their softmax outputs averaged
                                before the loss and the predicted class (a softmax
                                cross-entropy network only) */
    double lighting;         /* streamed, training: AlexNet's lighting noise, sigma: each
                                training image gets sum_i a_i stdev_i v_i added to every (r, g, b)
                                before the mean is subtracted, a_i ~ N(0, lighting) drawn from
                                (seed, epoch, row), stdev_i and v_i meta.json's color_pca
                                (docs/prep.md); RGB batches only (0: none) */
    bool unlabeled;          /* FILE.csv and FILE.npy without a labels file: every column is a
                                feature and the set has neither labels nor targets, for
                                prediction (false: the label column, or column 0, is read) */
} ax_data_options;

/* Fills the first size bytes of *options with the defaults noted above and
 * sets options->size = size. */
void ax_data_options_init(ax_data_options *options, size_t size);
/* The defaults, with size set. */
static inline ax_data_options ax_data_options_defaults(void)
{
    ax_data_options options;
    ax_data_options_init(&options, sizeof options);
    return options;
}
/* Checks what a spec names without reading data: the kind of data, that the
 * file, folder (with the part's IDX files) or labels file is there. options
 * may be NULL (the defaults) in every function of this section. */
AX_NODISCARD ax_status ax_dataset_check_spec(const char *spec, const ax_data_options *options);
/* The columns of a FILE.csv spec's first data line (label included; after the header
 * line with options->csv.header) or the values per row of a FILE.npy spec (its
 * dimensions after the first multiplied), reading only that line or the .npy header:
 * how a program tells a feature-only file from one with its label column before
 * loading it. Other kinds of data fail with AX_STATUS_UNSUPPORTED. */
AX_NODISCARD ax_status ax_dataset_count_columns(const char *spec, const ax_data_options *options,
                                               int64_t *columns);
/* Opens spec whole into *out (the caller frees it). */
AX_NODISCARD ax_status ax_dataset_open(const char *spec, const ax_data_options *options,
                                       ax_dataset **out);
/* Rank `rank` of `size`'s shard of spec: rows [floor(rank N/size),
 * floor((rank+1) N/size)) of its N rows, read through the row range loaders so
 * that other rows are never held (synth:linear's training rows are drawn up to
 * the shard's end); *total gets N. Classes are the whole set's. The copy cut
 * from a drawn set is named "(in memory)". */
AX_NODISCARD ax_status ax_dataset_open_shard(const char *spec, const ax_data_options *options,
                                             int rank, int size, ax_dataset **out, int64_t *total);
/* A validation split under MPI ranks: rank's shards of both parts of
 * ax_dataset_split(spec's training part, fraction, seed), read through the row
 * range loaders (only the span holding the two shards, ax_dataset_split_span);
 * totals gets the rows of the whole parts (train, holdout). */
AX_NODISCARD ax_status ax_dataset_open_split_shards(const char *spec,
                                                    const ax_data_options *options,
                                                    double fraction, uint64_t seed, int rank,
                                                    int size, ax_dataset **train,
                                                    ax_dataset **holdout, int64_t totals[2]);
/* The rows ax_dataset_open would give, as cheaply as the format allows
 * (headers; a CSV is streamed once; synth:linear is not drawn). */
AX_NODISCARD ax_status ax_dataset_count(const char *spec, const ax_data_options *options,
                                        int64_t *rows);
/* True when spec is an IDX folder (or data set name) that holds the t10k test files too. */
bool ax_dataset_spec_has_test_part(const char *spec);

/* ----------------------------------------------------------------- network */

#define AX_MAX_LAYERS 64 /* layers in one network, at most */

/* The kinds of layer; each is one file, src/core/layer_<kind>.c. */
typedef enum ax_layer_kind {
    AX_LAYER_DENSE = 0, /* fully connected: outputs (rows, units) = activation(x W^T + b),
                           x (rows, in), W (units, in), b (units) */
    AX_LAYER_CONV = 1,  /* 2-D convolution of an image input (height, width, channels):
                           outputs (rows, out_height, out_width, filters) =
                           activation(x * W + b), W (filters, channels, kernel_height,
                           kernel_width) as torch.nn.Conv2d's, b (filters); zero padding */
    AX_LAYER_MAX_POOL = 2, /* the largest value of each window, channel by channel */
    AX_LAYER_AVERAGE_POOL = 3, /* the mean of each window, channel by channel */
} ax_layer_kind;

/* One layer of a network: its kind and that kind's settings. */
typedef struct ax_layer_spec {
    ax_layer_kind kind;
    union {
        struct {
            int64_t units;            /* neurons in the layer */
            ax_activation activation;
        } dense;                      /* AX_LAYER_DENSE */
        struct {
            int64_t filters;          /* output channels */
            int64_t kernel_height, kernel_width;
            int64_t stride;           /* the same along rows and columns, >= 1 */
            int64_t padding;          /* zeros added on every side, >= 0 */
            ax_activation activation; /* not softmax */
        } conv;                       /* AX_LAYER_CONV */
        struct {
            int64_t window;           /* window x window values, >= 1 */
            int64_t stride;           /* >= 1; no padding (PyTorch's MaxPool2d / AvgPool2d
                                         with padding 0, ceil_mode off) */
        } pool;                       /* AX_LAYER_MAX_POOL, AX_LAYER_AVERAGE_POOL */
    };
} ax_layer_spec;

/* A dense layer of `units` neurons. */
ax_layer_spec ax_layer_dense(int64_t units, ax_activation activation);
/* A convolution of `filters` kernels of kernel_height x kernel_width. */
ax_layer_spec ax_layer_conv(int64_t filters, int64_t kernel_height, int64_t kernel_width,
                            int64_t stride, int64_t padding, ax_activation activation);
/* A pooling layer (kind AX_LAYER_MAX_POOL or AX_LAYER_AVERAGE_POOL). */
ax_layer_spec ax_layer_pool(ax_layer_kind kind, int64_t window, int64_t stride);

typedef struct ax_net_config {
    size_t size;              /* sizeof (ax_net_config), set by ax_net_defaults() (see
                                 "versioned structs" above) */
    int64_t input_width;      /* features per row */
    int layer_count;          /* 1 to AX_MAX_LAYERS layers, the last one being the output */
    const ax_layer_spec *layers; /* layer_count specs, the caller's: ax_net_create copies them */
    ax_layer_spec *parsed_layers; /* the array ax_layers_parse allocated (layers points to it),
                                     else NULL; ax_net_config_release frees it */
    ax_loss loss;
    ax_init init;
    double init_range;        /* r of AX_INIT_UNIFORM */
    ax_precision precision;
    uint64_t seed;            /* initial weights */
    ax_device device;         /* where it computes: the CPU (default) or {"NAME", N},
                                 device N of backend NAME (see "devices" above) */
    int64_t input_shape[3];   /* the input as an image (height, width, channels), pixels in
                                 (row, column, channel) order, whose product is input_width;
                                 zeros (default) when it is not one. Convolution and pooling
                                 layers need it (ax_dataset_image_shape gives the data's). */
} ax_net_config;

/* Fills the first size bytes of *config with the defaults (no layers,
 * AX_LOSS_AUTO, AX_INIT_AUTO, r = 0.2, float32, seed 1, the CPU) and sets
 * config->size = size. */
void ax_net_config_init(ax_net_config *config, size_t size);
/* The defaults, with size set: start every network config here. */
static inline ax_net_config ax_net_defaults(void)
{
    ax_net_config config;
    ax_net_config_init(&config, sizeof config);
    return config;
}
/* Parses "128:relu,128:relu,10:softmax" into config->layers and
 * config->layer_count, in an array config->parsed_layers owns (a previous
 * one is freed; on failure config is unchanged). An item is one layer in the
 * syntax of its kind:
 *   dense    "units[:activation]"; a width without an activation gets relu for
 *            a hidden layer and identity for the output
 *   conv     "conv:FILTERSxKHxKW[/sSTRIDE][/pPADDING][:activation]", e.g.
 *            "conv:32x5x5:relu" or "conv:64x3x3/s2/p1:tanh" (stride 1, padding 0
 *            and relu when left out; hidden layers only)
 *   maxpool  "maxpool:WINDOW[/sSTRIDE]", e.g. "maxpool:2" (stride = window when
 *            left out); "avgpool:WINDOW[/sSTRIDE]" the same for the mean
 * Convolution and pooling need an image input (config->input_shape); a dense
 * layer after them takes the feature map flattened in (row, column, channel)
 * order. A malformed item is refused naming the layer, where in the item the
 * text stops fitting, and the form expected. */
AX_NODISCARD ax_status ax_layers_parse(const char *text, ax_net_config *config);
/* Frees config->parsed_layers and empties the layout (NULL is fine; so is a
 * config without parsed layers, such as a copy of ax_net_config_get's). Of
 * several copies of one parsed config, release one. */
void ax_net_config_release(ax_net_config *config);
/* Writes the layout of config as text, e.g. "784-128:relu-10:softmax". */
void ax_layers_format(const ax_net_config *config, char *text, size_t capacity);
/* Values per row out of the last layer of config's layout (0 if the layout
 * is not valid). */
int64_t ax_net_config_output_width(const ax_net_config *config);

typedef struct ax_net ax_net;

/* A network with freshly initialised weights. A config->size the library
 * does not take is refused (AX_STATUS_BAD_ARGUMENT). */
AX_NODISCARD ax_status ax_net_create(const ax_net_config *config, ax_net **out);
void ax_net_free(ax_net *net);
/* The configuration the network was built from (with loss and init
 * resolved), with this library's size: a copy given back to the library
 * from a program built against an older header needs size = sizeof
 * (ax_net_config) first. */
const ax_net_config *ax_net_config_get(const ax_net *net);
/* Values per row out of layer `layer` (0-based; the last is the output
 * layer), 0 when there is no such layer. */
int64_t ax_net_layer_width(const ax_net *net, int layer);
/* The accessors below fail with AX_STATUS_BAD_ARGUMENT, naming the valid
 * range, for a layer the network does not have (out untouched). */
/* The kind of layer `layer` (0-based). */
AX_NODISCARD ax_status ax_net_layer_kind(const ax_net *net, int layer, ax_layer_kind *kind);
/* The activation layer `layer` applies last; a pooling layer applies none:
 * AX_ACT_IDENTITY (its windows' values pass on as they are). */
AX_NODISCARD ax_status ax_net_layer_activation(const ax_net *net, int layer,
                                               ax_activation *activation);
/* The shape of layer `layer`'s outputs per row, (height, width, channels):
 * a convolution's or pooling's feature map, or (1, 1, units) for a dense
 * layer; the product is ax_net_layer_width. */
AX_NODISCARD ax_status ax_net_layer_output_shape(const ax_net *net, int layer, int64_t shape[3]);
/* A short constant name for a kind of layer: "dense", "conv", "maxpool",
 * "avgpool" (the layout syntax's), "unknown" for a value no kind has. */
const char *ax_layer_kind_name(ax_layer_kind kind);
/* Number of parameters: weights and biases of all layers. */
int64_t ax_net_parameter_count(const ax_net *net);
/* Copies all parameters, layer by layer as [W (out, in) row-major, b (out)],
 * to or from a double array of ax_net_parameter_count() values. */
void ax_net_parameters_get(const ax_net *net, double *values);
void ax_net_parameters_set(ax_net *net, const double *values);

/* The model file format ax_net_save writes, as "format_version" in the
 * metadata. Files without it (axon before the field) are version 1. */
#define AX_MODEL_FORMAT_VERSION 2 /* 2: images (input_shape, conv and pooling layers);
                                     a network without them is still written as 1 */

/* Saves weights and architecture as safetensors ("layers.N.weight" (out, in),
 * "layers.N.bias" (out); a convolution's "layers.N.weight" is (filters,
 * channels, kernel_height, kernel_width), torch.nn.Conv2d's; pooling layers
 * have no tensors; architecture, "input_shape" ("28x28x1") for an image
 * input, and the format version in the metadata). Written to a temporary file and renamed, so a failed save
 * leaves no partial file. */
AX_NODISCARD ax_status ax_net_save(const ax_net *net, const char *path);
/* Loads a model written by ax_net_save (or by any tool writing the same
 * tensor names and metadata), of any format version up to
 * AX_MODEL_FORMAT_VERSION (none given: 1), validating every field; precision
 * selects the compute precision whatever the stored dtype. */
AX_NODISCARD ax_status ax_net_load(const char *path, ax_precision precision, ax_net **out);
/* Writes the network as an ONNX model (IR 7, operator set 13: Gemm, Conv,
 * MaxPool, AveragePool, Relu, Sigmoid, Tanh, Softmax, Transpose, Flatten)
 * that computes what ax_net_predict does. Input "input": (N, height,
 * width, channels) for an image input, pixels as axon holds them, else
 * (N, input_width); output "output": (N, output width). Weights are float32
 * initializers named as in the model file (a float64 network's rounded).
 * Replaced atomically like ax_net_save. AX_STATUS_IO_ERROR naming path when
 * it cannot be written; AX_STATUS_UNSUPPORTED for weights over 2 GiB (ONNX's
 * external data is not written). */
AX_NODISCARD ax_status ax_net_export_onnx(const ax_net *net, const char *path);

/* Forward pass in inference mode: inputs (rows, input_width), outputs
 * (rows, output width) as probabilities or values. Rows go through in
 * chunks of 4096 whatever the net did before, so a trained net and its
 * weights loaded into a new one give the same bits for the same call (a
 * row's bits may still depend on how many rows the call has: the BLAS's
 * kernels depend on the shape). */
AX_NODISCARD ax_status ax_net_predict(ax_net *net, const float *inputs, int64_t rows, float *outputs);

typedef struct ax_regularization {
    size_t size;          /* sizeof (ax_regularization), set by ax_regularization_defaults()
                             (see "versioned structs" above; the first version with it is
                             this one, l1 and dropout_layers included: a program built
                             against an older header must be rebuilt) */
    double l2;            /* loss += l2/2 * sum of squared weights (not biases) */
    double dropout;       /* probability of dropping a hidden unit, 0 = off */
    uint64_t dropout_key; /* selects the mask; the same key gives the same mask */
    int64_t dropout_first_row; /* the mask's row index of the first row passed (0 usually;
                                  a batch computed in parts gives each part its offset) */
    double l1;            /* loss += l1 * sum of |weights| (not biases); its gradient is the
                             subgradient l1 sign(w), 0 at w = 0 */
    /* Dropout per layer (NULL: `dropout` on every hidden layer's output):
     * dropout_layers[l] is the probability of dropping each input of
     * layer l, [0] the network's inputs, [l > 0] layer l - 1's outputs;
     * layer_count values, each in [0, 1). */
    const double *dropout_layers;
} ax_regularization;

/* Fills the first size bytes of *regularization with the defaults (no
 * penalty, no dropout, key 0, first row 0) and sets regularization->size =
 * size. */
void ax_regularization_init(ax_regularization *regularization, size_t size);
/* The defaults, with size set: start every ax_regularization here. */
static inline ax_regularization ax_regularization_defaults(void)
{
    ax_regularization regularization;
    ax_regularization_init(&regularization, sizeof regularization);
    return regularization;
}

/* Loss and gradient over rows [first, first + rows) of data, in float64
 * outside the network's own precision: gradient (nullable) gets
 * ax_net_parameter_count() values in the layout of ax_net_parameters_get.
 * regularization may be NULL (none); its size is checked as a config's
 * (AX_STATUS_BAD_ARGUMENT naming ax_regularization_defaults()). */
AX_NODISCARD ax_status ax_net_loss_gradient(ax_net *net, const ax_dataset *data, int64_t first,
                                            int64_t rows, const ax_regularization *regularization,
                                            double *loss, double *gradient);

typedef struct ax_evaluation {
    size_t size;            /* sizeof (ax_evaluation), set by the caller (ax_evaluation_empty()):
                               the library writes no more (see "versioned structs" above) */
    double loss;            /* mean data loss (no regularisation) */
    double accuracy;        /* fraction correct, classification only */
    int64_t rows;
    int64_t classes;        /* 0 for regression */
    int64_t *confusion;     /* (classes, classes): [true][predicted]; free with ax_evaluation_free */
} ax_evaluation;

/* Zeroes the first size bytes of *evaluation and sets evaluation->size = size
 * (a binding passes its own size); _empty() gives one with this header's
 * size: start every ax_evaluation there. */
void ax_evaluation_init(ax_evaluation *evaluation, size_t size);
static inline ax_evaluation ax_evaluation_empty(void)
{
    /* header-only, so a program that opens libaxon with dlopen can use it */
    ax_evaluation evaluation;
    memset(&evaluation, 0, sizeof evaluation);
    evaluation.size = sizeof evaluation;
    return evaluation;
}
/* Loss, accuracy and confusion matrix of the network on a dataset, into the
 * first out->size bytes of *out. */
AX_NODISCARD ax_status ax_net_evaluate(ax_net *net, const ax_dataset *data, ax_evaluation *out);
/* Frees the confusion matrix (where out->size holds it); accepts NULL. */
void ax_evaluation_free(ax_evaluation *evaluation);

/* Receives rows [first, first + count) of ax_net_predict_dataset's outputs,
 * (count, output width), valid during the call; false stops the pass. */
typedef bool (*ax_predict_rows_fn)(int64_t first, int64_t count, const float *outputs,
                                   void *user);
/* The network's outputs for every row of data, in order, in chunks handed
 * to on_rows: a loaded set as ax_net_predict gives them, a streamed one
 * (ax_data_options.stream) read as ax_net_evaluate reads it (the centre
 * crop). With ax_data_options.views = 10 a row is an image and its outputs
 * are the mean of its 10 views' softmax outputs (summed in double in view
 * order, then rounded to float), as ax_net_evaluate averages them (a
 * softmax cross-entropy network only). Fails AX_STATUS_INTERRUPTED when
 * on_rows returns false. */
AX_NODISCARD ax_status ax_net_predict_dataset(ax_net *net, const ax_dataset *data,
                                              ax_predict_rows_fn on_rows, void *user);

/* ---------------------------------------------------------------- training */

typedef struct ax_progress {
    int epoch;                 /* 1-based */
    int epochs;
    int64_t batch;             /* batches done in this epoch */
    int64_t batches;           /* batches per epoch */
    bool epoch_done;           /* true once per epoch, with the epoch's figures filled */
    double samples_per_second;
    double train_loss;         /* running mean over the epoch so far of the optimised
                                  objective: data loss plus the L2 term */
    double validation_loss;    /* NAN when no validation set */
    double validation_accuracy;
    double test_loss;          /* NAN when no test set */
    double test_accuracy;
    double epoch_seconds;      /* training time of the epoch (evaluation excluded) */
    double gflops;             /* achieved, by TMVA's FLOP count (ax_net_train_flops) */
    double eta_seconds;
    int threads;               /* threads in use (see ax_train_config.adapt_threads) */
    double fewer_threads_seconds; /* of epoch_seconds, the time on fewer threads than
                                     ax_threads() because that measured faster (its
                                     short probes of other counts aside) */
    /* Appended by issue 30 (the library fills this struct; a callback built
     * against an older header reads the fields it knows). */
    double learning_rate;      /* the epoch's scheduled rate (ax_train_config.lr_schedule;
                                  warmup aside: a step's rate is this times its factor);
                                  NAN for cg and lbfgs, which choose their steps */
    double data_wait_seconds;  /* of epoch_seconds, the time training waited for a streamed
                                  set's next batch file to be read (and, for JPEG batches,
                                  decoded) by its prefetch thread */
} ax_progress;

/* Called during training; returning false stops training (AX_STATUS_INTERRUPTED). */
typedef bool (*ax_progress_fn)(const ax_progress *progress, void *user);

/* Where a checkpointed run stood (see "checkpoints" below). */
typedef struct ax_train_state ax_train_state;
/* SGD's or Adam's state carried between ax_train calls (see "optimizer
 * state" below). */
typedef struct ax_optimizer_state ax_optimizer_state;

/* Processes training one network together (see "distributed" below). */
typedef struct ax_communicator ax_communicator;

/* Which weights ax_train leaves in the network (ax_train_config.keep_best). */
typedef enum ax_keep_best {
    AX_KEEP_BEST_NONE = 0,   /* the last epoch's */
    AX_KEEP_BEST_VALIDATION, /* those with the lowest validation loss */
    AX_KEEP_BEST_TEST        /* those with the lowest test loss */
} ax_keep_best;

typedef struct ax_train_config {
    size_t size;               /* sizeof (ax_train_config), set by ax_train_defaults() (see
                                  "versioned structs" above) */
    ax_optimizer_kind optimizer;
    double learning_rate;
    double momentum;           /* SGD */
    bool nesterov;             /* SGD */
    double beta1, beta2, epsilon; /* Adam */
    /* CG and L-BFGS: one epoch is one iteration (a line search over the full
     * batch); training stops early when the gradient's largest absolute
     * component falls below gtol (scipy's fmin_cg norm=Inf) or when the line
     * search finds no strong-Wolfe point. */
    double gtol;               /* default 1e-5, as fmin_cg */
    int lbfgs_memory;          /* L-BFGS correction pairs kept, default 10 */
    int line_search_max_evaluations; /* per line-search phase, default 100 (scipy's dcsrch) */
    int64_t batch_size;        /* 0 = full batch: one step per epoch over all rows */
    int epochs;
    double l2;
    double dropout;            /* on hidden layers */
    int early_stop;            /* stop when validation loss has not improved for this many
                                  epochs and restore the best weights; 0 = off */
    /* Keep the weights of the epoch (CG, L-BFGS: iteration) with the lowest
     * validation or test loss (as the galaxy classifier's Python original
     * keeps the weights of its lowest test cost):
     * training runs all its epochs, then those weights are restored and
     * summary.best_epoch names their epoch (final_test_accuracy is theirs;
     * final_train_loss stays the last epoch's). Needs the set it watches;
     * early stopping keeps the best validation weights already, so with
     * early_stop only AX_KEEP_BEST_NONE or _VALIDATION are allowed. */
    ax_keep_best keep_best;    /* default AX_KEEP_BEST_NONE */
    uint64_t seed;             /* shuffling and dropout */
    bool shuffle;              /* reshuffle every epoch (default true) */
    double progress_interval;  /* seconds between progress calls within an epoch */
    ax_progress_fn progress;   /* may be NULL */
    void *progress_user;
    /* Checkpoints (SGD and Adam; see "checkpoints" below). */
    int checkpoint_every;      /* write PREFIX.epoch-NNNNNN.safetensors every N epochs; 0 = off */
    const char *checkpoint_prefix; /* PREFIX (a path without the suffix); required by
                                      checkpoint_every; when set, an interrupted run also
                                      writes PREFIX.interrupted.safetensors */
    int keep_checkpoints;      /* newest epoch checkpoints kept, default 2; 0 = all */
    const char *checkpoint_note; /* text stored verbatim in checkpoints (the CLI keeps its
                                    own options there); NULL = none */
    const ax_train_state *resume; /* continue the run a checkpoint recorded; NULL = start */
    /* Data-parallel training over processes (see "distributed" below); NULL
     * or a communicator of size 1 = this process alone, unchanged. */
    const ax_communicator *communicator;
    bool check_replicas;       /* with a communicator: after each epoch, check that every
                                  rank holds the same weights (a debugging aid) */
    /* Default true: while it trains, the run uses fewer of its
     * ax_threads() threads while other processes hold the cores, as the
     * kernel reports them (Linux: its threads waiting for a core, the
     * CPUs' idle time; docs/notes/threads.md). Only where the results do
     * not depend on the thread count (the CPU in float32 and bf16, one
     * process alone); false keeps ax_threads() throughout. */
    bool adapt_threads;
    /* SGD's velocity or Adam's moments and step count, carried from one
     * ax_train call into the next on the same network, over the same data
     * or other data of the same width, as scikit-learn's partial_fit
     * carries its optimizer (see "optimizer state" below). NULL (the
     * default): every call starts its optimizer afresh. Borrowed: the
     * caller creates and frees it; ax_train starts from it when it holds a
     * state and leaves the run's final state in it. */
    ax_optimizer_state *optimizer_state;
    /* Adam: add epsilon to sqrt(v) before the bias correction, as
     * scikit-learn does (Kingma and Ba's section 2: lr_t = lr sqrt(1 - b2^t)
     * / (1 - b1^t), p -= lr_t m / (sqrt(v) + eps)), instead of after it as
     * torch.optim.Adam does (the default, false: p -= lr / (1 - b1^t) m /
     * (sqrt(v / (1 - b2^t)) + eps)). The two differ only where sqrt(v) is
     * within a few hundred epsilons of 0. */
    bool epsilon_before_correction;
    /* Default false: while it trains, subnormal floats (below 1.2e-38 in
     * float32, 2.2e-308 in float64) are flushed to zero, as results and as
     * operands (x86's FTZ and DAZ, on the calling thread and OpenMP's, each
     * given its own mode back at the end). They appear once training has
     * run a while and cost a microcode assist each, which slows every
     * later epoch (docs/notes/threads.md); flushed, the accuracy is the
     * same. true keeps IEEE's gradual underflow. */
    bool keep_subnormals;
    /* L1 penalty, per mean loss as l2 is: loss += l1 * sum of |weights|
     * (not biases), in every optimizer. |w| has no derivative at 0: the
     * gradient uses the subgradient l1 sign(w) with sign(0) = 0 (what
     * PyTorch's autograd gives for abs), so SGD and Adam move weights
     * through 0 rather than onto it, and CG and L-BFGS minimise the
     * non-smooth cost with it (their line searches then evaluate plainly,
     * without the first layer's cached products). Default 0. */
    double l1;
    /* AdamW (AX_OPTIMIZER_ADAMW) only: decoupled weight decay as
     * torch.optim.AdamW applies it: before each Adam step, every weight
     * (not the biases: torch's AdamW with the biases in a group of
     * weight_decay 0) is multiplied by 1 - learning_rate * weight_decay.
     * Default 0.01, torch's. */
    double weight_decay;
    /* Gradient clipping (SGD, Adam, AdamW; CG and L-BFGS refuse it: a line
     * search needs the true gradient), after the gradient of the whole
     * batch (penalties included) is complete and before the step.
     * clip_value first clamps every component to [-clip_value, clip_value]
     * (torch.nn.utils.clip_grad_value_); clip_norm then scales the whole
     * gradient by clip_norm / (norm + 1e-6) when that is below 1, norm
     * being the Euclidean norm of all parameters' gradient at once
     * (torch.nn.utils.clip_grad_norm_). 0 = off (the defaults). */
    double clip_norm;
    double clip_value;
    /* Dropout per layer, as TMVA's DropConfig (inputs first):
     * dropout_layers[l] drops each input of layer l with that probability,
     * [0] the network's inputs, [l > 0] layer l - 1's outputs, for
     * l < layer_count; each in [0, 1). All zero (the default): `dropout`
     * alone, on every hidden layer's output, as before. Set both and the
     * run is refused. */
    double dropout_layers[AX_MAX_LAYERS];
    /* Learning-rate schedule (issue 30; ax_lr_schedule above): sgd, adam and
     * adamw (cg and lbfgs choose their own steps). The epoch's rate is in
     * ax_progress.learning_rate. lr_gamma is StepLR's and ExponentialLR's
     * gamma and ReduceLROnPlateau's factor (in (0, 1]); lr_step_every
     * StepLR's step_size (>= 1); lr_min CosineAnnealingLR's eta_min (>= 0);
     * lr_patience the epochs without improvement ReduceLROnPlateau and
     * scikit-learn's adaptive wait (>= 0); lr_power scikit-learn's power_t;
     * lr_tol scikit-learn's tol (adaptive). With invscaling and adaptive,
     * SGD's velocity is rescaled by old / new rate at each change, so that it
     * holds steps as scikit-learn's does (its updates equal theirs); the
     * other schedules leave it as torch.optim.SGD does. */
    ax_lr_schedule lr_schedule;
    double lr_gamma;      /* default 0.1 */
    int lr_step_every;    /* default 1 */
    double lr_min;        /* default 0 */
    int lr_patience;      /* default 10 */
    double lr_power;      /* default 0.5 */
    double lr_tol;        /* default 1e-4 */
    /* Linear warmup over the first warmup_steps optimizer steps of the run:
     * step s (0-based) uses the epoch's rate times (s + 1) / warmup_steps,
     * as torch's LinearLR(start_factor = 1 / N, total_iters = N - 1) stepped
     * after every batch, chained with the schedule. 0 = none (the default). */
    int64_t warmup_steps;
} ax_train_config;

/* Fills the first size bytes of *config with the defaults (SGD, lr 0.1,
 * momentum 0.9, batch 128, 10 epochs, Adam betas 0.9/0.999, eps 1e-8, gtol
 * 1e-5, L-BFGS memory 10, 100 line-search evaluations, seed 1, shuffle on,
 * progress every 0.2 s, no checkpoints (keep_checkpoints 2), threads
 * adapting to load) and sets config->size = size. */
void ax_train_config_init(ax_train_config *config, size_t size);
/* The defaults, with size set: start every training config here. */
static inline ax_train_config ax_train_defaults(void)
{
    ax_train_config config;
    ax_train_config_init(&config, sizeof config);
    return config;
}
/* A schedule's short name ("constant", "step", "exp", "cosine", "plateau",
 * "invscaling", "adaptive"; "unknown" for a value no schedule has). */
const char *ax_lr_schedule_name(ax_lr_schedule schedule);
/* Sets config's lr_schedule and its settings from text, the CLI's
 * --lr-schedule: constant, step:EVERY:GAMMA, exp:GAMMA, cosine[:MIN],
 * plateau:PATIENCE:FACTOR, invscaling[:POWER], adaptive[:PATIENCE[:TOL]];
 * settings not named keep config's values. A malformed text or value is
 * refused (AX_STATUS_BAD_ARGUMENT, naming it and the forms), config
 * untouched. */
AX_NODISCARD ax_status ax_lr_schedule_parse(const char *text, ax_train_config *config);
/* Writes config's schedule as ax_lr_schedule_parse reads it (numbers
 * %.17g, exact), e.g. "step:7:0.5". */
void ax_lr_schedule_format(const ax_train_config *config, char *text, size_t capacity);
/* Training phases (issue 30; TMVA's training strategy): a run of several
 * phases is one ax_train call per phase on the same network, each with the
 * config of the one before but for what the phase names, the optimizer
 * state carried from one call to the next through
 * ax_train_config.optimizer_state while the phases use the same kind (and,
 * for SGD, momentum above 0 or not in both): a state of another kind is
 * replaced by an empty one. Each phase is then an ordinary run: its
 * schedule and warmup start at its first epoch, its early stopping
 * (early_stop, "patience") ends it and keeps its best weights, and a
 * checkpoint written in it resumes it exactly (with an empty state named,
 * to carry the state on to the next phase); the caller records the phase
 * index (the CLI in the checkpoint note).
 * Sets what text names in *config: KEY=VALUE items separated by commas, the
 * keys lr, momentum, nesterov (true/false/1/0), batch (rows; 0 or full: the
 * full batch), epochs, dropout, l1, l2, weight_decay, optimizer (a name),
 * lr_schedule (ax_lr_schedule_parse's text), warmup (steps), patience (or
 * early_stop: epochs without improvement of the validation loss that end
 * the phase; 0 = off), clip_norm, clip_value ('-' may stand for '_').
 * An unknown key, an item without '=' or a value out of range is refused
 * (AX_STATUS_BAD_ARGUMENT, naming the key), config untouched. */
AX_NODISCARD ax_status ax_train_phase_parse(const char *text, ax_train_config *config);

typedef struct ax_train_summary {
    size_t size;               /* sizeof (ax_train_summary), set by the caller
                                  (ax_train_summary_empty()): the library writes no more (see
                                  "versioned structs" above) */
    int epochs_run;
    int best_epoch;            /* epoch whose weights were kept (early stopping) or the last */
    double seconds;            /* training time, evaluation excluded */
    double gflop;              /* FLOPs done, by TMVA's count (ax_net_train_flops) */
    double final_train_loss;      /* last epoch's mean objective (L2 term included) */
    double final_test_accuracy;   /* NAN without a test set */
    int64_t evaluations;          /* loss evaluations (each with its gradient: one pass does both) */
    int64_t gradient_evaluations; /* gradient evaluations (as scipy's grad_calls) */
    /* Why training ended (static text), e.g. "maximum iterations reached",
     * "converged: gradient norm below gtol", "line search failed to find a
     * Wolfe point", "early stopping: no validation improvement". */
    const char *stop_reason;
    double communication_seconds; /* in the communicator's sums, waiting included (0 alone) */
    double setup_seconds; /* before the first epoch: checks, buffers, and the data sets' upload to
                             a device (finished), which `seconds` leaves out */
} ax_train_summary;

/* Zeroes the first size bytes of *summary and sets summary->size = size (a
 * binding passes its own size); _empty() gives one with this header's size:
 * start every ax_train_summary there. */
void ax_train_summary_init(ax_train_summary *summary, size_t size);
static inline ax_train_summary ax_train_summary_empty(void)
{
    /* header-only, so a program that opens libaxon with dlopen can use it */
    ax_train_summary summary;
    memset(&summary, 0, sizeof summary);
    summary.size = sizeof summary;
    return summary;
}

/* Trains net on train. validation (nullable) drives early stopping; test
 * (nullable) is evaluated after each epoch; summary gets the first
 * summary->size bytes of the run's figures, also on failure. Labels are
 * checked against the output width and features against the input width
 * before any work; a config->size or summary->size the library does not take
 * is refused (AX_STATUS_BAD_ARGUMENT).
 * A streamed train set (ax_data_options.stream) takes mini-batches in one
 * process (a full batch or several ranks: AX_STATUS_UNSUPPORTED); each epoch
 * reads its files in an order drawn from config->seed and the epoch, and a
 * file that fails stops training naming it (with a checkpoint prefix,
 * PREFIX.interrupted is written at the batches done). */
AX_NODISCARD ax_status ax_train(ax_net *net, const ax_dataset *train, const ax_dataset *validation,
                                const ax_dataset *test, const ax_train_config *config,
                                ax_train_summary *summary);

/* ------------------------------------------------------------- distributed */
/* Data-parallel training (docs/mpi.md). P processes ("ranks") each hold a
 * replica of the network and a contiguous shard of the training rows:
 * ax_train's `train` is this rank's shard, rows [lo, hi) of the global
 * set in rank order (rank 0 the first rows). Every rank draws the same
 * global row order from the same seed; for each global batch a rank
 * computes the gradient of the rows of the batch in its shard (possibly
 * none), weighted by their share of the batch, and the gradients and losses
 * are summed over the ranks, so that every rank takes the step one process
 * would take on the whole batch (up to rounding) and the replicas stay
 * identical. CG and L-BFGS distribute exactly: their full-batch cost and
 * gradient are sums of per-rank parts. validation and test are shards too:
 * each rank evaluates its rows and the sums give every rank the same
 * figures, so early stopping decides alike everywhere. The progress
 * callback is called on rank 0 only; its request to stop (or any rank's
 * communicator stop_requested) reaches the other ranks with the next sum,
 * and all stop after the same step. Checkpoints work as in one process:
 * rank 0 alone writes them (every rank learns whether it could), every rank
 * resumes from the same file, and the data fingerprint they hold is that of
 * the whole set, computed from the shards: a resume is refused when the
 * global data differ, and accepted with another number of ranks (the
 * trajectory is the same up to rounding). Dropout masks depend
 * on the sharding (each rank draws its own), so dropout runs match one
 * process in distribution only.
 *
 * Every rank must call ax_train with the same network, options and the
 * same kind of data (validation and test present on all ranks or on none).
 * A rank whose ax_train fails before another one does may leave the others
 * waiting in a sum: a program must then end the whole job (abort below),
 * as the axon command does. */
struct ax_communicator {
    int rank;                  /* this process, 0 .. size - 1 */
    int size;                  /* processes in the job */
    void *context;             /* the implementation's own */
    /* Sums count values (float or double, by precision) over all ranks in
     * place; every rank gets the same bits. Blocking; a collective call. */
    ax_status (*sum)(const ax_communicator *self, void *values, int64_t count,
                     ax_precision precision);
    /* Ends every process of the job with exit status code; does not return. */
    void (*abort)(const ax_communicator *self, int code);
    /* Optional (NULL = never): polled by ax_train on every rank before each
     * sum of a step; true on any rank stops all ranks after the same step,
     * as rank 0's progress callback returning false does (the axon command
     * answers whether this rank got SIGINT or SIGTERM). */
    bool (*stop_requested)(const ax_communicator *self);
    /* Optional, both or neither (NULL = every sum is blocking): a
     * non-blocking in-place sum, as sum gives, which sum_begin starts and
     * sum_wait completes, with every sum begun since the last wait. With
     * them, ax_train starts summing each layer's gradient as soon as the
     * backward pass has made it (last layer first) and waits before the
     * optimizer's step, overlapping communication with the rest of the
     * pass; the caller does not touch values in between. Ranks begin the
     * same sums in the same order (a collective call). Used for
     * mini-batches with the gradient in host memory (the CPU backend); full
     * batches (CG, L-BFGS) and device memory use sum. */
    ax_status (*sum_begin)(const ax_communicator *self, void *values, int64_t count,
                           ax_precision precision);
    ax_status (*sum_wait)(const ax_communicator *self);
};

/* The number of processes an MPI launcher (mpirun, mpiexec) started this
 * one among, from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE); 0 when
 * it was not started by one. Works in builds without MPI too, so that they
 * can refuse such a start. */
int ax_mpi_launched(void);
/* The MPI library this build uses, e.g. "Open MPI v4.1.4"; NULL in builds
 * without MPI. */
const char *ax_mpi_library(void);
/* Initialises MPI (thread level FUNNELED: only the calling thread uses it)
 * unless it is initialised already. AX_STATUS_UNSUPPORTED in builds
 * without MPI (AXON_MPI=OFF or no MPI found). */
AX_NODISCARD ax_status ax_mpi_init(int *argc, char ***argv);
/* Finalises MPI if ax_mpi_init initialised it; otherwise does nothing. */
void ax_mpi_finalize(void);
/* *out = the communicator of all processes (MPI_COMM_WORLD), summing with
 * MPI_Allreduce and aborting with MPI_Abort. MPI must be initialised;
 * AX_STATUS_UNSUPPORTED without MPI. */
AX_NODISCARD ax_status ax_communicator_mpi_world(ax_communicator *out);

/* Threads of this process as the ranks (axon train --replicas; docs/mpi.md
 * "Replicas in one process"): a team of `size` communicators, one per
 * rank, each to be used by one thread calling ax_train. Sums are
 * deterministic: each rank adds a slice of all the ranks' buffers in rank
 * order, so every rank and every run gets the same bits (one process of P
 * replicas and mpirun -np P can differ in the last bits). Any build, with
 * or without MPI. abort ends this process (_exit). */
typedef struct ax_thread_ranks ax_thread_ranks;
AX_NODISCARD ax_status ax_thread_ranks_create(int size, ax_thread_ranks **out);
/* Rank rank's communicator (NULL out of range); the caller may set its
 * stop_requested before training starts. */
ax_communicator *ax_thread_ranks_communicator(ax_thread_ranks *team, int rank);
/* Rank rank gives up (it failed on its own): every sum waiting now or
 * begun later, on any rank, fails (AX_STATUS_IO_ERROR, naming the rank)
 * instead of waiting forever. The first rank to leave is remembered. */
void ax_thread_ranks_leave(ax_thread_ranks *team, int rank);
/* Whether a rank has left; *rank (nullable) = the first one to. */
bool ax_thread_ranks_left(const ax_thread_ranks *team, int *rank);
/* After every thread using the team has ended. */
void ax_thread_ranks_free(ax_thread_ranks *team);

/* ------------------------------------------------------------- checkpoints */
/* A checkpoint is a safetensors file holding everything a run needs to go on
 * as if never stopped: the weights ("parameters", in the network's
 * precision), the optimizer's state ("optimizer.state0": SGD's velocity or
 * Adam's first moment, "optimizer.state1": Adam's second moment; CG's and
 * L-BFGS's own arrays "optimizer.g", "optimizer.d", "optimizer.s", ...,
 * and the line-search cache's X W^T, "line_cache.base"), the best weights
 * so far under early stopping or keep_best ("best_parameters"), and, for a
 * run interrupted inside an epoch, that epoch's row order ("order"); the
 * metadata holds JSON objects "net" and "train" (the exact options), "state"
 * (epochs and batches done, step counters, the random generator's state,
 * losses, early-stopping figures, CG's and L-BFGS's scalars, the shape and a
 * fingerprint of the training and validation data) and the caller's "note".
 *
 * With checkpoint_every = N, ax_train writes one after every N-th epoch
 * (atomically: temporary file, fsync, rename) and deletes all but the newest
 * keep_checkpoints. A run stopped by its progress callback writes
 * PREFIX.interrupted.safetensors at the batch it reached. A run that
 * diverges writes nothing and deletes nothing, so the last good checkpoint
 * stays. For CG and L-BFGS an epoch is one iteration: a checkpoint lies
 * between two line searches.
 *
 * Resuming: ax_checkpoint_load gives the network (with its weights), the
 * recorded options in *config, with config->resume pointing at *state; pass
 * them to ax_train with the same training and validation data (checked by
 * shape and fingerprint). A resumed run ends with weights bit-identical to
 * an uninterrupted one on the same backend and thread count. Of config the
 * caller may change epochs (to extend the run), the checkpoint fields and
 * the progress callback; ax_train refuses other changes. */

/* Reads and validates a checkpoint; failures name the file and the field.
 * *net and *state are owned by the caller; state must outlive the ax_train
 * call that resumes from it. *config is config_size bytes, the caller's
 * sizeof (ax_train_config) (one the library does not take is refused). */
AX_NODISCARD ax_status ax_checkpoint_load_sized(const char *path, ax_net **net,
                                                ax_train_config *config, size_t config_size,
                                                ax_train_state **state);
/* ax_checkpoint_load_sized with the size of this header's ax_train_config:
 * the library writes no more of *config than the caller has. */
AX_NODISCARD static inline ax_status ax_checkpoint_load(const char *path, ax_net **net,
                                           ax_train_config *config, ax_train_state **state)
{
    return ax_checkpoint_load_sized(path, net, config, sizeof *config, state);
}
void ax_train_state_free(ax_train_state *state);
/* Epochs complete when the checkpoint was written. */
int ax_train_state_epochs_done(const ax_train_state *state);
/* The checkpoint_note the run was given ("" if none). */
const char *ax_train_state_note(const ax_train_state *state);

/* FLOPs of one forward + backward pass over `rows` rows, by the performance
 * model of the analysis of ROOT/TMVA's deep-learning backend (n_b rows, n_l
 * outputs of layer l):
 * sum over layers of 6 n_b n_l n_{l-1} + 4 n_l n_b - n_l (n_{l-1} + 1) - n_b n_{l-1}.
 * The model counts the first layer's input gradient, which axon (like
 * PyTorch) never computes; GFLOP/s figures use this count so that they
 * compare across systems, and the profiler counts what each operation does. */
double ax_net_train_flops(const ax_net *net, int64_t rows);

/* --------------------------------------------------------- optimizer state */
/* A checkpoint pins a run to its data (by fingerprint); an optimizer state
 * does not: it is what SGD (its velocity, with momentum) and Adam (its
 * first and second moments and its step count t, which sets the bias
 * correction) know between steps, so that training on in calls, on new
 * rows each time, takes the steps one longer run would take. Two ax_train
 * calls of one epoch each with a state carried give the weights one call
 * of two epochs gives, bit for bit, where the batches are the same (shuffle
 * off, no dropout). scikit-learn's partial_fit keeps its optimizer so.
 *
 * Create an empty one, name it in ax_train_config.optimizer_state, and
 * pass the same config (or one with other data) to the next ax_train. An
 * empty state starts the optimizer afresh; a state held must be of the
 * run's kind (sgd or adam), the network's parameter count and precision,
 * and hold the arrays the run's settings keep (SGD with momentum keeps one,
 * without none; Adam two): ax_train refuses any other (AX_STATUS_BAD_ARGUMENT,
 * naming what differs) before it changes anything. CG and L-BFGS refuse
 * a state (AX_STATUS_UNSUPPORTED): their directions and correction pairs
 * belong to one full batch. At its end ax_train leaves the run's final
 * state in it whenever training took steps: after all epochs, after early
 * stopping, and after an interruption, a divergence or a device failure,
 * so that the state goes with the weights the network holds (with early
 * stopping or keep_best, the network holds the best epoch's weights and the
 * state is the last step's, as scikit-learn's after early stopping). A run
 * that fails before its first step leaves the state as it was (a run
 * resumed from a checkpoint leaves the checkpoint's state, even with no
 * epoch left to run). Learning
 * rate, momentum and betas are the config's of each call, not the state's.
 *
 * The arrays are in the parameter arena's layout (ax_net_parameters_get's
 * order) as doubles, which hold float32 and float64 values exactly, so a
 * state copied out and assigned back (a Python pickle) is the same bits.
 * A state is used by one ax_train at a time; ranks of a distributed run
 * each have their own. */

/* An empty state (*state owned by the caller: ax_optimizer_state_free). */
AX_NODISCARD ax_status ax_optimizer_state_create(ax_optimizer_state **state);
void ax_optimizer_state_free(ax_optimizer_state *state);
/* Whether it holds a state; if so (each pointer nullable) the kind that left
 * it, the network's precision and parameter count, how many arrays it holds
 * (SGD: 0 without momentum, 1 with: the velocity v of p -= lr v, or
 * p -= lr (g + momentum v) with Nesterov; Adam: 2, the moments m and v) and
 * the optimizer's step count (Adam's t). */
bool ax_optimizer_state_describe(const ax_optimizer_state *state, ax_optimizer_kind *kind,
                                 ax_precision *precision, int64_t *parameters, int *arrays,
                                 int64_t *steps);
/* Copies array `index` (0 .. arrays - 1) into values (parameters doubles,
 * the caller's); AX_STATUS_BAD_ARGUMENT for an empty state or an index it
 * does not hold. */
AX_NODISCARD ax_status ax_optimizer_state_copy_array(const ax_optimizer_state *state, int index,
                                                     double *values);
/* Makes *state hold what ax_optimizer_state_describe describes, with
 * values[i] (parameters doubles each, copied) its arrays: to put back a
 * state copied out. Checked: kind sgd or adam, a known precision,
 * parameters > 0, steps >= 0, arrays 0 or 1 for SGD and 2 for Adam, every
 * value finite and Adam's second moments >= 0 (AX_STATUS_BAD_ARGUMENT
 * naming the value; the state is unchanged then). Whether it fits a run is
 * ax_train's check. */
AX_NODISCARD ax_status ax_optimizer_state_assign(ax_optimizer_state *state, ax_optimizer_kind kind,
                                                 ax_precision precision, int64_t parameters,
                                                 int arrays, int64_t steps,
                                                 const double *const *values);

/* ---------------------------------------------------------- machine peak */

typedef struct ax_peak {
    int vector_bits;            /* 512 (AVX-512) or 256 (AVX2) */
    int fma_units;              /* vector FMA pipes per core, as measured */
    double clock_ghz;           /* as measured under load */
    int cores;                  /* threads in use */
    double f32_gflops;          /* theoretical: lanes x 2 x fma_units x clock x cores */
    double f64_gflops;
    double measured_f32_gflops; /* what the FMA loop reached on all cores */
    const char *method;         /* how it was found, for the user */
} ax_peak;

/* Measures this machine's float32/float64 peak (about 0.3 s). */
AX_NODISCARD ax_status ax_machine_peak(ax_peak *out);
/* The peak of AX_PRECISION_BF16's GEMMs beside a measured peak (a function
 * rather than a field, so that ax_peak keeps its size): where VDPBF16PS runs
 * them (ax_bf16_native), f32_gflops times its measured speed ratio (twice
 * where it issues as often as an FMA); where they are emulated, f32_gflops. */
double ax_peak_bf16_gflops(const ax_peak *peak);
/* Raises peak's FMA pipes (and its float32 and float64 peaks) to the
 * fewest that could have run f32_gflops, a rate this machine was seen to
 * reach (an operation of a run, in float32 terms), when it is more than
 * 10 % above the peak; true when it did. A virtual machine's cores drift
 * between a fast state and one at half the FMA rate for seconds at a time,
 * and a peak measured in the slow one reads one pipe for two: the reports
 * then set every rate against half the machine (up to 137 % "of peak").
 * False, peak unchanged, for a zeroed peak or a rate past 64 pipes a core. */
bool ax_peak_at_least(ax_peak *peak, double f32_gflops);

/* The GEMM rate (GFLOP/s) at the network's own training shapes for a batch,
 * with the BLAS in use: the ceiling a training run can approach. */
AX_NODISCARD ax_status ax_net_gemm_rate(ax_net *net, int64_t batch, double *gflops);
/* The rate (GFLOP/s, TMVA's counts) of the network's convolution layers
 * for a batch, each pass timed through the layer's own code as training
 * runs it (im2col, GEMMs, col2im): *gflops over the three passes together
 * and, when passes is not NULL, passes[0] forward, passes[1] weight
 * gradient, passes[2] input gradient (0 when only a first layer, whose
 * input gradient training never needs, is a convolution). It overwrites
 * the gradients and the activations: measure before or after training,
 * not between a step's passes. AX_STATUS_BAD_ARGUMENT for a batch below 1
 * or a network without convolutions. */
AX_NODISCARD ax_status ax_net_conv_rate(ax_net *net, int64_t batch, double *gflops, double passes[3]);

/* --------------------------------------------------------------- profiling */

/* One operation's timings: e.g. "layer 2 forward GEMM". */
typedef struct ax_profile_entry {
    char name[48];
    int64_t count;          /* calls */
    double total_seconds;
    double mean_seconds;
    double stddev_seconds;  /* over calls */
    double share;           /* of the total over all entries, 0..1 */
    double gflop;           /* FLOPs it performed, by TMVA's per-operation counts */
    bool is_gemm;           /* a matrix product (for the GEMM share) */
} ax_profile_entry;

/* Turns per-operation timing on or off for the network's passes and its
 * training (off by default; when off it costs one branch per operation). */
void ax_net_profile_enable(ax_net *net, bool enabled);
/* Forgets the timings gathered so far. */
void ax_net_profile_reset(ax_net *net);
/* Copies up to capacity entries with at least one call, longest total
 * first, and returns how many there are in all. */
int ax_net_profile_get(const ax_net *net, ax_profile_entry *entries, int capacity);
/* Where the last ax_train on net kept its data sets, and why (static until
 * the next ax_train; "" before one): "data sets on the device: 220 MB",
 * uploaded once and gathered there batch by batch, or "data sets in host
 * memory: ..." (the CPU, a device backend without the entries, sets that
 * do not fit the device, AXON_DEVICE_DATA=off), gathered on the host each
 * batch. Owned by net. */
const char *ax_net_data_placement(const ax_net *net);

/* ---------------------------------------------------- activation statistics */

/* Statistics of activations (docs/stats.md): the entropy and mutual
 * information of softmax outputs, and the third-order tensor mean. Inputs are
 * float32 row-major; sums are accumulated in double. Every function checks
 * its input first and fails with AX_STATUS_BAD_ARGUMENT for empty or
 * mismatched shapes and AX_STATUS_BAD_DATA (naming the array, row and
 * column) for NaN or Inf. In a build without them (CMake's AXON_STATS=OFF;
 * ax_build_info's stats is false) every one fails with AX_STATUS_UNSUPPORTED. */

/* Entropy and mutual information. P = softmax(x) and Q = softmax(y),
 * row by row (numerically stable: the row maximum is subtracted first, so
 * logits of 1e4 do not overflow):
 *   entropy            H  = -(1/rows) sum_r sum_i P_ri^2
 *   mutual_information MI =  (1/rows) sum_r sum_i sum_j (P_ri Q_rj)^2
 * The double sum factorises: sum_{i,j} P_i^2 Q_j^2 = (sum_i P_i^2)(sum_j Q_j^2),
 * so MI costs O(d) per row, not O(d^2), and both figures come from one pass
 * over x and y. x and y are (rows, d); either output may be NULL. */
AX_NODISCARD ax_status ax_stats_entropy_mi(const float *x, const float *y, int64_t rows, int64_t d,
                                           double *entropy, double *mutual_information);

/* Third-order tensor mean: out (d, d, d), row-major, gets
 *   A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k]
 * for fx, fy, fz of shape (n, d). Computed as one GEMM per block of rows,
 * K^T (d*d, rows) x fz (rows, d), where row r of K is the Khatri-Rao
 * (Kronecker) product fx[r,:] (x) fy[r,:]; blocks of rows are accumulated
 * into out, so no (n, d*d) buffer is ever made. out is float32 accumulated
 * in the BLAS's float GEMM (relative error ~1e-6 for n = 8192). */
AX_NODISCARD ax_status ax_stats_tensor_mean(const float *fx, const float *fy, const float *fz,
                                            int64_t n, int64_t d, float *out);

/* The two statistics on a chosen device, for inputs and outputs in host
 * memory: the CPU (the functions above) or a backend's device {"NAME", N}
 * (as ax_net_config.device and `--device NAME:N`) whose properties have
 * AX_DEVICE_CAPABILITY_STATS. On a device the inputs are copied over in
 * blocks of rows, computed there in float64 sums (entropy-mi) and float32
 * GEMMs (tensor-mean; no reduced-precision tensor modes) and the result
 * copied back; results are to agree with the CPU's within 1e-5 relative
 * (tests/test_cuda_stats.c; the benchmarks of the statistics ask for 1e-3
 * against float64). The first call on a device creates its context and
 * work buffers, which are kept for later calls until the process exits.
 * Besides the errors above: AX_STATUS_UNSUPPORTED when this build has no
 * such backend, device N, or statistics in its plugin,
 * AX_STATUS_OUT_OF_MEMORY when the device's buffers do not fit. timing may be NULL; otherwise it gets where the time went (for
 * benchmarks). */
typedef struct ax_stats_timing {
    double upload_seconds;   /* host to device copies (0 on the CPU) */
    double compute_seconds;  /* the kernels and GEMMs (on the CPU: the whole call) */
    double download_seconds; /* device to host copies (0 on the CPU) */
} ax_stats_timing;

AX_NODISCARD ax_status ax_stats_entropy_mi_on(ax_device device, const float *x, const float *y,
                                              int64_t rows, int64_t d, double *entropy,
                                              double *mutual_information,
                                              ax_stats_timing *timing);
AX_NODISCARD ax_status ax_stats_tensor_mean_on(ax_device device, const float *fx, const float *fy,
                                               const float *fz, int64_t n, int64_t d, float *out,
                                               ax_stats_timing *timing);

/* The activated outputs of layer `layer` (0-based: 0 is the first hidden
 * layer, layer_count - 1 the output layer) for every row of data, in
 * inference mode: out gets (rows, width of the layer). Hidden layers are
 * after their activation (ReLU, tanh, ...), so ax_stats_entropy_mi on them
 * applies its softmax to those activated values. Fails naming the valid
 * range when the layer does not exist, and when data does not fit the net. */
AX_NODISCARD ax_status ax_net_activations(ax_net *net, const ax_dataset *data, int layer,
                                          float *out);

/* float32 .npy arrays (any .npy dtype the data loaders accept is converted
 * to float32). Reads a 1-D (n) array as (n, 1) and a 2-D (rows, cols) array
 * as it is; *data is malloc'd, to be released with free(). */
AX_NODISCARD ax_status ax_npy_read_f32(const char *path, float **data, int64_t *rows,
                                       int64_t *cols);
/* Writes a little-endian float32 .npy array (format 1.0) of rank 1 to 8 to a
 * temporary file next to path and renames it over path, so a failed write
 * leaves no partial file. */
AX_NODISCARD ax_status ax_npy_write_f32(const char *path, const float *data, int rank,
                                        const int64_t *shape);

/* ------------------------------------------------------- image preparation */

/* The image-to-batch pipeline (cuda-convnet2's data preparation, parallelised
 * over threads and MPI ranks; docs/prep.md): a folder tree of JPEG/PNG
 * images, a .tar, or a tar of tars (ImageNet's training archive) becomes
 * shuffled batches of S x S images as .npy files any NumPy or PyTorch user
 * can read, plus meta.json and mean.npy.
 *
 * Label = the first level below the input an image sits in: the top-level
 * folder, the folder inside a tar, or the inner tar (its name without .tar).
 * Labels are numbered in byte order of their names, or in the order of a
 * label file (one name a line).
 *
 * Each image: decoded (JPEG with libjpeg-turbo's DCT scaling to the smallest
 * size not below S; PNG with libpng), its shorter side resized to S with an
 * area filter (bilinear when enlarging), centre-cropped to S x S, optionally
 * made grey. Images are put in batches by a seeded shuffle of the enumerated
 * list, so the output is the same whatever the number of threads. A file
 * that cannot be decoded is skipped (its batch is one image short) and named
 * in the summary's warnings. Batches are written to a temporary file and
 * renamed; a rerun into the same folder with the same input and settings
 * keeps the batches already there and makes only the missing ones.
 *
 * In a build without libarchive, libjpeg and libpng (CMake's AXON_PREP;
 * ax_build_info's prep is false) ax_prep_run fails with
 * AX_STATUS_UNSUPPORTED, after refusing options of a bad size as every
 * build does; the batches: loaders below are always built. */

/* How ax_prep_run stores the images of a batch (docs/prep.md, "Output files"). */
typedef enum ax_prep_format {
    AX_PREP_FORMAT_RAW = 0,  /* batch_NNNNN.npy: (k, S, S, C) uint8 pixels */
    AX_PREP_FORMAT_JPEG = 1, /* batch_NNNNN.jpegs: k JPEGs of S x S re-encoded at jpeg_quality
                                (a header, an offsets table, the JPEG bytes); the mean image is
                                of the decoded JPEGs, the pixels training sees */
    AX_PREP_FORMAT_CUDA_CONVNET2 = 2 /* input is a folder ax_prep_run wrote: it is converted
                                to cuda-convnet2's batch folder (data_batch_N pickles and
                                batches.meta; docs/prep.md, "cuda-convnet2's batch folders") */
} ax_prep_format;

typedef struct ax_prep_options {
    size_t size;              /* sizeof (ax_prep_options), set by ax_prep_defaults() (see
                                 "versioned structs" above) */
    const char *input;        /* folder, .tar, or tar of tars */
    const char *output;       /* folder for the batches (created if absent) */
    const char *labels_file;  /* NULL, or one label name a line: fixes their numbering */
    int64_t image_size;       /* S, default 256 */
    int64_t batch_size;       /* K images per batch, default 1024 */
    uint64_t seed;            /* shuffle, default 1 */
    bool grey;                /* 1 channel (luma, 0.299 R + 0.587 G + 0.114 B) instead of RGB */
    int threads;              /* <= 0: ax_threads() */
    double progress_interval; /* seconds between progress calls, default 0.25 */
    const char *ground_truth; /* NULL, or a validation set's labels as ILSVRC gives them: input
                                 holds its images flat, and line i of this file (a number from 1:
                                 the i-th name of labels_file, else the label named "i") labels
                                 the i-th image in byte order of the file names */
    ax_prep_format format;    /* AX_PREP_FORMAT_RAW (default) or AX_PREP_FORMAT_JPEG */
    int jpeg_quality;         /* 1 .. 100, default 90: libjpeg's quality for AX_PREP_FORMAT_JPEG */
    bool from_cuda_convnet2;  /* input is a cuda-convnet2 batch folder (data_batch_N pickles and
                                 batches.meta), converted to batches of format RAW or JPEG;
                                 image_size, batch_size, seed, grey, labels_file and
                                 ground_truth are then taken from the folder, not the options */
} ax_prep_options;

/* Fills the first size bytes of *options with the defaults listed above
 * (input and output NULL) and sets options->size = size. */
void ax_prep_options_init(ax_prep_options *options, size_t size);
/* The defaults, with size set. */
static inline ax_prep_options ax_prep_defaults(void)
{
    ax_prep_options options;
    ax_prep_options_init(&options, sizeof options);
    return options;
}

typedef struct ax_prep_progress {
    int64_t images_done;      /* decoded or skipped so far, reused batches included */
    int64_t images_total;     /* image files found in the input */
    int64_t batches_done;
    int64_t batches_total;
    int64_t images_skipped;   /* bad files so far */
    double images_per_second; /* images processed in this run / seconds of this run */
    double eta_seconds;       /* NAN until the first images are done */
    double seconds;
} ax_prep_progress;

/* Called from the thread that called ax_prep_run; returning false stops the
 * run after the batches already complete (AX_STATUS_INTERRUPTED). */
typedef bool (*ax_prep_progress_fn)(const ax_prep_progress *progress, void *user);

typedef struct ax_prep_summary {
    size_t size;              /* sizeof (ax_prep_summary), set by the caller
                                 (ax_prep_summary_empty()): the library writes no more (see
                                 "versioned structs" above) */
    int64_t images_found;     /* image files in the input (by name: .jpg .jpeg .png) */
    int64_t images_written;
    int64_t images_skipped;   /* corrupt, truncated (a tar member past its tar's end included),
                                 not really an image, or unlabelled */
    int64_t files_ignored;    /* members that are neither images nor tars (README, ...) */
    int64_t batches_written;  /* by this run */
    int64_t batches_reused;   /* complete batches a previous run left */
    int64_t labels;           /* distinct labels */
    double seconds;           /* wall time, enumeration included */
    double seconds_enumerate; /* wall time listing the input */
    /* Thread-seconds spent per stage, summed over threads (where the time goes). */
    double seconds_read, seconds_decode, seconds_resize, seconds_write;
    int64_t warning_count;    /* all warnings */
    int64_t warnings_kept;    /* the first ones, in warnings[] */
    char **warnings;          /* "file: why", owned; free with ax_prep_summary_free */
    int64_t links_skipped;    /* symbolic links not followed and folders reached a second time,
                                 each named in a warning: a link to a place inside the input
                                 (listed in its own place, under its own label) or to a folder
                                 holding the input (a loop); links out of the input are followed,
                                 labelled by where the link sits, each folder listed once */
} ax_prep_summary;

/* Zeroes the first size bytes of *summary and sets summary->size = size (a
 * binding passes its own size); _empty() gives one with this header's size:
 * start every ax_prep_summary there. */
void ax_prep_summary_init(ax_prep_summary *summary, size_t size);
static inline ax_prep_summary ax_prep_summary_empty(void)
{
    /* header-only, so a program that opens libaxon with dlopen can use it */
    ax_prep_summary summary;
    memset(&summary, 0, sizeof summary);
    summary.size = sizeof summary;
    return summary;
}

/* Runs the pipeline. summary (nullable) gets its first summary->size bytes
 * filled, also on failure, as far as the run went; free it with
 * ax_prep_summary_free. Fails on unreadable
 * input, a full disk or any failed write (AX_STATUS_IO_ERROR naming the
 * file), an output folder holding a different run (AX_STATUS_BAD_ARGUMENT),
 * or no usable image at all (AX_STATUS_BAD_DATA). */
AX_NODISCARD ax_status ax_prep_run(const ax_prep_options *options, ax_prep_progress_fn progress,
                                   void *user, ax_prep_summary *summary);
/* Frees the warnings of a summary; accepts NULL. */
void ax_prep_summary_free(ax_prep_summary *summary);

/* The output of ax_prep_run as a dataset: every batch listed in DIR/meta.json,
 * features (rows, S*S*C) = pixels / 255 in (row, column, channel) order,
 * labels from the batches, classes = the number of label names. */
AX_NODISCARD ax_status ax_dataset_load_batches(const char *dir, ax_dataset **out);
/* Rows [first, first + count) of ax_dataset_load_batches's set: opens only the batches that
 * hold rows of the range and reads only those rows (classes come from meta.json). */
AX_NODISCARD ax_status ax_dataset_load_batches_rows(const char *dir, int64_t first,
                                                    int64_t count, ax_dataset **out);
/* The images meta.json lists, summed over its batches. */
AX_NODISCARD ax_status ax_dataset_count_batches(const char *dir, int64_t *rows);

/* ------------------------------------------------------------ output files */

/* How every file axon writes is written (models, checkpoints, .npy arrays,
 * and through these calls the command line's predictions, profiles and
 * metrics; docs/cli.md, "Output files"). By what path names:
 *   nothing, a regular file  the bytes go to "PATH.tmp.PID" in the same
 *                            folder, synced, then renamed over PATH: a
 *                            reader sees the old file or the whole new one
 *   a symbolic link          followed to its final target, which is replaced
 *                            so (the temporary in the target's folder); the
 *                            link stays a link
 *   a character device, FIFO written in place (/dev/null, a terminal, a
 *                            pipe); never replaced, renamed over or removed
 *   a folder, block device, socket   refused
 * After a failure only the temporary this process made is removed. */
typedef struct ax_output_file ax_output_file;

/* Refuses, without writing anything, a path that ax_output_file_open would
 * refuse, or whose target's folder is missing or not writable (a device or
 * FIFO: not writable): for checking every output before hours of work. The
 * message names path and the folder. */
AX_NODISCARD ax_status ax_output_check(const char *path);
/* Opens path for writing as above; *out is the caller's, ended by
 * ax_output_file_commit or ax_output_file_abandon. */
AX_NODISCARD ax_status ax_output_file_open(const char *path, ax_output_file **out);
/* Appends size bytes. After a failure (the message names the file and the
 * error, e.g. "No space left on device") every later write fails quietly. */
AX_NODISCARD ax_status ax_output_file_write(ax_output_file *file, const void *data, size_t size);
/* True when the output is a device or FIFO written in place. */
bool ax_output_file_in_place(const ax_output_file *file);
/* The name written: path with its links followed (path itself in place). */
const char *ax_output_file_target(const ax_output_file *file);
/* Finishes and frees file: sync, close, rename over the target. A failure
 * (also one of an earlier write) leaves the target as it was. */
AX_NODISCARD ax_status ax_output_file_commit(ax_output_file *file);
/* Frees file, removing its temporary: the target is left as it was. NULL is
 * accepted. */
void ax_output_file_abandon(ax_output_file *file);

/* ------------------------------------------------------------ test support */

/* Fault injection for tests only (docs/testing.md): with the environment
 * variable AXON_TEST_FAULT="SIGNAL@POINT[:N]" (SIGNAL: KILL, TERM, INT or
 * STOP; POINT: step, saving, prep-batch), the first call of ax_test_fault(POINT, N)
 * raises SIGNAL on the process and returns true; every other call returns
 * false. ax_train calls it after each optimizer step with the run's step
 * count (the checkpoint's, across resumes); a program may add its own
 * points. Unset, a call costs a load and a branch. */
bool ax_test_fault(const char *point, long long count);
/* AX_STATUS_BAD_ARGUMENT, naming the variable, when AXON_TEST_FAULT is set
 * but malformed; ax_train checks it before training. */
AX_NODISCARD ax_status ax_test_fault_check(void);

#ifdef __cplusplus
}
#endif

#endif /* AXON_H */
