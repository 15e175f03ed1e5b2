/* bench.c: `axon bench NAME`: axon's reference workloads (docs/notes/benchmarks.md)
 * run through the public API, repeated, with a table of mean and standard
 * deviation and CSV rows in the columns the peer scripts in bench/peers
 * write, so that bench/compare.sh can put axon and its peers side by side.
 *   b1a  784-128-128-10 ReLU on Fashion-MNIST, SGD lr 0.1 momentum 0.9, batch 128, 5 epochs
 *   b1b  the same network, full-batch gradient descent lr 0.5, 40 epochs
 *   b2   20-(W tanh)x5-1 on 500,000 synthetic rows, MSE, SGD lr 0.001, batch B, 1 epoch
 *   galaxy-cg  1024-8-3 sigmoid on the galaxy CSVs, full-batch CG, 300 iterations
 *   lenet  conv 32 5x5, max-pool 2, conv 64 5x5, max-pool 2, 1024, 10 on Fashion-MNIST,
 *          SGD lr 0.01 momentum 0.9, batch 128, 2 epochs (issue 28), with the share of
 *          the machine's float32 peak
 *   entropy-mi, tensor-mean  the activation statistics (docs/stats.md): bench_stats.c */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"
#include "common.h"
#include "data_source.h"
#include "job.h"
#include "options.h"
#include "replicas.h"

static const cli_option bench_options[] = {
    THREADS_OPTION,
    PRECISION_OPTION,
    DEVICE_OPTION,
    {"repeat", CLI_INT, "N", "5", "runs of the workload; the table gives mean and sd over them"},
    {"quick", CLI_FLAG, NULL, NULL, "fewer epochs and rows, for a smoke test"},
    {"batch", CLI_INT, "B", "1024", "b2: batch size"},
    {"width", CLI_INT, "W", "256", "b2: width of the five hidden layers"},
    {"csv", CLI_STRING, "FILE", NULL, "append one row per epoch there (a new file gets the header line first)"},
    {"galaxy", CLI_STRING, "DIR", NULL,
     "galaxy-cg: folder with train.csv and test.csv (default: the data axon ships, unpacked\n"
     "next to the axon program in data/galaxy, or in ../share/axon/data/galaxy)"},
    {"replicas", CLI_INT, "P", "1",
     "train P data-parallel replicas in threads of this process, --threads/P\n"
     "threads each, as axon train --replicas does"},
};

static const char bench_usage[] =
    "axon bench b1a|b1b|b2|galaxy-cg|lenet|entropy-mi|tensor-mean [--repeat N] [--threads N] [--csv FILE] [options]\n"
    "(axon bench entropy-mi --help and axon bench tensor-mean --help list their own options)";
static const char bench_description[] =
    "Runs a reference workload and prints seconds per epoch, loss, accuracy and\n"
    "GFLOP/s (by TMVA's FLOP count, docs/notes/benchmarks.md) as mean and sd over repeats:\n"
    "  b1a        the Fashion-MNIST MLP 784-128-128-10, ReLU and softmax: SGD, lr 0.1,\n"
    "             momentum 0.9, batch 128, 5 epochs\n"
    "  b1b        the same network, full-batch gradient descent, lr 0.5, 40 epochs\n"
    "  b2         TMVA's synthetic regression benchmark: 20-(W tanh)x5-1 on 500,000\n"
    "             rows from N(0, 1), MSE, SGD, batch B, one epoch\n"
    "  galaxy-cg  the galaxy classifier 1024-8-3 sigmoid on the Galaxy Zoo images,\n"
    "             full-batch conjugate gradient, 300 iterations\n"
    "  lenet      the LeNet-style network conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,\n"
    "             maxpool:2,1024:relu,10:softmax on Fashion-MNIST: SGD, lr 0.01,\n"
    "             momentum 0.9, batch 128, 2 epochs; also the share of the machine's\n"
    "             peak (axon info --peak) the GFLOP/s make\n"
    "  entropy-mi, tensor-mean  the activation statistics of axon stats";

typedef struct workload {
    const char *name;
    int64_t input_width;
    int64_t width; /* of the hidden layers, for the CSV */
    int64_t input_shape[3]; /* an image input's (height, width, channels), else zeros */
    char layers[256];
    ax_train_config train;
    ax_dataset *data, *test;
} workload;

