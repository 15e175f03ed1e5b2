/* train.c: `axon train`: load data, build the network the options describe,
 * train it with a live display, optionally save it. Ctrl-C or SIGTERM stops
 * training at the next progress call; the weights reached so far are still
 * saved when --out was given (with a note), since an interrupted long run is
 * usually worth keeping, and with checkpoints on, a checkpoint is written
 * that --resume continues from. Under mpirun each rank trains on its shard of
 * the rows and rank 0 alone prints and writes files (docs/mpi.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "data_source.h"
#include "file_roles.h"
#include "job.h"
#include "metrics.h"
#include "options.h"
#include "progress.h"
#include "replicas.h"

static const cli_option train_options[] = {
    {"data", CLI_STRING, "D", NULL,
     "training data (required): fashion-mnist, an IDX folder, FILE.csv, FILE.npy,\n"
     "batches:DIR (the output of axon prep) or synth:linear"},
    {"test", CLI_STRING, "D", NULL,
     "test data, evaluated after each epoch (default: the t10k files of an IDX\n"
     "folder given as --data; none otherwise)"},
    {"layers", CLI_STRING, "SPEC", "auto",
     "layers after the input, e.g. 128:relu,128:relu,10:softmax; auto =\n"
     "128:relu,128:relu,<classes>:softmax for class labels, <targets>:identity for\n"
     "numbers to predict; for images also conv:FILTERSxHxW[/sSTRIDE][/pPAD][:ACT],\n"
     "maxpool:K[/sSTRIDE], avgpool:K[/sSTRIDE] before the dense layers, e.g.\n"
     "conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax\n"
     "(docs/cli.md, \"Images\")"},
    {"loss", CLI_STRING, "L", "auto", "auto, cross-entropy, binary-cross-entropy or mse"},
    {"optimizer", CLI_STRING, "O", "sgd",
     "sgd, adam, adamw (Adam with decoupled weight decay), cg (full-batch\n"
     "Polak-Ribiere conjugate gradient, as scipy's fmin_cg) or lbfgs (full-batch\n"
     "L-BFGS)"},
    {"lr", CLI_NUMBER, "X", "auto", "learning rate; auto = 0.1 for sgd, 0.001 for adam and adamw"},
    {"momentum", CLI_NUMBER, "X", "0.9", "SGD momentum, in [0, 1)"},
    {"nesterov", CLI_FLAG, NULL, NULL, "SGD: Nesterov momentum"},
    {"batch", CLI_INT, "N", "128", "rows per step; 0 or full = full batch (one step per epoch)"},
    {"epochs", CLI_INT, "N", "10", "passes over the training data"},
    {"max-iter", CLI_INT, "N", "10",
     "cg, lbfgs: at most N iterations (one line search over the full batch\n"
     "each; the same as --epochs)"},
    {"gtol", CLI_NUMBER, "X", "1e-5",
     "cg, lbfgs: stop when no gradient component exceeds X in magnitude"},
    {"lbfgs-memory", CLI_INT, "M", "10", "lbfgs: correction pairs kept"},
    {"l2", CLI_NUMBER, "X", "0", "L2 penalty: loss += X/2 * sum of squared weights"},
    {"l1", CLI_NUMBER, "X", "0",
     "L1 penalty: loss += X * sum of absolute weights (its subgradient X sign(w)\n"
     "in every optimizer, CG and L-BFGS included)"},
    {"weight-decay", CLI_NUMBER, "X", "0.01",
     "adamw: decoupled weight decay, weights *= 1 - lr * X before each step\n"
     "(torch.optim.AdamW; biases are not decayed)"},
    {"clip-norm", CLI_NUMBER, "X", "0",
     "sgd, adam, adamw: scale the gradient to Euclidean norm X when above it\n"
     "(torch.nn.utils.clip_grad_norm_); 0 = off"},
    {"clip-value", CLI_NUMBER, "X", "0",
     "sgd, adam, adamw: clamp every gradient component to [-X, X] (before\n"
     "--clip-norm; torch.nn.utils.clip_grad_value_); 0 = off"},
    {"lr-schedule", CLI_STRING, "S", "constant",
     "sgd, adam, adamw: the learning rate of each epoch, as PyTorch's schedulers:\n"
     "step:EVERY:GAMMA (StepLR), exp:GAMMA (ExponentialLR), cosine[:MIN]\n"
     "(CosineAnnealingLR over --epochs), plateau:PATIENCE:FACTOR\n"
     "(ReduceLROnPlateau on the validation loss: needs --val-split); sgd only,\n"
     "scikit-learn's invscaling[:POWER] and adaptive[:PATIENCE[:TOL]]"},
    {"warmup", CLI_INT, "N", "0",
     "sgd, adam, adamw: linear warmup over the first N steps: step s (from 0)\n"
     "at (s + 1) / N of the epoch's rate (torch's LinearLR per batch)"},
    {"dropout", CLI_STRING, "P", "0",
     "probability of dropping a hidden unit, in [0, 1); or one per layer's\n"
     "input, the network's inputs first (TMVA's DropConfig), e.g. 0.2,0.5,0.5;\n"
     "or a layer's suffix in --layers: 128:relu:drop0.5 drops its outputs"},
    {"init", CLI_STRING, "I", "auto",
     "initial weights: auto (He for ReLU layers, else Xavier), he, xavier, uniform"},
    {"init-range", CLI_NUMBER, "R", "0.2", "uniform init: weights in [-R, R]"},
    {"init-from", CLI_STRING, "FILE", NULL,
     "start from the network and weights of model FILE (written by --out, or by\n"
     "any tool writing the same safetensors: docs/cli.md), e.g. to continue\n"
     "training or to start where a NumPy reference starts; its layers and loss\n"
     "are used, so leave out --layers, --loss and --init"},
    {"seed", CLI_INT, "N", "1",
     "seed of the weights, shuffling, dropout, --val-split and synth:linear"},
    THREADS_OPTION,
    PRECISION_OPTION,
    DEVICE_OPTION,
    {"val-split", CLI_NUMBER, "F", "0",
     "hold out this fraction of the training rows for validation; 0 = none"},
    {"early-stop", CLI_INT, "N", "0",
     "stop when the validation loss has not improved for N epochs and keep the\n"
     "best weights (needs --val-split); 0 = off"},
    {"keep-best", CLI_STRING, "SET", "none",
     "keep the weights of the epoch (cg, lbfgs: iteration) with the lowest\n"
     "test or validation loss: test, validation or none"},
    {"out", CLI_STRING, "FILE", NULL, "save the trained model there (safetensors)"},
    {"metrics", CLI_STRING, "FILE", NULL, "write one JSON line per epoch there"},
    {"quiet", CLI_FLAG, NULL, NULL, "print nothing but errors"},
    {"profile", CLI_FLAG, NULL, NULL,
     "time every operation and print the table at the end, with the run's\n"
     "GFLOP/s against the machine's peak and the GEMM rate at its shapes"},
    {"profile-json", CLI_STRING, "FILE", NULL, "write the profile there as JSON (implies --profile)"},
    {"no-shuffle", CLI_FLAG, NULL, NULL, "keep the rows in file order every epoch"},
    {"keep-subnormals", CLI_FLAG, NULL, NULL,
     "keep IEEE subnormal numbers (gradual underflow) instead of flushing them to\n"
     "zero, which is faster (ax_train_config.keep_subnormals)"},
    {"checkpoint-every", CLI_INT, "N", "0",
     "write a checkpoint after every N-th epoch (cg, lbfgs: iteration); 0 = off"},
    {"checkpoint", CLI_STRING, "PREFIX", NULL,
     "checkpoints are PREFIX.epoch-NNNNNN.safetensors (default: --out without\n"
     ".safetensors, else 'checkpoint'); given, a Ctrl-C or SIGTERM also writes\n"
     "PREFIX.interrupted.safetensors"},
    {"keep-checkpoints", CLI_INT, "K", "2", "keep the newest K epoch checkpoints; 0 = all"},
    {"phase", CLI_LIST, "K=V,...", NULL,
     "a phase of the run, given once per phase in order: the options of the\n"
     "phase before (the first: the command's) but for what it names, e.g.\n"
     "lr=0.01,batch=1024,epochs=5,l2=1e-4 (keys: lr, momentum, nesterov, batch,\n"
     "epochs, dropout, l1, l2, weight_decay, optimizer, lr_schedule, warmup,\n"
     "patience, clip_norm, clip_value); the optimizer's state carries over\n"
     "while its kind stays; patience=N ends the phase after N epochs without\n"
     "a better validation loss, keeping its best weights"},
    {"resume", CLI_STRING, "FILE", NULL,
     "continue the run checkpoint FILE recorded, with its options; give --data\n"
     "(and --test) again; --epochs may extend the run"},
    {"check-replicas", CLI_FLAG, NULL, NULL,
     "under mpirun: after each epoch, check that every rank holds the same\n"
     "weights (a debugging aid; one hash and one small sum per epoch)"},
    {"replicas", CLI_INT, "P", "1",
     "data-parallel training in this process: P threads each train a replica on\n"
     "its shard of the rows with --threads/P threads (at least 1), gradients\n"
     "summed every step, as mpirun -np P does with processes (docs/mpi.md)"},
    DATA_SOURCE_OPTIONS,
    DATA_STREAM_OPTIONS,
};

static const char train_usage[] = "axon train --data D [--test D] [--layers SPEC] [options]";
static const char train_description[] =
    "Trains a network on D and reports, per epoch, the training loss, the\n"
    "test loss and accuracy, the time and the GFLOP/s reached. The input width\n"
    "(and the image shape of images) comes from the data.\n"
    "\nexample:\n"
    "  axon train --data fashion-mnist --layers 128:relu,128:relu,10:softmax \\\n"
    "             --epochs 5 --out fmnist.safetensors";

enum { MAX_PHASES = 16, NOTE_CAPACITY = 4096 };

/* Everything train reads from the command line. */
typedef struct train_request {
    const char *data, *test, *layers, *out, *metrics_path;
    const char *optimizer_name;
    double val_split;
    bool quiet;
    bool profile;              /* --profile */
    const char *profile_json;  /* --profile-json FILE */
    ax_net_config net;
    ax_train_config train;
    data_settings data_settings;
    const char *resume;        /* --resume FILE */
    const char *init_from;     /* --init-from FILE */
    /* The network to train, with its weights, when it does not come from the
     * options: the checkpoint's (--resume) or the model file's (--init-from,
     * loaded by train_rank, so that every rank and replica has its own). */
    ax_net *start_net;
    ax_train_state *resumed;   /* the checkpoint's state */
    /* --phase: the phases' configs, each the one before with what its text
     * names; phase_count 0 = one run of `train`. A resumed run starts at
     * first_phase, after epochs_before epochs of the phases before it. */
    int phase_count;
    int first_phase;
    int epochs_before;
    const char *phase_texts[MAX_PHASES];
    ax_train_config phases[MAX_PHASES];
    char phase_text_store[NOTE_CAPACITY]; /* the texts read back from a checkpoint's note */
    char note[NOTE_CAPACITY];  /* the options the library stores for us: val_split (and the
                                  phases: see phase_note) */
    bool resume_failed;        /* the checkpoint could not be read (not a usage error) */
} train_request;

/* The data of a run; freed together. Under mpirun the sets are this rank's
 * shards, and source and described[] tell of the whole sets. */
typedef struct train_data {
    ax_dataset *loaded, *train, *validation, *test;
    char source[512];
    char described[3][160]; /* training, validation, test */
} train_data;

/* The options a checkpoint records; --resume refuses them. */
static const char *const recorded_options[] = {
    "layers", "loss", "optimizer", "lr", "momentum", "nesterov", "batch", "max-iter", "gtol",
    "lbfgs-memory", "l2", "dropout", "init", "init-range", "seed", "precision", "device",
    "val-split", "early-stop", "keep-best", "no-shuffle", "init-from", "keep-subnormals", "l1",
    "weight-decay", "clip-norm", "clip-value", "lr-schedule", "warmup", "phase", NULL};

/* --checkpoint-every, --checkpoint, --keep-checkpoints into request->train;
 * on --resume, an option not given keeps the recorded value. */
static bool read_checkpoint_options(const cli_args *args, train_request *request)
{
    ax_train_config *train = &request->train;
    const bool resume = request->resume != NULL;
    if ((!resume || cli_given(args, "checkpoint-every")) &&
        !cli_get_int(args, "checkpoint-every", 0, 1000000, &train->checkpoint_every))
        return false;
    if ((!resume || cli_given(args, "keep-checkpoints")) &&
        !cli_get_int(args, "keep-checkpoints", 0, 1000000, &train->keep_checkpoints))
        return false;
    const char *prefix = NULL;
    if (!cli_get_nonempty(args, "checkpoint", &prefix))
        return false;
    if (prefix)
        train->checkpoint_prefix = prefix;
    if (train->checkpoint_every > 0 && !train->checkpoint_prefix) {
        /* model.safetensors -> model.epoch-000001.safetensors */
        static char derived[4096];
        const char *out = request->out ? request->out : "checkpoint";
        size_t length = strlen(out);
        if (length > 12 && strcmp(out + length - 12, ".safetensors") == 0)
            length -= 12;
        snprintf(derived, sizeof derived, "%.*s", (int)length, out);
        train->checkpoint_prefix = derived;
    }
    return true;
}

/* Phase p's config, parsed (already in `config`): refused where the
 * command's checks would refuse it. */
static bool phase_allowed(const cli_args *args, const train_request *request, int p,
                          ax_train_config *config)
{
    if (ax_optimizer_is_full_batch(config->optimizer))
        config->batch_size = 0; /* a line search needs one fixed cost: the full batch */
    const char *needs = config->early_stop > 0 ? "patience (early stopping)"
                        : config->lr_schedule == AX_LR_SCHEDULE_PLATEAU ? "lr_schedule plateau"
                                                                        : NULL;
    const bool line_search = ax_optimizer_is_full_batch(config->optimizer);
    if (line_search && (config->lr_schedule != AX_LR_SCHEDULE_CONSTANT || config->warmup_steps > 0 ||
                        config->clip_norm > 0.0 || config->clip_value > 0.0)) {
        cli_error(args, "--phase %d: lr_schedule, warmup and clipping apply to sgd, adam and adamw: "
                        "%s chooses its own steps by line search (name lr_schedule=constant, "
                        "warmup=0, clip_norm=0 and clip_value=0 in this phase)",
                  p + 1, ax_optimizer_name(config->optimizer));
        return false;
    }
    if (config->dropout > 0.0) {
        for (int l = 0; l < AX_MAX_LAYERS; l++)
            if (config->dropout_layers[l] > 0.0) {
                cli_error(args, "--phase %d: dropout=%g with a dropout per layer (--dropout "
                                "P0,P1,... or :dropP in --layers): give one or the other",
                          p + 1, config->dropout);
                return false;
            }
    }
    if (needs && request->val_split == 0.0) {
        cli_error(args, "--phase %d: %s watches the validation loss: add --val-split, e.g. 0.1",
                  p + 1, needs);
        return false;
    }
    return true;
}

/* --phase TEXT, in order: each the config of the one before (the first:
 * the command's) with what it names. */
static bool read_phases(const cli_args *args, train_request *request)
{
    const char *texts[MAX_PHASES + 1];
    const int count = cli_list(args, "phase", texts, MAX_PHASES + 1);
    if (count > MAX_PHASES) {
        cli_error(args, "--phase: at most %d phases", MAX_PHASES);
        return false;
    }
    size_t total = 0;
    ax_train_config config = request->train;
    for (int p = 0; p < count; p++) {
        if (strpbrk(texts[p], ";|")) {
            cli_error(args, "--phase %d: '%s': ';' and '|' have no place in a phase (KEY=VALUE "
                            "items separated by commas)", p + 1, texts[p]);
            return false;
        }
        if (ax_train_phase_parse(texts[p], &config) != AX_STATUS_OK) {
            cli_error(args, "--phase %d: %s", p + 1, ax_error_message());
            return false;
        }
        if (!phase_allowed(args, request, p, &config))
            return false;
        request->phases[p] = config;
        request->phase_texts[p] = texts[p];
        total += strlen(texts[p]) + 1;
    }
    if (total > NOTE_CAPACITY / 2) {
        cli_error(args, "--phase: the phases' texts (%zu characters) are too long to record in "
                        "a checkpoint (at most %d)", total, NOTE_CAPACITY / 2);
        return false;
    }
    request->phase_count = count;
    return true;
}