typedef struct epoch_log {
    FILE *csv;
    const workload *work;
    const char *precision;
    int repeat;
    int threads;     /* all of the run's (--replicas: the replicas' together) */
    double seconds_sum, seconds_sq, accuracy_sum, accuracy_sq, loss_sum, gflops_sum;
    int epochs;
} epoch_log;

static bool record_epoch(const ax_progress *progress, void *user)
{
    epoch_log *log = user;
    if (!progress->epoch_done)
        return true;
    const ax_train_config *t = &log->work->train;
    if (log->csv) {
        char accuracy[32] = "";
        if (!isnan(progress->test_accuracy))
            snprintf(accuracy, sizeof accuracy, "%.4f", 100.0 * progress->test_accuracy);
        int64_t batch = t->batch_size > 0 ? t->batch_size : ax_dataset_rows(log->work->data);
        fprintf(log->csv, "axon,%s,axon-%s,%s,%d,%lld,%lld,%d,%d,%.6f,%.6f,%s,%.3f,%.1f\n", log->work->name,
                ax_optimizer_name(t->optimizer), log->precision, log->threads, (long long)batch,
                (long long)log->work->width, log->repeat, progress->epoch,
                progress->epoch_seconds, progress->train_loss, accuracy, progress->gflops,
                progress->samples_per_second);
    }
    return true;
}

static ax_status load_galaxy(const char *folder, ax_dataset **train, ax_dataset **test)
{
    ax_csv_options options = ax_csv_defaults();
    options.scale = 1.0 / 255.0;
    char path[4096];
    snprintf(path, sizeof path, "%s/train.csv", folder);
    ax_status status = ax_dataset_load_csv(path, &options, train);
    if (status != AX_STATUS_OK)
        return status;
    snprintf(path, sizeof path, "%s/test.csv", folder);
    return ax_dataset_load_csv(path, &options, test);
}

/* The galaxy data the project ships (data/galaxy.tar.xz), which the build
 * unpacks next to this program (build/data/galaxy); an installed axon
 * finds it under PREFIX/share/axon. */
static bool find_shipped_galaxy(char *folder, size_t capacity)
{
    char program[4096];
    ssize_t length = readlink("/proc/self/exe", program, sizeof program - 1);
    if (length <= 0)
        return false;
    program[length] = '\0';
    char *slash = strrchr(program, '/');
    if (!slash)
        return false;
    *slash = '\0';
    static const char *const places[] = {"data/galaxy", "../share/axon/data/galaxy"};
    for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
        char train[4200];
        if (snprintf(folder, capacity, "%s/%s", program, places[i]) >= (int)capacity ||
            snprintf(train, sizeof train, "%s/train.csv", folder) >= (int)sizeof train)
            continue;
        if (access(train, R_OK) == 0)
            return true;
    }
    return false;
}