/* A resumed run's phases from its checkpoint's note ("val_split=..;phase=P;
 * before=N;phases=T1|T2|.."): the checkpoint's config is phase P's, the
 * later ones are parsed over it as the first run parsed them. */
static bool read_resumed_phases(train_request *request, const char *note)
{
    const char *at = strstr(note, ";phase=");
    if (!at)
        return true;
    int phase = 0, before = 0, used = 0;
    if (sscanf(at, ";phase=%d;before=%d;phases=%n", &phase, &before, &used) != 2 || used == 0)
        return false;
    snprintf(request->phase_text_store, sizeof request->phase_text_store, "%s", at + used);
    int count = 0;
    for (char *text = request->phase_text_store; text && count < MAX_PHASES; count++) {
        char *bar = strchr(text, '|');
        if (bar)
            *bar = '\0';
        request->phase_texts[count] = text;
        text = bar ? bar + 1 : NULL;
    }
    if (phase < 1 || phase > count || before < 0)
        return false;
    request->phase_count = count;
    request->first_phase = phase - 1;
    request->epochs_before = before;
    request->phases[phase - 1] = request->train;
    for (int p = phase; p < count; p++) {
        request->phases[p] = request->phases[p - 1];
        if (ax_train_phase_parse(request->phase_texts[p], &request->phases[p]) != AX_STATUS_OK)
            return false;
        if (ax_optimizer_is_full_batch(request->phases[p].optimizer))
            request->phases[p].batch_size = 0;
    }
    request->note[strcspn(request->note, ";")] = '\0'; /* the run's val_split alone */
    return true;
}

/* --resume FILE: the options come from the checkpoint. */
/* The options a new run and a resumed one read alike: the data and its
 * settings, where the results go, and how the run reports. */
static bool read_run_files(const cli_args *args, train_request *request)
{
    return cli_get_nonempty(args, "data", &request->data) &&
           cli_get_nonempty(args, "test", &request->test) &&
           cli_get_nonempty(args, "out", &request->out) &&
           cli_get_nonempty(args, "metrics", &request->metrics_path) &&
           cli_get_flag(args, "quiet", &request->quiet) &&
           cli_get_flag(args, "profile", &request->profile) &&
           cli_get_nonempty(args, "profile-json", &request->profile_json) &&
           data_settings_read(args, &request->data_settings) &&
           data_stream_settings_read(args, cli_text(args, "data"), &request->data_settings);
}

static bool read_resume_request(const cli_args *args, train_request *request)
{
    for (int i = 0; recorded_options[i]; i++)
        if (cli_given(args, recorded_options[i])) {
            cli_error(args, "--%s: a resumed run keeps the options its checkpoint recorded; "
                            "leave it out", recorded_options[i]);
            return false;
        }
    if (!read_run_files(args, request))
        return false;
    if (!request->data) {
        cli_error(args, "--resume needs the training data again: add --data (and --test if the run had one)");
        return false;
    }
    ax_status status = ax_checkpoint_load(request->resume, &request->start_net, &request->train,
                                          &request->resumed);
    if (status != AX_STATUS_OK) {
        report_failure(status, request->resume);
        request->resume_failed = true;
        return false;
    }
    request->net = *ax_net_config_get(request->start_net);
    request->layers = "checkpoint";
    request->optimizer_name = ax_optimizer_name(request->train.optimizer);
    /* synth:linear draws from the run's seed; the split from its val_split. */
    request->data_settings.seed = request->train.seed;
    const char *note = ax_train_state_note(request->resumed);
    if (strncmp(note, "val_split=", 10) == 0)
        request->val_split = strtod(note + 10, NULL);
    if (!(request->val_split >= 0.0 && request->val_split < 1.0)) {
        fprintf(stderr, "axon: %s: checkpoint note '%s' holds no valid val_split\n", request->resume, note);
        request->resume_failed = true;
        return false;
    }
    snprintf(request->note, sizeof request->note, "%s", note);
    request->train.checkpoint_note = request->note;
    if (cli_given(args, "epochs") && !cli_get_int(args, "epochs", 1, 1000000, &request->train.epochs))
        return false;
    if (!read_resumed_phases(request, note)) {
        fprintf(stderr, "axon: %s: checkpoint note '%s' holds no valid phases\n", request->resume, note);
        request->resume_failed = true;
        return false;
    }
    return read_checkpoint_options(args, request);
}

/* --dropout P (every hidden layer) or P0,P1,... (per layer's input, inputs first). */
static bool read_dropout(const cli_args *args, ax_train_config *train)
{
    const char *text = cli_text(args, "dropout");
    if (!strchr(text, ','))
        return cli_get_double(args, "dropout", 0.0, 1.0, CLI_MAX_OPEN, &train->dropout);
    for (int l = 0; *text; l++) {
        char *end = NULL;
        const double rate = strtod(text, &end);
        if (l >= AX_MAX_LAYERS || end == text || !(rate >= 0.0 && rate < 1.0) ||
            (*end != ',' && *end != '\0')) {
            cli_error(args, "--dropout: '%s' is not a probability in [0, 1) or a list of at most %d "
                            "of them (one per layer's input, the inputs first, e.g. 0.2,0.5,0.5)",
                      cli_text(args, "dropout"), AX_MAX_LAYERS);
            return false;
        }
        train->dropout_layers[l] = rate;
        text = *end == ',' ? end + 1 : end;
    }
    return true;
}

/* --lr-schedule TEXT and --warmup N. */
static bool read_schedule(const cli_args *args, ax_train_config *train)
{
    int64_t warmup = 0;
    if (!cli_get_int64(args, "warmup", 0, INT64_MAX, &warmup))
        return false;
    train->warmup_steps = warmup;
    if (ax_lr_schedule_parse(cli_text(args, "lr-schedule"), train) != AX_STATUS_OK) {
        cli_error(args, "--lr-schedule: %s", ax_error_message());
        return false;
    }
    return true;
}

/* --layers items ending in :dropP (the layer's outputs dropped with
 * probability P): the suffixes are taken out into dropout_layers[l + 1]. */
static bool take_layer_dropout(const cli_args *args, train_request *request)
{
    if (!strstr(request->layers, ":drop"))
        return true;
    if (cli_given(args, "dropout")) {
        cli_error(args, "--dropout: give the dropout in --dropout or as :dropP suffixes in --layers, "
                        "not both");
        return false;
    }
    static char stripped[4096];
    stripped[0] = '\0';
    int layer = 0;
    for (const char *item = request->layers; *item; layer++) {
        const char *comma = strchr(item, ',');
        const size_t length = comma ? (size_t)(comma - item) : strlen(item);
        char part[256];
        snprintf(part, sizeof part, "%.*s", (int)(length < 255 ? length : 255), item);
        char *drop = strstr(part, ":drop");
        if (drop) {
            char *end = NULL;
            const double rate = strtod(drop + 5, &end);
            if (end == drop + 5 || *end || !(rate >= 0.0 && rate < 1.0) || layer + 1 >= AX_MAX_LAYERS) {
                cli_error(args, "--layers: '%s': :drop takes a probability in [0, 1), e.g. "
                                "128:relu:drop0.5",
                          part);
                return false;
            }
            request->train.dropout_layers[layer + 1] = rate;
            *drop = '\0';
        }
        const size_t used = strlen(stripped);
        snprintf(stripped + used, sizeof stripped - used, "%s%s", layer ? "," : "", part);
        item = comma ? comma + 1 : item + length;
    }
    request->layers = stripped;
    return true;
}

static bool read_request(const cli_args *args, train_request *request)
{
    memset(request, 0, sizeof *request);
    request->net = ax_net_defaults();
    request->train = ax_train_defaults();
    request->train.adapt_threads = threads_left_to_axon(args);
    if (!cli_get_nonempty(args, "resume", &request->resume))
        return false;
    if (request->resume)
        return read_resume_request(args, request);
    static const char *const losses[] = {"auto", "cross-entropy", "binary-cross-entropy", "mse",
                                         NULL};
    const char *optimizers[32] = {NULL}; /* the library's kinds, at their enum values */
    for (int i = 0; i < ax_optimizer_count() && i < 31; i++)
        optimizers[i] = ax_optimizer_name((ax_optimizer_kind)i);
    static const char *const inits[] = {"auto", "he", "xavier", "uniform", NULL};
    static const char *const keep_bests[] = {"none", "validation", "test", NULL}; /* ax_keep_best */
    int loss = 0, optimizer = 0, init = 0, keep_best = 0;
    int64_t batch = 0, seed = 1;
    bool nesterov = false, no_shuffle = false;
    bool ok = read_run_files(args, request) &&
              cli_get_nonempty(args, "layers", &request->layers) &&
              cli_get_choice(args, "loss", losses, &loss) &&
              cli_get_choice(args, "optimizer", optimizers, &optimizer) &&
              cli_get_choice(args, "init", inits, &init) &&
              cli_get_double(args, "momentum", 0.0, 1.0, CLI_MAX_OPEN, &request->train.momentum) &&
              cli_get_flag(args, "nesterov", &nesterov) &&
              cli_get_int64_or(args, "batch", "full", 0, 0, 1000000000, &batch) &&
              cli_get_int(args, "epochs", 1, 1000000, &request->train.epochs) &&
              cli_get_double(args, "gtol", 0.0, INFINITY, CLI_CLOSED, &request->train.gtol) &&
              cli_get_int(args, "lbfgs-memory", 1, 1000, &request->train.lbfgs_memory) &&
              cli_get_double(args, "l2", 0.0, INFINITY, CLI_CLOSED, &request->train.l2) &&
              read_dropout(args, &request->train) &&
              read_schedule(args, &request->train) &&
              cli_get_double(args, "l1", 0.0, INFINITY, CLI_CLOSED, &request->train.l1) &&
              cli_get_double(args, "weight-decay", 0.0, INFINITY, CLI_CLOSED,
                             &request->train.weight_decay) &&
              cli_get_double(args, "clip-norm", 0.0, INFINITY, CLI_CLOSED, &request->train.clip_norm) &&
              cli_get_double(args, "clip-value", 0.0, INFINITY, CLI_CLOSED,
                             &request->train.clip_value) &&
              cli_get_double(args, "init-range", 0.0, INFINITY, CLI_MIN_OPEN,
                             &request->net.init_range) &&
              cli_get_int64(args, "seed", 0, INT64_MAX, &seed) &&
              read_precision(args, &request->net.precision) &&
              read_device(args, &request->net.device) &&
              cli_get_double(args, "val-split", 0.0, 1.0, CLI_MAX_OPEN, &request->val_split) &&
              cli_get_int(args, "early-stop", 0, 1000000, &request->train.early_stop) &&
              cli_get_choice(args, "keep-best", keep_bests, &keep_best) &&
              cli_get_flag(args, "no-shuffle", &no_shuffle) &&
              cli_get_flag(args, "keep-subnormals", &request->train.keep_subnormals) &&
              cli_get_nonempty(args, "init-from", &request->init_from);
    if (!ok)
        return false;
    if (request->init_from) {
        static const char *const from_file[] = {"layers", "loss", "init", "init-range", NULL};
        for (int i = 0; from_file[i]; i++)
            if (cli_given(args, from_file[i])) {
                cli_error(args, "--%s: --init-from %s takes the network (layers, loss) and its "
                                "weights from the file; leave it out",
                          from_file[i], request->init_from);
                return false;
            }
    }
    request->optimizer_name = optimizers[optimizer];
    if (ax_loss_parse(losses[loss], &request->net.loss) != AX_STATUS_OK ||
        ax_optimizer_parse(optimizers[optimizer], &request->train.optimizer) != AX_STATUS_OK ||
        ax_init_parse(inits[init], &request->net.init) != AX_STATUS_OK) {
        cli_error(args, "this build does not know %s/%s/%s: %s", losses[loss],
                  optimizers[optimizer], inits[init], ax_error_message());
        return false;
    }
    const char *lr = cli_text(args, "lr");
    if (strcmp(lr, "auto") == 0)
        request->train.learning_rate = ax_optimizer_default_learning_rate(request->train.optimizer);
    else if (!cli_get_double(args, "lr", 0.0, INFINITY, CLI_MIN_OPEN, &request->train.learning_rate))
        return false;
    request->train.nesterov = nesterov;
    request->train.batch_size = batch;
    const ax_optimizer_kind kind = request->train.optimizer;
    char kinds[128];
    if (ax_optimizer_is_full_batch(kind)) {
        /* A line search needs one fixed cost: the full batch. */
        if (cli_given(args, "batch") && batch != 0) {
            cli_error(args, "--optimizer %s works on the full batch: leave out --batch (or give 0)",
                      request->optimizer_name);
            return false;
        }
        request->train.batch_size = 0;
        if (cli_given(args, "max-iter") && cli_given(args, "epochs")) {
            cli_error(args, "give --max-iter or --epochs, not both (for %s they are the same)",
                      request->optimizer_name);
            return false;
        }
        if (cli_given(args, "max-iter") &&
            !cli_get_int(args, "max-iter", 1, 1000000, &request->train.epochs))
            return false;
        if (!ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_LEARNING_RATE) && cli_given(args, "lr"))
            cli_error(args, "note: %s chooses its steps by line search; --lr is ignored",
                      request->optimizer_name);
    } else if (cli_given(args, "max-iter") || cli_given(args, "gtol")) {
        ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LINE_SEARCH, kinds, sizeof kinds);
        cli_error(args, "note: --max-iter and --gtol apply to %s; %s uses --epochs", kinds,
                  request->optimizer_name);
    }
    if (!ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_WEIGHT_DECAY) && cli_given(args, "weight-decay")) {
        ax_optimizer_names_using(AX_OPTIMIZER_SETTING_WEIGHT_DECAY, kinds, sizeof kinds);
        cli_error(args, "note: --weight-decay applies to %s only (for %s, --l2 is the penalty)",
                  kinds, request->optimizer_name);
    }
    if (ax_optimizer_is_full_batch(kind) && (cli_given(args, "lr-schedule") || cli_given(args, "warmup"))) {
        cli_error(args, "--lr-schedule and --warmup apply to sgd, adam and adamw: %s chooses its "
                        "own steps by line search",
                  request->optimizer_name);
        return false;
    }
    if (ax_optimizer_is_full_batch(kind) && (cli_given(args, "clip-norm") || cli_given(args, "clip-value"))) {
        cli_error(args, "--clip-norm and --clip-value apply to sgd, adam and adamw: %s's line "
                        "search needs the true gradient",
                  request->optimizer_name);
        return false;
    }
    if (!ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_LBFGS_MEMORY) && cli_given(args, "lbfgs-memory")) {
        ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LBFGS_MEMORY, kinds, sizeof kinds);
        cli_error(args, "note: --lbfgs-memory applies to %s only", kinds);
    }
    request->train.shuffle = !no_shuffle;
    request->train.seed = (uint64_t)seed;
    request->net.seed = (uint64_t)seed;
    if (!request->data) {
        cli_error(args, "--data is required, e.g. --data fashion-mnist (see axon train --help)");
        return false;
    }
    if (request->train.early_stop > 0 && request->val_split == 0.0) {
        cli_error(args, "--early-stop needs a validation set: add --val-split, e.g. 0.1");
        return false;
    }
    if (request->train.lr_schedule == AX_LR_SCHEDULE_PLATEAU && request->val_split == 0.0) {
        cli_error(args, "--lr-schedule plateau watches the validation loss: add --val-split, e.g. 0.1");
        return false;
    }
    request->train.keep_best = (ax_keep_best)keep_best;
    if (request->train.keep_best == AX_KEEP_BEST_VALIDATION && request->val_split == 0.0) {
        cli_error(args, "--keep-best validation needs a validation set: add --val-split, e.g. 0.1");
        return false;
    }
    /* Options that the chosen method ignores: worth a note, not a refusal. */
    if (!ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_MOMENTUM) &&
        (cli_given(args, "momentum") || cli_given(args, "nesterov"))) {
        ax_optimizer_names_using(AX_OPTIMIZER_SETTING_MOMENTUM, kinds, sizeof kinds);
        cli_error(args, "note: --momentum and --nesterov apply to %s only; %s ignores them", kinds,
                  request->optimizer_name);
    }
    if (request->net.init != AX_INIT_UNIFORM && cli_given(args, "init-range"))
        cli_error(args, "note: --init-range applies to --init uniform only");
    if (!take_layer_dropout(args, request))
        return false;
    if (strcmp(request->layers, "auto") != 0 &&
        ax_layers_parse(request->layers, &request->net) != AX_STATUS_OK) {
        /* The message names the layout (shortened when long): not echoed twice. */
        cli_error(args, "--layers: %s", ax_error_message());
        return false;
    }
    snprintf(request->note, sizeof request->note, "val_split=%.17g", request->val_split);
    request->train.checkpoint_note = request->note;
    return read_phases(args, request) && read_checkpoint_options(args, request);
}