static int prepare(const char *name, const cli_args *args, bool quick, workload *work)
{
    memset(work, 0, sizeof *work);
    work->name = name;
    work->train = ax_train_defaults();
    work->train.adapt_threads = threads_left_to_axon(args);
    work->train.progress_interval = 1e9; /* only the per-epoch calls */
    ax_status status;
    if (strcmp(name, "b1a") == 0 || strcmp(name, "b1b") == 0) {
        const char *folder = "/usr/share/datasets/fashion-mnist";
        status = ax_dataset_load_idx_dir(folder, false, &work->data);
        if (status == AX_STATUS_OK)
            status = ax_dataset_load_idx_dir(folder, true, &work->test);
        if (status != AX_STATUS_OK)
            return report_failure(status, "install it with: apt-get install dataset-fashion-mnist");
        work->input_width = 784;
        work->width = 128;
        snprintf(work->layers, sizeof work->layers, "128:relu,128:relu,10:softmax");
        bool full = name[2] == 'b';
        work->train.batch_size = full ? 0 : 128;
        work->train.learning_rate = full ? 0.5 : 0.1;
        work->train.momentum = full ? 0.0 : 0.9;
        work->train.epochs = full ? (quick ? 5 : 40) : (quick ? 1 : 5);
    } else if (strcmp(name, "lenet") == 0) {
        const char *folder = "/usr/share/datasets/fashion-mnist";
        status = ax_dataset_load_idx_dir(folder, false, &work->data);
        if (status == AX_STATUS_OK)
            status = ax_dataset_load_idx_dir(folder, true, &work->test);
        if (status != AX_STATUS_OK)
            return report_failure(status, "install it with: apt-get install dataset-fashion-mnist");
        if (!ax_dataset_image_shape(work->data, work->input_shape)) {
            fprintf(stderr, "axon bench lenet: %s holds no images (IDX files of rank 3)\n", folder);
            return CLI_EXIT_RUNTIME;
        }
        work->input_width = 784;
        work->width = 1024;
        snprintf(work->layers, sizeof work->layers,
                 "conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax");
        work->train.batch_size = 128;
        work->train.learning_rate = 0.01;
        work->train.momentum = 0.9;
        work->train.epochs = quick ? 1 : 2;
    } else if (strcmp(name, "b2") == 0) {
        int width = 256, batch = 1024;
        if (!cli_get_int(args, "width", 1, 65536, &width) || !cli_get_int(args, "batch", 1, 1 << 24, &batch))
            return CLI_EXIT_USAGE;
        status = ax_dataset_synth_linear(quick ? 100000 : 500000, 20, 1, &work->data);
        if (status != AX_STATUS_OK)
            return report_failure(status, "synth:linear");
        work->input_width = 20;
        work->width = width;
        snprintf(work->layers, sizeof work->layers, "%d:tanh,%d:tanh,%d:tanh,%d:tanh,%d:tanh,1:identity",
                 width, width, width, width, width);
        work->train.batch_size = batch;
        work->train.learning_rate = 0.001;
        work->train.momentum = 0.0;
        work->train.epochs = 1;
    } else if (strcmp(name, "galaxy-cg") == 0) {
        const char *folder = NULL;
        static char shipped[4096];
        if (!cli_get_nonempty(args, "galaxy", &folder))
            return CLI_EXIT_USAGE;
        if (!folder && !find_shipped_galaxy(shipped, sizeof shipped)) {
            fprintf(stderr, "axon bench galaxy-cg: the galaxy data is not next to this program "
                            "(data/galaxy) nor under ../share/axon/data/galaxy; give --galaxy DIR, a "
                            "folder with train.csv and test.csv (the build unpacks the project's "
                            "data/galaxy.tar.xz into build/data/galaxy)\n");
            return CLI_EXIT_USAGE;
        }
        if (!folder)
            folder = shipped;
        status = load_galaxy(folder, &work->data, &work->test);
        if (status != AX_STATUS_OK)
            return report_failure(status, folder);
        work->input_width = 1024;
        work->width = 8;
        snprintf(work->layers, sizeof work->layers, "8:sigmoid,3:sigmoid");
        work->train.optimizer = AX_OPTIMIZER_CG;
        work->train.batch_size = 0;
        work->train.epochs = quick ? 50 : 300;
        /* The galaxy classifier's Python original: lambda / (2 m) * sum W^2, lambda = 1. */
        work->train.l2 = 1.0 / (double)ax_dataset_rows(work->data);
    } else {
        fprintf(stderr, "axon bench: unknown workload '%s' (b1a, b1b, b2, galaxy-cg, lenet, entropy-mi, tensor-mean)\n", name);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Rows [first, end) of data, copied: a replica's shard. */
static ax_status copy_rows(ax_dataset *data, int64_t first, int64_t end, ax_dataset **out)
{
    const int64_t features = ax_dataset_features(data), targets = ax_dataset_targets(data);
    ax_status status = ax_dataset_create(end - first, features, ax_dataset_classes(data), targets, out);
    if (status != AX_STATUS_OK)
        return status;
    memcpy(ax_dataset_features_data(*out), ax_dataset_features_data(data) + first * features,
           (size_t)((end - first) * features) * sizeof(float));
    if (ax_dataset_labels_data(data))
        memcpy(ax_dataset_labels_data(*out), ax_dataset_labels_data(data) + first,
               (size_t)(end - first) * sizeof(int32_t));
    else
        memcpy(ax_dataset_targets_data(*out), ax_dataset_targets_data(data) + first * targets,
               (size_t)((end - first) * targets) * sizeof(float));
    return AX_STATUS_OK;
}

/* One run of the workload, in this thread or (--replicas) as one rank. */
typedef struct bench_run {
    workload *work;
    const ax_net_config *config;
    ax_train_summary summary;  /* rank 0's */
} bench_run;

static ax_status train_once(ax_dataset *data, ax_dataset *test, const ax_net_config *config,
                            const ax_train_config *train, ax_train_summary *summary)
{
    ax_net *net = NULL;
    ax_status status = ax_net_create(config, &net);
    if (status == AX_STATUS_OK)
        status = ax_train(net, data, NULL, test, train, summary);
    ax_net_free(net);
    return status;
}

static int bench_replica(void *user, int rank)
{
    bench_run *run = user;
    const int size = cli_job_size();
    ax_dataset *shards[2] = {NULL, NULL};
    ax_dataset *sets[2] = {run->work->data, run->work->test};
    ax_status status = AX_STATUS_OK;
    for (int i = 0; i < 2 && status == AX_STATUS_OK; i++)
        if (sets[i]) {
            int64_t first = 0, end = 0;
            data_shard_bounds(ax_dataset_rows(sets[i]), rank, size, &first, &end);
            status = copy_rows(sets[i], first, end, &shards[i]);
        }
    ax_train_config train = run->work->train;
    train.communicator = cli_job_communicator();
    ax_train_summary summary = ax_train_summary_empty();
    if (status == AX_STATUS_OK)
        status = train_once(shards[0], shards[1], run->config, &train, &summary);
    ax_dataset_free(shards[0]);
    ax_dataset_free(shards[1]);
    if (status != AX_STATUS_OK)
        return report_failure(status, run->work->name);
    if (rank == 0)
        run->summary = summary;
    return CLI_EXIT_OK;
}

static void print_stat(const char *label, double sum, double sum_sq, int n, const char *unit)
{
    double mean = sum / n;
    double variance = n > 1 ? (sum_sq - n * mean * mean) / (n - 1) : 0.0;
    printf("  %-22s %10.4f  sd %8.4f %s\n", label, mean, sqrt(variance > 0 ? variance : 0.0), unit);
}

/* The mean rate set against the CPU's peak in the run's precision (measured
 * now, after the runs, so that it does not disturb them). */
static int print_peak_share(double gflops, ax_precision precision, const char *precision_text)
{
    ax_peak peak;
    ax_status status = ax_machine_peak(&peak);
    if (status != AX_STATUS_OK)
        return report_failure(status, "the machine's peak");
    const double top = precision == AX_PRECISION_F64    ? peak.f64_gflops
                       : precision == AX_PRECISION_BF16 ? ax_peak_bf16_gflops(&peak)
                                                        : peak.f32_gflops;
    printf("  %-22s %10.1f %% of the %s peak, %.0f GFLOP/s (axon info --peak)\n", "share of peak",
           100.0 * gflops / top, precision_text, top);
    return CLI_EXIT_OK;
}

int command_bench(int argc, char **argv)
{
    cli_args args;
    /* argv[0] is "bench", argv[1] the workload. */
    bool named = argc >= 2 && argv[1][0] != '-';
    if (named && bench_stats_handles(argv[1]))
        return command_bench_stats(argc, argv);
    int result = cli_parse("bench", bench_options, (int)(sizeof bench_options / sizeof *bench_options),
                           argc - named, argv + named, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help || !named) {
        cli_print_help(&args, bench_usage, bench_description, args.help ? stdout : stderr);
        return args.help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    int repeat = 5;
    bool quick = false;
    const char *csv_path = NULL;
    ax_precision precision = AX_PRECISION_F32;
    int replicas = 1;
    if (!cli_get_int(&args, "repeat", 1, 1000, &repeat) || !cli_get_flag(&args, "quick", &quick) ||
        !cli_get_nonempty(&args, "csv", &csv_path) || !read_precision(&args, &precision) ||
        !cli_get_int(&args, "replicas", 1, 4096, &replicas))
        return CLI_EXIT_USAGE;
    ax_device device = ax_device_cpu();
    if (!read_device(&args, &device))
        return CLI_EXIT_USAGE;
    if (replicas > 1 && !ax_device_is_cpu(device)) {
        cli_error(&args, "--replicas trains replicas on the CPU's cores; leave it out with --device %s",
                  cli_text(&args, "device"));
        return CLI_EXIT_USAGE;
    }
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    const int threads = ax_threads();
    const int threads_each = threads / replicas > 0 ? threads / replicas : 1;
    workload work;
    result = prepare(argv[1], &args, quick, &work);
    if (result != CLI_EXIT_OK) {
        ax_dataset_free(work.data);
        ax_dataset_free(work.test);
        return result;
    }
    epoch_log log = {.work = &work, .precision = ax_precision_name(precision),
                     .threads = replicas > 1 ? replicas * threads_each : threads};
    if (csv_path && !(log.csv = bench_csv_open(csv_path))) {
        fprintf(stderr, "axon bench: cannot open %s for appending\n", csv_path);
        result = CLI_EXIT_RUNTIME;
    }
    work.train.progress = record_epoch;
    work.train.progress_user = &log;
    printf("axon bench %s: %lld-%s, %s, batch %lld, %d epoch(s), %s, %d thread(s), %d repeat(s)",
           work.name, (long long)work.input_width, work.layers, ax_optimizer_name(work.train.optimizer),
           (long long)work.train.batch_size, work.train.epochs, precision_description(precision, device), threads,
           repeat);
    if (replicas > 1)
        printf(", %d replicas of %d thread(s)", replicas, threads_each);
    if (!ax_device_is_cpu(device)) {
        char name[48];
        ax_device_format(device, name, sizeof name);
        printf(", device %s", name);
    }
    printf("\n");
    double s_sum = 0, s_sq = 0, a_sum = 0, a_sq = 0, l_sum = 0, l_sq = 0, g_sum = 0, g_sq = 0;
    for (int r = 1; r <= repeat && result == CLI_EXIT_OK; r++) {
        ax_net_config config = ax_net_defaults();
        config.input_width = work.input_width;
        config.precision = precision;
        config.device = device;
        config.seed = (uint64_t)r;
        memcpy(config.input_shape, work.input_shape, sizeof config.input_shape);
        if (strcmp(work.name, "galaxy-cg") == 0) {
            config.init = AX_INIT_UNIFORM;
            config.init_range = 0.2;
        }
        ax_status status = ax_layers_parse(work.layers, &config);
        work.train.seed = (uint64_t)r;
        log.repeat = r;
        ax_train_summary summary = ax_train_summary_empty();
        if (status == AX_STATUS_OK && replicas > 1) {
            bench_run run = {.work = &work, .config = &config};
            result = replicas_run(replicas, threads_each, bench_replica, &run);
            if (result != CLI_EXIT_OK)
                break;
            summary = run.summary;
        } else if (status == AX_STATUS_OK) {
            status = train_once(work.data, work.test, &config, &work.train, &summary);
        }
        ax_net_config_release(&config);
        if (status != AX_STATUS_OK) {
            result = report_failure(status, work.name);
            break;
        }
        double per_epoch = summary.seconds / summary.epochs_run;
        double gflops = summary.gflop / summary.seconds;
        char accuracy_text[48] = "";
        if (!isnan(summary.final_test_accuracy))
            snprintf(accuracy_text, sizeof accuracy_text, ", test accuracy %.2f%%",
                     100.0 * summary.final_test_accuracy);
        printf("  run %d: %.4f s per epoch (%.3f s total, %.3f s with the setup and upload), loss "
               "%.4f%s, %.1f GFLOP/s\n", r, per_epoch, summary.seconds,
               summary.seconds + summary.setup_seconds, summary.final_train_loss, accuracy_text, gflops);
        s_sum += per_epoch, s_sq += per_epoch * per_epoch;
        l_sum += summary.final_train_loss, l_sq += summary.final_train_loss * summary.final_train_loss;
        g_sum += gflops, g_sq += gflops * gflops;
        double accuracy = isnan(summary.final_test_accuracy) ? 0.0 : 100.0 * summary.final_test_accuracy;
        a_sum += accuracy, a_sq += accuracy * accuracy;
    }
    if (result == CLI_EXIT_OK) {
        printf("over %d run(s):\n", repeat);
        print_stat("seconds per epoch", s_sum, s_sq, repeat, "s");
        print_stat("final training loss", l_sum, l_sq, repeat, "");
        if (work.test && ax_dataset_classes(work.test) > 0)
            print_stat("test accuracy", a_sum, a_sq, repeat, "%");
        print_stat("GFLOP/s", g_sum, g_sq, repeat, "(by TMVA's FLOP count)");
        if (work.input_shape[0] > 0 && ax_device_is_cpu(device))
            result = print_peak_share(g_sum / repeat, precision, log.precision);
    }
    if (log.csv && fclose(log.csv) != 0 && result == CLI_EXIT_OK) {
        fprintf(stderr, "axon bench: writing %s failed\n", csv_path);
        result = CLI_EXIT_RUNTIME;
    }
    ax_dataset_free(work.data);
    ax_dataset_free(work.test);
    return result;
}