/* Every file the run reads against every file it writes, and each
 * output's place, before hours of loading and training (file_roles.h). */
static int check_files(const train_request *request)
{
    const data_settings *settings = &request->data_settings;
    file_roles roles = {0};
    file_roles_data(&roles, "--data", request->data, "the training data");
    file_roles_data(&roles, "--test", request->test, "the test data");
    file_roles_input(&roles, "--labels", settings->labels, "the training labels");
    file_roles_input(&roles, "--test-labels", settings->test_labels, "the test labels");
    file_roles_input(&roles, "--init-from", request->init_from, "the model training starts from");
    file_roles_resumed(&roles, "--resume", request->resume, "the checkpoint resumed");
    file_roles_input(&roles, "--mean", settings->mean[0] ? settings->mean : NULL, "the mean image");
    file_roles_output(&roles, "--out", request->out);
    file_roles_output(&roles, "--metrics", request->metrics_path);
    file_roles_output(&roles, "--profile-json", request->profile_json);
    if (request->train.checkpoint_every > 0 || request->train.checkpoint_prefix)
        file_roles_checkpoints(&roles, "--checkpoint", request->train.checkpoint_prefix);
    return file_roles_check(&roles);
}

/* Fills the layers for --layers auto from the data, in layers (room for 3). */
static void default_layers(ax_net_config *net, int64_t classes, int64_t targets,
                           ax_layer_spec *layers)
{
    if (classes > 0) {
        net->layer_count = 3;
        layers[0] = ax_layer_dense(128, AX_ACT_RELU);
        layers[1] = ax_layer_dense(128, AX_ACT_RELU);
        layers[2] = ax_layer_dense(classes, AX_ACT_SOFTMAX);
    } else {
        net->layer_count = 1;
        layers[0] = ax_layer_dense(targets > 0 ? targets : 1, AX_ACT_IDENTITY);
    }
    net->layers = layers;
}

/* The optimizer and its settings, on one line after lead. */
static void print_training(const char *lead, const ax_train_config *train_config)
{
    const ax_optimizer_kind kind = train_config->optimizer;
    const bool full_batch = ax_optimizer_is_full_batch(kind);
    printf("%s%s", lead, ax_optimizer_name(kind));
    if (ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_LINE_SEARCH))
        printf(", gtol %g", train_config->gtol);
    if (ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_LEARNING_RATE))
        printf(", lr %g", train_config->learning_rate);
    if (ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_LBFGS_MEMORY))
        printf(", memory %d", train_config->lbfgs_memory);
    if (ax_optimizer_uses(kind, AX_OPTIMIZER_SETTING_MOMENTUM))
        printf(", momentum %g%s", train_config->momentum, train_config->nesterov ? " (Nesterov)" : "");
    if (train_config->batch_size > 0)
        printf(", batch %lld", (long long)train_config->batch_size);
    else
        printf(", full batch");
    printf(", %s%d %s%s", full_batch ? "at most " : "", train_config->epochs,
           full_batch ? "iteration" : "epoch", train_config->epochs == 1 ? "" : "s");
    if (train_config->l2 > 0)
        printf(", l2 %g", train_config->l2);
    if (train_config->dropout > 0)
        printf(", dropout %g", train_config->dropout);
    int dropped = -1;
    for (int l = 0; l < AX_MAX_LAYERS; l++)
        if (train_config->dropout_layers[l] > 0)
            dropped = l;
    for (int l = 0; l <= dropped; l++)
        printf("%s%g", l == 0 ? ", dropout per layer " : ",", train_config->dropout_layers[l]);
    if (train_config->l1 > 0)
        printf(", l1 %g", train_config->l1);
    if (ax_optimizer_uses(train_config->optimizer, AX_OPTIMIZER_SETTING_WEIGHT_DECAY))
        printf(", weight decay %g", train_config->weight_decay);
    if (train_config->clip_value > 0)
        printf(", gradients clipped to +-%g", train_config->clip_value);
    if (train_config->clip_norm > 0)
        printf(", gradient norm clipped to %g", train_config->clip_norm);
    if (train_config->early_stop > 0)
        printf(", early stop after %d", train_config->early_stop);
    if (train_config->lr_schedule != AX_LR_SCHEDULE_CONSTANT) {
        char schedule[128];
        ax_lr_schedule_format(train_config, schedule, sizeof schedule);
        printf(", lr schedule %s", schedule);
    }
    if (train_config->warmup_steps > 0)
        printf(", warmup %lld steps", (long long)train_config->warmup_steps);
    printf("\n");
}

static void print_header(const train_request *request, const ax_net *net, const train_data *data)
{
    char text[1024];
    const ax_net_config *config = ax_net_config_get(net);
    printf("axon %s train\n", AX_VERSION);
    if (request->resumed)
        printf("  resumed     %s after epoch %d\n", request->resume,
               ax_train_state_epochs_done(request->resumed));
    printf("  data        %s: %s\n", data->source, data->described[0]);
    if (data->validation)
        printf("  validation  %s (--val-split %g)\n", data->described[1], request->val_split);
    if (data->test) {
        const char *spec = request->test ? request->test : request->data;
        printf("  test        %s: %s\n", data_name(data->test, spec), data->described[2]);
    }
    if (cli_job_is_replica())
        printf("  replicas    %d threads of this process, each training on its shard of the rows "
               "with %d thread%s; gradients summed every step\n", cli_job_size(), ax_threads(),
               ax_threads() == 1 ? "" : "s");
    else if (cli_job_size() > 1)
        printf("  processes   %d ranks (MPI), each training on its shard of the rows; gradients "
               "summed by MPI_Allreduce every step\n", cli_job_size());
    ax_layers_format(config, text, sizeof text);
    printf("  network     %s, %lld parameters\n", text, (long long)ax_net_parameter_count(net));
    if (request->init_from)
        printf("  loss        %s, weights from %s\n", ax_loss_name(config->loss), request->init_from);
    else
        printf("  loss        %s, init %s%s\n", ax_loss_name(config->loss), ax_init_name(config->init),
               config->init == AX_INIT_AUTO ? " (He for ReLU layers, Xavier otherwise)" : "");
    const ax_train_config *train_config = &request->train;
    if (request->phase_count > 0)
        printf("  phases      %d, each shown as it starts\n", request->phase_count);
    else
        print_training("  optimizer   ", train_config);
    if (train_config->checkpoint_every > 0)
    {
        char kept[32] = "all kept";
        if (train_config->keep_checkpoints > 0)
            snprintf(kept, sizeof kept, "newest %d kept", train_config->keep_checkpoints);
        printf("  checkpoints %s.epoch-NNNNNN.safetensors every %d epoch%s, %s\n",
               train_config->checkpoint_prefix, train_config->checkpoint_every,
               train_config->checkpoint_every == 1 ? "" : "s", kept);
    }
    ax_build_info build = ax_build_info_get();
    printf("  precision   %s, %d thread%s, BLAS %s (%s)\n", precision_description(config->precision, config->device),
           ax_threads(), ax_threads() == 1 ? "" : "s", build.blas ? build.blas : "?",
           build.blas_kernels ? build.blas_kernels : "?");
    if (!ax_device_is_cpu(config->device)) { /* the device's GEMMs and kernels, not BLAS's */
        char name[48], info[512];
        ax_device_format(config->device, name, sizeof name);
        if (ax_device_info(config->device, info, sizeof info) != AX_STATUS_OK)
            snprintf(info, sizeof info, "%s", ax_error_message());
        printf("  device      %s: %s\n", name, info);
    }
    fflush(stdout);
}

static void print_summary(const ax_train_config *train, const ax_train_summary *summary,
                          bool classification, bool has_test)
{
    char text[32];
    format_seconds(summary->seconds, text, sizeof text);
    const bool full_batch = ax_optimizer_is_full_batch(train->optimizer);
    printf("trained %d %s%s in %s", summary->epochs_run, full_batch ? "iteration" : "epoch",
           summary->epochs_run == 1 ? "" : "s", text);
    if (summary->seconds > 0 && isfinite(summary->gflop)) {
        format_gflops(summary->gflop / summary->seconds, text, sizeof text);
        printf(" (%s)", text);
    }
    printf("\n");
    if (train->early_stop > 0 && summary->best_epoch != summary->epochs_run)
        printf("early stopping kept the weights of epoch %d (lowest validation loss)\n",
               summary->best_epoch);
    else if (train->keep_best != AX_KEEP_BEST_NONE)
        printf("kept the weights of %s %d (lowest %s loss)\n", full_batch ? "iteration" : "epoch",
               summary->best_epoch,
               train->keep_best == AX_KEEP_BEST_TEST ? "test" : "validation");
    char loss[32];
    format_loss(summary->final_train_loss, loss, sizeof loss);
    printf("final training loss %s", loss);
    if (has_test && classification && isfinite(summary->final_test_accuracy))
        printf(", test accuracy %.2f%%", 100.0 * summary->final_test_accuracy);
    printf("\n");
    if (ax_optimizer_uses(train->optimizer, AX_OPTIMIZER_SETTING_LINE_SEARCH))
        printf("%lld cost and %lld gradient evaluations (one pass computes both); stopped: %s\n",
               (long long)summary->evaluations, (long long)summary->gradient_evaluations,
               summary->stop_reason ? summary->stop_reason : "?");
    if (cli_job_size() > 1 && summary->seconds > 0)
        printf("all-reduce %.3f s of %.3f s training on rank 0 (%.1f%%, waiting for other ranks "
               "included), %d ranks\n",
               summary->communication_seconds, summary->seconds,
               100.0 * summary->communication_seconds / summary->seconds, cli_job_size());
}


static void train_data_free(train_data *data)
{
    if (data->train != data->loaded)
        ax_dataset_free(data->train);
    ax_dataset_free(data->loaded);
    ax_dataset_free(data->validation);
    ax_dataset_free(data->test);
}

/* Under mpirun: keeps this rank's shard of each set (the whole sets are
 * described first, for the header). whole_rows[i] > 0: set i (training,
 * validation, test) holds this rank's shard already, of a set of that many
 * rows (read as a shard, or synth:linear drawn up to its end). */
static int shard_data(train_data *data, const int64_t whole_rows[3])
{
    const int rank = cli_job_rank(), size = cli_job_size();
    ax_dataset *sets[3] = {data->train, data->validation, data->test};
    for (int i = 0; i < 3; i++) {
        if (!sets[i])
            continue;
        data_describe(sets[i], data->described[i], sizeof data->described[i]);
        if (whole_rows[i] > 0) { /* the shard's rows are not the set's: say how many there are */
            char rest[160];
            const char *comma = strchr(data->described[i], ',');
            snprintf(rest, sizeof rest, "%s", comma ? comma : "");
            snprintf(data->described[i], sizeof data->described[i], "%lld rows%.120s",
                     (long long)whole_rows[i], rest);
        }
    }
    if (size == 1)
        return CLI_EXIT_OK;
    int64_t first = 0, end = 0;
    int result = CLI_EXIT_OK;
    ax_dataset **shardable[2] = {&data->validation, &data->test};
    for (int i = 0; i < 2 && result == CLI_EXIT_OK; i++)
        if (*shardable[i] && whole_rows[i + 1] == 0) {
            data_shard_bounds(ax_dataset_rows(*shardable[i]), rank, size, &first, &end);
            result = data_shard(shardable[i], first, end);
        }
    if (result != CLI_EXIT_OK || whole_rows[0] > 0)
        return result;
    data_shard_bounds(ax_dataset_rows(data->train), rank, size, &first, &end);
    const bool split = data->loaded != data->train;
    result = data_shard(&data->train, first, end); /* frees the whole training set */
    if (result != CLI_EXIT_OK)
        return result;
    if (split) /* the set the split was drawn from is not needed any more */
        ax_dataset_free(data->loaded);
    data->loaded = data->train;
    return CLI_EXIT_OK;
}

static int load_data(const train_request *request, train_data *data)
{
    const data_settings *settings = &request->data_settings;
    const int rank = cli_job_rank(), size = cli_job_size();
    /* whole_rows: see shard_data. A rank of several reads only its shard of
     * each set (with --val-split, the span of rows that holds its shards of both
     * parts); synth:linear draws its rows in order, so a rank draws only the
     * rows up to its shard's end (the cut is made in shard_data). */
    int64_t whole_rows[3] = {0, 0, 0}, first = 0, end = 0;
    /* batches:DIR streamed: as asked, or (auto) where the trainer can take it. */
    data_settings streamed = *settings;
    bool full_batch = ax_optimizer_is_full_batch(request->train.optimizer) ||
                      request->train.batch_size == 0;
    for (int p = 0; p < request->phase_count; p++) /* any phase's full batch needs the set whole */
        full_batch = full_batch || request->phases[p].batch_size == 0;
    streamed.stream = settings->stream_mode == STREAM_ON ||
                      (settings->stream_mode == STREAM_AUTO && strncmp(request->data, "batches:", 8) == 0 &&
                       !full_batch && size == 1 && request->val_split == 0);
    settings = &streamed;
    data_settings train_settings = *settings;
    const bool synth = strncmp(request->data, "synth:", 6) == 0;
    int result;
    if (size > 1 && request->val_split == 0 && synth) {
        data_shard_bounds(settings->synth_rows, rank, size, &first, &end);
        train_settings.synth_rows = end > 0 ? end : 1;
        result = data_source_load("--data", request->data, settings->labels, DATA_PART_TRAIN,
                                  &train_settings, &data->loaded);
        if (result == CLI_EXIT_OK) { /* named before the cut: a copy is "(in memory)" */
            snprintf(data->source, sizeof data->source, "%s", ax_dataset_source(data->loaded));
            result = data_shard(&data->loaded, first, end);
            whole_rows[0] = settings->synth_rows;
        }
    } else if (size > 1 && request->val_split > 0) {
        result = data_source_load_split_shards("--data", request->data, settings->labels, settings,
                                               rank, size, request->val_split, request->train.seed,
                                               &data->loaded, &data->validation, whole_rows);
    } else if (size > 1 && request->val_split == 0) {
        result = data_source_load_shard("--data", request->data, settings->labels,
                                        DATA_PART_TRAIN, settings, rank, size, &data->loaded,
                                        &whole_rows[0]);
    } else {
        result = data_source_load("--data", request->data, settings->labels, DATA_PART_TRAIN,
                                  settings, &data->loaded);
    }
    /* A batch of every row is a full batch, which needs the set whole. */
    if (result == CLI_EXIT_OK && settings->stream_mode == STREAM_AUTO && streamed.stream &&
        !settings->crop && !settings->mirror && !settings->lighting && !settings->mean[0] &&
        request->train.batch_size >= ax_dataset_rows(data->loaded)) {
        ax_dataset_free(data->loaded);
        data->loaded = NULL;
        streamed.stream = false;
        train_settings = streamed;
        result = data_source_load("--data", request->data, settings->labels, DATA_PART_TRAIN,
                                  settings, &data->loaded);
    }
    if (result != CLI_EXIT_OK)
        return result;
    data->train = data->loaded;
    const char *test_spec = request->test ? request->test : request->data;
    const char *test_labels = request->test ? settings->test_labels : NULL;
    const char *test_option = request->test ? "--test" : "--data";
    if (request->test || data_source_has_test_part(request->data)) {
        if (size > 1)
            result = data_source_load_shard(test_option, test_spec, test_labels, DATA_PART_TEST,
                                            settings, rank, size, &data->test, &whole_rows[2]);
        else
            result = data_source_load(test_option, test_spec, test_labels, DATA_PART_TEST,
                                      settings, &data->test);
    }
    if (result != CLI_EXIT_OK)
        return result;
    if (request->val_split > 0 && whole_rows[1] == 0) {
        ax_status status = ax_dataset_split(data->loaded, request->val_split, request->train.seed,
                                            &data->train, &data->validation);
        if (status != AX_STATUS_OK) {
            data->train = data->loaded;
            return report_failure(status, "--val-split");
        }
    }
    if (!data->source[0])
        snprintf(data->source, sizeof data->source, "%s", ax_dataset_source(data->train));
    return shard_data(data, whole_rows);
}

/* PREFIX.phase-P for phase p (0-based), from PREFIX or a resumed run's
 * PREFIX.phase-Q. */
static const char *phase_prefix(const char *prefix, int p, char *text, size_t capacity)
{
    size_t length = strlen(prefix);
    const char *dot = strrchr(prefix, '.');
    if (dot && strncmp(dot, ".phase-", 7) == 0 && dot[7] && strspn(dot + 7, "0123456789") == strlen(dot + 7))
        length = (size_t)(dot - prefix);
    snprintf(text, capacity, "%.*s.phase-%d", (int)length, prefix, p + 1);
    return text;
}

/* The note of phase p's checkpoints: the run's val_split, the phase
 * (1-based), the epochs of the phases before it and every phase's text. */
static void phase_note(const train_request *request, int p, int epochs_before, char *note,
                       size_t capacity)
{
    size_t used = (size_t)snprintf(note, capacity, "%s;phase=%d;before=%d;phases=", request->note,
                                   p + 1, epochs_before);
    for (int q = 0; q < request->phase_count && used < capacity; q++)
        used += (size_t)snprintf(note + used, capacity - used, "%s%s", q ? "|" : "",
                                 request->phase_texts[q]);
}

/* The state phase `config` starts from: the one carried while the kind
 * stays (and, for SGD, whether it keeps a velocity); else an empty one;
 * none for cg and lbfgs, whose phase empties it. */
static ax_status carry_state(ax_optimizer_state **carried, ax_train_config *config)
{
    config->optimizer_state = NULL;
    ax_optimizer_kind kind = AX_OPTIMIZER_SGD;
    int arrays = 0;
    const bool full_batch = ax_optimizer_is_full_batch(config->optimizer);
    const int wanted = config->optimizer == AX_OPTIMIZER_SGD ? (config->momentum > 0.0) : 2;
    if (ax_optimizer_state_describe(*carried, &kind, NULL, NULL, &arrays, NULL) &&
        (full_batch || kind != config->optimizer || arrays != wanted)) {
        ax_optimizer_state_free(*carried);
        *carried = NULL;
        ax_status status = ax_optimizer_state_create(carried);
        if (status != AX_STATUS_OK)
            return status;
    }
    if (!full_batch)
        config->optimizer_state = *carried;
    return AX_STATUS_OK;
}

static int run_training(const train_request *request, train_data *data)
{
    /* A replica's own network, not the one request->net may point into. */
    ax_net_config config = request->start_net ? *ax_net_config_get(request->start_net) : request->net;
    ax_layer_spec auto_layers[3];
    if (!request->start_net) {
        config.input_width = ax_dataset_features(data->train);
        /* images (IDX, batches:DIR, 4-D .npy) give convolutions their shape */
        int64_t shape[3];
        ax_dataset_image_shape(data->train, shape);
        memcpy(config.input_shape, shape, sizeof shape);
        int64_t classes = ax_dataset_classes(data->loaded);
        if (data->test && ax_dataset_classes(data->test) > classes)
            classes = ax_dataset_classes(data->test);
        if (strcmp(request->layers, "auto") == 0)
            default_layers(&config, classes, ax_dataset_targets(data->loaded), auto_layers);
    }

    char layout[1024], name[1100];
    ax_layers_format(&config, layout, sizeof layout);
    snprintf(name, sizeof name, "the network %s", layout);
    int result = check_data_fits(&config, data->loaded, name);
    if (result == CLI_EXIT_OK && data->test)
        result = check_data_fits(&config, data->test, name);
    if (result == CLI_EXIT_OK && data->test &&
        (ax_dataset_classes(data->test) > 0) != (ax_dataset_classes(data->loaded) > 0)) {
        fprintf(stderr, "axon: %s and %s differ in kind: one has class labels, the other numbers\n",
                ax_dataset_source(data->loaded), ax_dataset_source(data->test));
        result = CLI_EXIT_RUNTIME;
    }
    if (result != CLI_EXIT_OK) {
        ax_net_free(request->start_net);
        return result;
    }

    ax_net *net = request->start_net;
    ax_status status = AX_STATUS_OK;
    if (!net)
        status = ax_net_create(&config, &net);
    if (status != AX_STATUS_OK)
        return report_failure(status, status == AX_STATUS_UNSUPPORTED && !ax_device_is_cpu(config.device)
                                          ? "--device" : "--layers");
    bool classification = ax_dataset_classes(data->loaded) > 0;
    if (!request->quiet)
        print_header(request, net, data);
    if (request->profile || request->profile_json)
        ax_net_profile_enable(net, true);

    metrics_file metrics;
    bool metrics_opened = request->resumed
                              ? metrics_open_resumed(&metrics, request->metrics_path,
                                                     request->epochs_before +
                                                         ax_train_state_epochs_done(request->resumed))
                              : metrics_open(&metrics, request->metrics_path);
    if (!metrics_opened) {
        ax_net_free(net);
        return CLI_EXIT_RUNTIME;
    }
    progress_display display;
    progress_init(&display, request->quiet, classification, &metrics);
    /* --phase: one ax_train per phase, the optimizer state carried. */
    const int phases = request->phase_count;
    const int last = phases > 0 ? phases - 1 : 0;
    ax_optimizer_state *carried = NULL;
    if (phases > 0)
        status = ax_optimizer_state_create(&carried);
    ax_train_config train_config = request->train;
    ax_train_summary summary = ax_train_summary_empty();
    char prefix[4200], note[NOTE_CAPACITY + 128];
    int epochs_before = request->epochs_before;
    char stop_message[512] = ""; /* ax_train's message, kept before other calls replace it */
    char stop_phase[32] = "";    /* "phase P/N: " of the phase that stopped, with --phase */
    progress_catch_interrupt();
    for (int p = phases > 0 ? request->first_phase : 0; p <= last && status == AX_STATUS_OK; p++) {
        if (phases > 0) {
            const ax_train_config *run = &request->train;
            train_config = request->phases[p];
            train_config.checkpoint_every = run->checkpoint_every;
            train_config.keep_checkpoints = run->keep_checkpoints;
            train_config.checkpoint_prefix =
                run->checkpoint_prefix ? phase_prefix(run->checkpoint_prefix, p, prefix, sizeof prefix)
                                       : NULL;
            train_config.check_replicas = run->check_replicas;
            train_config.adapt_threads = run->adapt_threads;
            train_config.resume = p == request->first_phase ? request->resumed : NULL;
            phase_note(request, p, epochs_before, note, sizeof note);
            train_config.checkpoint_note = note;
            status = carry_state(&carried, &train_config);
            if (status != AX_STATUS_OK)
                break;
            display.phase = metrics.phase = p + 1;
            display.phases = phases;
            metrics.epoch_offset = epochs_before;
            if (!request->quiet) {
                char lead[64];
                snprintf(lead, sizeof lead, "phase %d/%d   ", p + 1, phases);
                print_training(lead, &train_config);
                fflush(stdout);
            }
        }
        display.step_name = ax_optimizer_is_full_batch(train_config.optimizer) ? "iteration" : "epoch";
        display.show_rate = train_config.lr_schedule != AX_LR_SCHEDULE_CONSTANT ||
                            train_config.warmup_steps > 0;
        train_config.progress = progress_callback;
        train_config.progress_user = &display;
        train_config.communicator = cli_job_communicator();
        summary = ax_train_summary_empty();
        status = ax_train(net, data->train, data->validation, data->test, &train_config, &summary);
        snprintf(stop_message, sizeof stop_message, "%s", ax_error_message());
        if (phases > 0)
            snprintf(stop_phase, sizeof stop_phase, "phase %d/%d: ", p + 1, phases);
        if (status == AX_STATUS_OK && p < last && !request->quiet) {
            progress_clear_line(&display);
            print_summary(&train_config, &summary, classification, data->test != NULL);
        }
        epochs_before += summary.epochs_run;
    }
    ax_optimizer_state_free(carried);
    progress_clear_line(&display);
    bool metrics_ok = metrics_close(&metrics);

    bool interrupted = status == AX_STATUS_INTERRUPTED && !display.metrics_failed;
    /* These outcomes every rank reaches together (the losses and the stop
     * are agreed by sums): rank 0 reports them and the job ends normally. */
    const bool shared = status == AX_STATUS_OK || status == AX_STATUS_INTERRUPTED ||
                        status == AX_STATUS_DIVERGED;
    if (shared)
        cli_job_outcome_shared();
    const bool speaks = !shared || cli_job_rank() == 0;
    if (status != AX_STATUS_OK && !interrupted) {
        /* No file prefixed: the library names the file at fault (a
         * checkpoint's, a streamed batch's), and the data are not the cause
         * of a divergence or of a full disk. */
        if (!display.metrics_failed && speaks)
            report_failure(status, NULL);
        ax_net_free(net);
        return CLI_EXIT_RUNTIME;
    }
    if (interrupted && speaks) {
        /* Where training stopped, from the library: the epoch and batch the
         * checkpoint records. The progress display may not have seen that
         * epoch yet (its lines come at intervals, and under mpirun a stop
         * voted by another rank lands a step later). */
        const char *message = stop_message, *cut = strstr(message, "; checkpoint written");
        int length = cut ? (int)(cut - message) : (int)strlen(message);
        fprintf(stderr, "axon: %s%.*s\n", stop_phase, length, message);
        if (train_config.checkpoint_prefix)
            fprintf(stderr, "axon: checkpoint written to %s.interrupted.safetensors; continue with "
                            "axon train --resume %s.interrupted.safetensors --data ...\n",
                    train_config.checkpoint_prefix, train_config.checkpoint_prefix);
    } else if (!request->quiet) {
        print_summary(&train_config, &summary, classification, data->test != NULL);
    }
    result = interrupted ? CLI_EXIT_INTERRUPTED : (metrics_ok ? CLI_EXIT_OK : CLI_EXIT_RUNTIME);
    if (!interrupted && (request->profile || request->profile_json)) {
        int64_t rows = ax_dataset_rows(data->train);
        int64_t batch_rows = train_config.batch_size == 0 || train_config.batch_size > rows
                                 ? rows : train_config.batch_size;
        int profile_result = profile_report(net, &summary, batch_rows, !request->quiet,
                                            request->profile_json);
        if (profile_result != CLI_EXIT_OK)
            result = profile_result;
    }
    /* A signal from here on finds the handlers still installed: the
     * trained run completes and says so (a test sends one at this moment
     * through AXON_TEST_FAULT). */
    ax_test_fault("saving", 1);
    if (request->out) {
        status = ax_net_save(net, request->out);
        if (status != AX_STATUS_OK) {
            result = report_failure(status, request->out);
        } else if (interrupted) {
            fprintf(stderr, "axon: saved the weights reached when interrupted to %s\n", request->out);
        } else if (!request->quiet) {
            printf("saved %s\n", request->out);
        }
    }
    if (!interrupted && progress_interrupted())
        fprintf(stderr, "axon: %s arrived after training had ended; the run completed%s\n",
                progress_interrupt_name(), request->out ? " and its model was saved" : "");
    fflush(stdout);
    ax_net_free(net);
    return result;
}

/* --init-from FILE: the network to start from, before hours of loading data. */
static int load_start_model(train_request *request)
{
    int result = load_model_on_device("--init-from", request->init_from, request->net.precision,
                                      request->net.device, &request->start_net);
    if (result == CLI_EXIT_OK)
        request->net = *ax_net_config_get(request->start_net);
    return result;
}

/* One rank's whole run: under mpirun or --replicas this rank's, in one
 * process everything. Frees request's resumed network and state. */
static int train_rank(train_request *request)
{
    int result = CLI_EXIT_OK;
    if (cli_job_rank() != 0) { /* rank 0 alone prints and writes files */
        request->quiet = true;
        request->out = request->metrics_path = request->profile_json = NULL;
        request->profile = false;
    }
    if (cli_job_rank() == 0) /* the rank that writes the files */
        result = check_files(request);
    if (result == CLI_EXIT_OK && request->init_from)
        result = load_start_model(request);
    train_data data = {0};
    if (result == CLI_EXIT_OK)
        result = load_data(request, &data);
    if (result == CLI_EXIT_OK)
        result = run_training(request, &data); /* frees request->start_net */
    else
        ax_net_free(request->start_net);
    train_data_free(&data);
    ax_train_state_free(request->resumed);
    return result;
}

/* --replicas: rank `rank`'s thread (replicas.c). Rank 0 takes over the
 * checkpoint command_train read; the others read their own copy of it. */
static int train_replica(void *user, int rank)
{
    train_request request = *(const train_request *)user;
    if (rank != 0) {
        request.start_net = NULL;
        request.resumed = NULL;
        if (request.resume) {
            ax_train_config recorded;
            ax_status status = ax_checkpoint_load(request.resume, &request.start_net, &recorded,
                                                  &request.resumed);
            if (status != AX_STATUS_OK)
                return report_failure(status, request.resume);
        }
    }
    return train_rank(&request);
}

/* --replicas P > 1: what it cannot be combined with. */
static bool replicas_allowed(const cli_args *args, const train_request *request)
{
    if (cli_job_size() > 1) {
        cli_error(args, "--replicas: this run is one of %d MPI ranks already; give mpirun -np P "
                        "or --replicas P, not both", cli_job_size());
        return false;
    }
    if (!ax_device_is_cpu(request->net.device)) {
        cli_error(args, "--replicas trains replicas on the CPU's cores; with a --device "
                        "leave it out (one device serves one replica)");
        return false;
    }
    return true;
}

int command_train(int argc, char **argv)
{
    cli_args args;
    int result = cli_parse("train", train_options, (int)(sizeof train_options / sizeof *train_options),
                           argc, argv, 1, &args);
    if (result != CLI_EXIT_OK)
        return result;
    if (args.help) {
        cli_print_help(&args, train_usage, train_description, stdout);
        return CLI_EXIT_OK;
    }
    train_request request;
    result = apply_threads(&args);
    if (result != CLI_EXIT_OK)
        return result;
    bool request_ok = read_request(&args, &request) &&
                      cli_get_flag(&args, "check-replicas", &request.train.check_replicas);
    /* The --layers layout, parsed once: the ranks and replicas share it. */
    ax_net_config parsed = request.net;
    if (!request_ok) {
        result = request.resume_failed ? CLI_EXIT_RUNTIME : CLI_EXIT_USAGE;
        ax_net_free(request.start_net);
        ax_train_state_free(request.resumed);
        ax_net_config_release(&parsed);
        return result;
    }
    int replicas = 1;
    if (!cli_get_int(&args, "replicas", 1, 4096, &replicas) ||
        (replicas > 1 && !replicas_allowed(&args, &request))) {
        ax_net_free(request.start_net);
        ax_train_state_free(request.resumed);
        ax_net_config_release(&parsed);
        return CLI_EXIT_USAGE;
    }
    if (replicas == 1) {
        result = train_rank(&request);
    } else {
        /* --threads N over P replicas: N/P each (at least 1). */
        const int threads_each = ax_threads() / replicas > 0 ? ax_threads() / replicas : 1;
        result = replicas_run(replicas, threads_each, train_replica, &request);
    }
    ax_net_config_release(&parsed);
    return result;
}
