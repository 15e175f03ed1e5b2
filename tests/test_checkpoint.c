/* test_checkpoint.c: checkpoints and resume. A run of N epochs, and the same
 * run stopped (after k epochs, or inside an epoch by the progress callback),
 * freed entirely and resumed from its checkpoint file, must end with
 * bit-identical weights: SGD with momentum, dropout and shuffling; Adam;
 * early stopping; float32 and float64; one thread. The same for full-batch
 * CG and L-BFGS (one epoch is one iteration), with and without keep_best,
 * whose checkpoints carry the kind's own state and the line-search cache's
 * X W^T. Also: only the newest K checkpoints are kept, a divergence leaves
 * the old ones untouched, and corrupt files, other data, changed options and
 * edited or mismatched optimizer states are refused; so is metadata edited
 * by hand (a field missing, of another type, out of range or unparsable; a
 * section not JSON or not an object), naming the file, section and field. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/random.h"
#include "io/safetensors.h"
#include "test_util.h"

enum { ROWS = 300, FEATURES = 6, CLASSES = 3, EPOCHS = 6 };

static char folder[256];

/* A learnable three-class problem drawn from seed; classes by the sign of
 * two linear functions of the features. */
static ax_dataset *make_data(int64_t rows, uint64_t seed)
{
    ax_dataset *data = NULL;
    if (ax_dataset_create(rows, FEATURES, CLASSES, 0, &data) != AX_STATUS_OK)
        return NULL;
    ax_rng rng;
    ax_rng_seed(&rng, seed);
    float *x = ax_dataset_features_data(data);
    int32_t *labels = ax_dataset_labels_data(data);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < FEATURES; c++)
            x[r * FEATURES + c] = (float)ax_rng_normal(&rng);
        double a = x[r * FEATURES] + 0.5 * x[r * FEATURES + 1];
        double b = x[r * FEATURES + 2] - x[r * FEATURES + 3];
        labels[r] = a > 0 ? 0 : (b > 0 ? 1 : 2);
    }
    return data;
}

static ax_net *make_net(ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    config.precision = precision;
    config.seed = 7;
    if (ax_layers_parse("16:relu,12:tanh,3:softmax", &config) != AX_STATUS_OK)
        return NULL;
    ax_net *net = NULL;
    ax_status status = ax_net_create(&config, &net);
    ax_net_config_release(&config);
    return status == AX_STATUS_OK ? net : NULL;
}

static double *parameters_of(const ax_net *net)
{
    double *values = malloc((size_t)ax_net_parameter_count(net) * sizeof(double));
    if (values)
        ax_net_parameters_get(net, values);
    return values;
}

static bool same_parameters(const double *a, const double *b, int64_t count)
{
    return a && b && memcmp(a, b, (size_t)count * sizeof(double)) == 0;
}

static bool exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

/* Stops a run at the stop_at-th progress call inside an epoch. */
typedef struct stopper {
    int calls, stop_at;
} stopper;

static bool stop_after(const ax_progress *progress, void *user)
{
    stopper *s = user;
    if (progress->epoch_done)
        return true;
    return ++s->calls < s->stop_at;
}

/* Resumes from path with epochs total and returns the final weights. */
static double *resume(const char *path, int epochs, const ax_dataset *train,
                      const ax_dataset *validation)
{
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config config;
    double *values = NULL;
    ax_status status = ax_checkpoint_load(path, &net, &config, &state);
    CHECK_OK(status);
    if (status != AX_STATUS_OK)
        return NULL;
    CHECK(config.resume == state);
    config.epochs = epochs;
    ax_train_summary summary = ax_train_summary_empty();
    status = ax_train(net, train, validation, NULL, &config, &summary);
    CHECK_OK(status);
    if (status == AX_STATUS_OK) {
        CHECK(summary.epochs_run >= ax_train_state_epochs_done(state));
        values = parameters_of(net);
    }
    ax_net_free(net);
    ax_train_state_free(state);
    return values;
}

static void test_case(const char *name, ax_precision precision, ax_train_config config,
                      const ax_dataset *train, const ax_dataset *validation)
{
    printf("case %s, %s\n", name, precision == AX_PRECISION_F64 ? "f64" : "f32");
    char prefix[512], path[600];
    snprintf(prefix, sizeof prefix, "%s/%s-%d", folder, name, (int)precision);
    ax_train_summary summary = ax_train_summary_empty();

    /* The uninterrupted run. */
    config.epochs = EPOCHS;
    ax_net *net = make_net(precision);
    CHECK(net != NULL);
    if (!net)
        return;
    const int64_t count = ax_net_parameter_count(net);
    CHECK_OK(ax_train(net, train, validation, NULL, &config, &summary));
    double *straight = parameters_of(net);
    ax_net_free(net);

    /* The same with checkpoints every epoch: writing them changes nothing. */
    ax_train_config checkpointed = config;
    checkpointed.checkpoint_every = 1;
    checkpointed.checkpoint_prefix = prefix;
    checkpointed.checkpoint_note = "note text";
    net = make_net(precision);
    CHECK_OK(ax_train(net, train, validation, NULL, &checkpointed, &summary));
    double *with_checkpoints = parameters_of(net);
    ax_net_free(net);
    CHECK(same_parameters(straight, with_checkpoints, count));
    /* keep_checkpoints 2: epochs 5 and 6 are left. */
    snprintf(path, sizeof path, "%s.epoch-000004.safetensors", prefix);
    CHECK(!exists(path));
    snprintf(path, sizeof path, "%s.epoch-000006.safetensors", prefix);
    CHECK(exists(path));

    /* Stopped after 3 epochs, everything freed, resumed to 6. */
    for (int k = 1; k <= 6; k++) {
        snprintf(path, sizeof path, "%s.epoch-%06d.safetensors", prefix, k);
        remove(path);
    }
    checkpointed.epochs = 3;
    net = make_net(precision);
    CHECK_OK(ax_train(net, train, validation, NULL, &checkpointed, &summary));
    ax_net_free(net);
    snprintf(path, sizeof path, "%s.epoch-000003.safetensors", prefix);
    double *resumed = resume(path, EPOCHS, train, validation);
    CHECK(same_parameters(straight, resumed, count));
    free(resumed);

    /* The note comes back (the resumed run went on writing checkpoints:
     * epoch 3's is gone, keep_checkpoints being 2). */
    CHECK(!exists(path));
    snprintf(path, sizeof path, "%s.epoch-000006.safetensors", prefix);
    ax_net *loaded = NULL;
    ax_train_state *state = NULL;
    ax_train_config loaded_config;
    CHECK_OK(ax_checkpoint_load(path, &loaded, &loaded_config, &state));
    if (state) {
        CHECK(strcmp(ax_train_state_note(state), "note text") == 0);
        CHECK(ax_train_state_epochs_done(state) == EPOCHS);
        CHECK(loaded_config.learning_rate == config.learning_rate);
        /* Changed options and other data are refused. */
        loaded_config.epochs = EPOCHS;
        loaded_config.learning_rate *= 2;
        ax_train_summary ignored = ax_train_summary_empty();
        CHECK_FAILS(ax_train(loaded, train, validation, NULL, &loaded_config, &ignored),
                    AX_STATUS_BAD_ARGUMENT, "learning rate differs");
        loaded_config.learning_rate = config.learning_rate;
        loaded_config.epochs = EPOCHS - 1;
        CHECK_FAILS(ax_train(loaded, train, validation, NULL, &loaded_config, &ignored),
                    AX_STATUS_BAD_ARGUMENT, "at epoch 6");
        loaded_config.epochs = EPOCHS;
        ax_dataset *other = make_data(ROWS, 99);
        CHECK_FAILS(ax_train(loaded, other, validation, NULL, &loaded_config, &ignored),
                    AX_STATUS_BAD_DATA, "not its values");
        ax_dataset_free(other);
    }
    ax_net_free(loaded);
    ax_train_state_free(state);

    /* Stopped inside epoch 3 by the progress callback (as Ctrl-C would). */
    stopper stop = {.calls = 0, .stop_at = 2 * ((ROWS + 31) / 32) + 4};
    ax_train_config stopping = checkpointed;
    stopping.epochs = EPOCHS;
    stopping.progress = stop_after;
    stopping.progress_user = &stop;
    stopping.progress_interval = 0.0;
    net = make_net(precision);
    CHECK_FAILS(ax_train(net, train, validation, NULL, &stopping, &summary), AX_STATUS_INTERRUPTED,
                ".interrupted.safetensors");
    ax_net_free(net);
    snprintf(path, sizeof path, "%s.interrupted.safetensors", prefix);
    CHECK(exists(path));
    resumed = resume(path, EPOCHS, train, validation);
    CHECK(same_parameters(straight, resumed, count));
    free(resumed);

    free(straight);
    free(with_checkpoints);
}

/* Stops a run after its stop_epoch-th epoch (as Ctrl-C between CG iterations would). */
static bool stop_after_epoch(const ax_progress *progress, void *user)
{
    const int *stop_epoch = user;
    return !(progress->epoch_done && progress->epoch >= *stop_epoch);
}

enum { LINE_EPOCHS = 14 };

/* CG or L-BFGS: the run of LINE_EPOCHS iterations, the same run resumed
 * from its checkpoint after iteration 5 (written every iteration, and by a
 * stop after iteration 9), freed entirely in between, end bit-identical,
 * with the same kept best weights and best epoch. */
static void test_line_search_case(const char *name, ax_precision precision, ax_train_config config,
                                  const ax_dataset *train, const ax_dataset *validation,
                                  const ax_dataset *test)
{
    printf("case %s, %s\n", name, precision == AX_PRECISION_F64 ? "f64" : "f32");
    char prefix[512], path[600];
    snprintf(prefix, sizeof prefix, "%s/%s-%d", folder, name, (int)precision);
    config.epochs = LINE_EPOCHS;
    ax_train_summary straight_summary = ax_train_summary_empty(), summary = ax_train_summary_empty();
    ax_net *net = make_net(precision);
    CHECK(net != NULL);
    if (!net)
        return;
    const int64_t count = ax_net_parameter_count(net);
    CHECK_OK(ax_train(net, train, validation, test, &config, &straight_summary));
    CHECK(straight_summary.epochs_run == LINE_EPOCHS); /* no early convergence: all resumed */
    double *straight = parameters_of(net);
    ax_net_free(net);
    if (config.keep_best != AX_KEEP_BEST_NONE) /* the kept weights are not the last ones */
        CHECK(straight_summary.best_epoch >= 1 && straight_summary.best_epoch < LINE_EPOCHS);

    /* With checkpoints every iteration, all kept: the same weights. */
    ax_train_config checkpointed = config;
    checkpointed.checkpoint_every = 1;
    checkpointed.checkpoint_prefix = prefix;
    checkpointed.keep_checkpoints = 0;
    net = make_net(precision);
    CHECK_OK(ax_train(net, train, validation, test, &checkpointed, &summary));
    double *with_checkpoints = parameters_of(net);
    ax_net_free(net);
    CHECK(same_parameters(straight, with_checkpoints, count));

    /* Resumed from iteration 5 of that run. */
    for (int from = 5; from <= 12; from += 7) {
        snprintf(path, sizeof path, "%s.epoch-%06d.safetensors", prefix, from);
        ax_net *resumed_net = NULL;
        ax_train_state *state = NULL;
        ax_train_config resumed_config;
        CHECK_OK(ax_checkpoint_load(path, &resumed_net, &resumed_config, &state));
        if (!state)
            continue;
        CHECK(resumed_config.keep_best == config.keep_best);
        CHECK(resumed_config.optimizer == config.optimizer);
        resumed_config.epochs = LINE_EPOCHS;
        CHECK_OK(ax_train(resumed_net, train, validation, test, &resumed_config, &summary));
        double *resumed = parameters_of(resumed_net);
        CHECK(same_parameters(straight, resumed, count));
        CHECK(summary.epochs_run == LINE_EPOCHS && summary.best_epoch == straight_summary.best_epoch);
        CHECK(summary.evaluations == straight_summary.evaluations &&
              summary.gradient_evaluations == straight_summary.gradient_evaluations);
        CHECK(summary.final_train_loss == straight_summary.final_train_loss);
        free(resumed);
        ax_net_free(resumed_net);
        ax_train_state_free(state);
    }

    /* Stopped after iteration 9 (PREFIX.interrupted), resumed. */
    int stop_epoch = 9;
    ax_train_config stopping = checkpointed;
    stopping.checkpoint_every = 0;
    stopping.progress = stop_after_epoch;
    stopping.progress_user = &stop_epoch;
    net = make_net(precision);
    CHECK_FAILS(ax_train(net, train, validation, test, &stopping, &summary), AX_STATUS_INTERRUPTED,
                "after epoch 9");
    ax_net_free(net);
    snprintf(path, sizeof path, "%s.interrupted.safetensors", prefix);
    ax_net *resumed_net = NULL;
    ax_train_state *state = NULL;
    ax_train_config resumed_config;
    CHECK_OK(ax_checkpoint_load(path, &resumed_net, &resumed_config, &state));
    if (state) {
        CHECK(ax_train_state_epochs_done(state) == 9);
        resumed_config.epochs = LINE_EPOCHS;
        CHECK_OK(ax_train(resumed_net, train, validation, test, &resumed_config, &summary));
        double *resumed = parameters_of(resumed_net);
        CHECK(same_parameters(straight, resumed, count));
        free(resumed);
    }
    ax_net_free(resumed_net);
    ax_train_state_free(state);
    free(straight);
    free(with_checkpoints);
}

/* Copies checkpoint `from` to `to` with one edit: in metadata entry
 * `section`, the first `find` replaced by `replace`; or the tensor `tensor`
 * dropped (replace NULL) or holding `length` values set to `value`. */
static void edit_checkpoint(const char *from, const char *to, const char *section, const char *find,
                            const char *replace, const char *tensor, int64_t length, double value)
{
    ax_safetensors_file *file = NULL;
    CHECK_OK(ax_safetensors_read(from, &file));
    if (!file)
        return;
    ax_safetensors_tensor tensors[32];
    int count = 0;
    double *values = NULL;
    for (int i = 0; i < ax_safetensors_count(file) && count < 32; i++) {
        const ax_safetensors_tensor *t = ax_safetensors_tensor_at(file, i);
        if (tensor && strcmp(t->name, tensor) == 0) {
            if (length < 0)
                continue; /* dropped */
            values = malloc((size_t)length * sizeof *values);
            for (int64_t j = 0; values && j < length; j++)
                values[j] = value;
            tensors[count] = *t;
            tensors[count].dtype = AX_SAFETENSORS_F64;
            tensors[count].shape[0] = length;
            tensors[count++].data = values;
            continue;
        }
        tensors[count++] = *t;
    }
    const char *keys[16], *texts[16];
    char *edited = NULL;
    int entries = ax_safetensors_metadata_count(file);
    for (int i = 0; i < entries && i < 16; i++) {
        keys[i] = ax_safetensors_metadata_key(file, i);
        texts[i] = ax_safetensors_metadata(file, keys[i]);
        const char *at = section && strcmp(keys[i], section) == 0 ? strstr(texts[i], find) : NULL;
        if (section && strcmp(keys[i], section) == 0)
            CHECK(at != NULL);
        if (at) {
            /* find ending in ":\"" (a key of a string): its whole value is replaced. */
            size_t cut = strlen(find);
            if (cut >= 2 && strcmp(find + cut - 2, ":\"") == 0) {
                const char *close = strchr(at + cut, '"');
                cut = close ? (size_t)(close - at) : cut;
            }
            size_t size = strlen(texts[i]) - cut + strlen(replace) + 1;
            edited = malloc(size);
            if (edited) {
                snprintf(edited, size, "%.*s%s%s", (int)(at - texts[i]), texts[i], replace, at + cut);
                texts[i] = edited;
            }
        }
    }
    CHECK_OK(ax_safetensors_write(to, tensors, count, keys, texts, entries));
    free(edited);
    free(values);
    ax_safetensors_free(file);
}

static void check_refused(const char *path, const char *text)
{
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config config;
    CHECK_FAILS(ax_checkpoint_load(path, &net, &config, &state), AX_STATUS_BAD_FILE, text);
    CHECK(net == NULL && state == NULL);
    /* Every refusal names the file. */
    CHECK(strstr(ax_error_message(), path) != NULL);
}

/* Edited or mismatched CG and L-BFGS states, and changed options. */
static void test_line_search_refusals(const ax_dataset *train)
{
    char prefix[512], cg_path[600], lbfgs_path[600], bad[600];
    snprintf(bad, sizeof bad, "%s/edited.safetensors", folder);
    for (int kind = 0; kind < 2; kind++) {
        ax_train_config config = ax_train_defaults();
        config.optimizer = kind ? AX_OPTIMIZER_LBFGS : AX_OPTIMIZER_CG;
        config.lbfgs_memory = 3;
        config.batch_size = 0;
        config.epochs = 6;
        config.checkpoint_every = 6;
        snprintf(prefix, sizeof prefix, "%s/refuse-%s", folder, kind ? "lbfgs" : "cg");
        config.checkpoint_prefix = prefix;
        ax_train_summary summary = ax_train_summary_empty();
        ax_net *net = make_net(AX_PRECISION_F32);
        CHECK_OK(ax_train(net, train, NULL, NULL, &config, &summary));
        ax_net_free(net);
        snprintf(kind ? lbfgs_path : cg_path, sizeof cg_path, "%s.epoch-000006.safetensors", prefix);
    }
    const int64_t n = 6 * 16 + 16 + 16 * 12 + 12 + 12 * 3 + 3; /* 355 */

    /* A CG state in an Adam run; an L-BFGS state in a CG run. */
    edit_checkpoint(cg_path, bad, "train", "\"optimizer\":\"cg\"", "\"optimizer\":\"adam\"", NULL, 0, 0);
    check_refused(bad, "is not part of adam's state");
    edit_checkpoint(lbfgs_path, bad, "train", "\"optimizer\":\"lbfgs\"", "\"optimizer\":\"cg\"", NULL, 0, 0);
    check_refused(bad, "is not part of cg's state");
    /* Arrays missing, of the wrong length, or holding NaN. */
    edit_checkpoint(cg_path, bad, NULL, NULL, NULL, "optimizer.d", -1, 0);
    check_refused(bad, "cg's optimizer state lacks the array \"d\"");
    edit_checkpoint(cg_path, bad, NULL, NULL, NULL, "optimizer.g", n - 1, 0.5);
    check_refused(bad, "\"g\" has 354 values; this state needs 355");
    edit_checkpoint(cg_path, bad, NULL, NULL, NULL, "optimizer.d", n, NAN);
    check_refused(bad, "tensor \"optimizer.d\" holds a NaN");
    edit_checkpoint(lbfgs_path, bad, NULL, NULL, NULL, "optimizer.s", 2 * n, 0.5);
    check_refused(bad, "\"s\" has 710 values; this state needs 1065");
    edit_checkpoint(lbfgs_path, bad, NULL, NULL, NULL, "optimizer.rho", 3, -1.0);
    check_refused(bad, "\"rho\" is -1 at index 0; it must be positive");
    /* Scalars: NaN or infinite, out of range, missing, unknown. */
    edit_checkpoint(cg_path, bad, "state", "\"f\":\"", "\"f\":\"nan", NULL, 0, 0);
    check_refused(bad, "cg's optimizer state scalar \"f\" is nan, not a finite number");
    edit_checkpoint(lbfgs_path, bad, "state", "\"f_previous\":\"", "\"f_previous\":\"-inf", NULL, 0, 0);
    check_refused(bad, "scalar \"f_previous\" is -inf, not a finite number");
    edit_checkpoint(lbfgs_path, bad, "state", "\"gamma\":\"", "\"gamma\":\"0x0p+0", NULL, 0, 0);
    check_refused(bad, "\"gamma\" is 0; with pairs held it must be positive");
    edit_checkpoint(cg_path, bad, "state", "\"f\":", "\"momentum\":\"0x1p+0\",\"f\":", NULL, 0, 0);
    check_refused(bad, "scalar \"momentum\" is not part of cg's state");
    edit_checkpoint(cg_path, bad, "state", "\"started\":\"0x1p+0\"", "\"started\":\"0x1p+1\"", NULL, 0, 0);
    check_refused(bad, "\"started\" is 2, not 0 or 1");
    edit_checkpoint(lbfgs_path, bad, "state", "\"pairs\":\"0x1.8p+1\"", "\"pairs\":\"0x1p+2\"", NULL, 0, 0);
    check_refused(bad, "\"pairs\" is 4; it must be a whole number from 0 to the memory size 3");
    edit_checkpoint(lbfgs_path, bad, "state", "\"pairs\":\"0x1.8p+1\",", "", NULL, 0, 0);
    check_refused(bad, "lacks the scalar \"pairs\"");
    /* The line-search cache: its base without its count, or of another size. */
    edit_checkpoint(cg_path, bad, "state", "\"line_searches\":6,", "", NULL, 0, 0);
    check_refused(bad, "needs both tensor \"line_cache.base\" and field \"line_searches\"");
    edit_checkpoint(cg_path, bad, "state", "\"line_searches\":6,", "\"line_searches\":17,", NULL, 0, 0);
    check_refused(bad, "field \"line_searches\" must be from 0 to 16");
    edit_checkpoint(cg_path, bad, NULL, NULL, NULL, "line_cache.base", 16, 0.5);
    check_refused(bad, "tensor \"line_cache.base\" should have shape (4800)");
    edit_checkpoint(cg_path, bad, "train", "\"keep_best\":\"none\"", "\"keep_best\":\"always\"", NULL, 0, 0);
    check_refused(bad, "keep_best 'always' is not none, validation or test");

    /* An unedited copy loads, and changed line-search options are refused. */
    edit_checkpoint(lbfgs_path, bad, "train", "\"gtol\":", "\"gtol\":", NULL, 0, 0);
    ax_net *net = NULL;
    ax_train_state *state = NULL;
    ax_train_config config;
    CHECK_OK(ax_checkpoint_load(bad, &net, &config, &state));
    if (state) {
        ax_train_summary summary = ax_train_summary_empty();
        config.epochs = 8;
        config.checkpoint_every = 0;
        config.lbfgs_memory = 4;
        CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                    "the L-BFGS memory differs");
        config.lbfgs_memory = 3;
        config.gtol *= 2;
        CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                    "gtol differs");
        config.gtol /= 2;
        config.keep_best = AX_KEEP_BEST_TEST;
        CHECK_FAILS(ax_train(net, train, NULL, train, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                    "keeping the best weights differs");
        config.keep_best = AX_KEEP_BEST_NONE;
        CHECK_OK(ax_train(net, train, NULL, NULL, &config, &summary));
        CHECK(summary.epochs_run == 8);
    }
    ax_net_free(net);
    ax_train_state_free(state);
}

/* The first occurrence of text in bytes[0, size), or NULL. */
static char *find_bytes(char *bytes, size_t size, const char *text)
{
    size_t length = strlen(text);
    for (size_t i = 0; i + length <= size; i++)
        if (memcmp(bytes + i, text, length) == 0)
            return bytes + i;
    return NULL;
}

static void test_refusals(const ax_dataset *train)
{
    char prefix[512], path[600];
    snprintf(prefix, sizeof prefix, "%s/refuse", folder);
    ax_train_config config = ax_train_defaults();
    config.batch_size = 32;
    config.epochs = 2;
    config.checkpoint_every = 1;
    config.checkpoint_prefix = prefix;
    ax_train_summary summary = ax_train_summary_empty();
    ax_net *net = make_net(AX_PRECISION_F32);
    CHECK_OK(ax_train(net, train, NULL, NULL, &config, &summary));
    ax_net_free(net);
    snprintf(path, sizeof path, "%s.epoch-000002.safetensors", prefix);

    /* A truncated checkpoint. */
    FILE *in = fopen(path, "rb");
    CHECK(in != NULL);
    static char bytes[1 << 16];
    size_t size = in ? fread(bytes, 1, sizeof bytes, in) : 0;
    if (in)
        fclose(in);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/truncated.safetensors", folder);
    FILE *out = fopen(bad, "wb");
    CHECK(out != NULL);
    if (out) {
        fwrite(bytes, 1, size - 100, out);
        fclose(out);
    }
    ax_net *loaded = NULL;
    ax_train_state *state = NULL;
    ax_train_config loaded_config;
    CHECK_FAILS(ax_checkpoint_load(bad, &loaded, &loaded_config, &state), AX_STATUS_BAD_FILE,
                "truncated.safetensors");
    CHECK(loaded == NULL && state == NULL);

    /* A random-state field edited to nonsense (same length, so the file stays valid). */
    char *field = find_bytes(bytes, size, "\\\"rng0\\\":\\\"");
    CHECK(field != NULL);
    if (field) {
        memcpy(field + 11, "zzzz", 4);
        out = fopen(bad, "wb");
        if (out) {
            fwrite(bytes, 1, size, out);
            fclose(out);
        }
        CHECK_FAILS(ax_checkpoint_load(bad, &loaded, &loaded_config, &state), AX_STATUS_BAD_FILE,
                    "field \"rng0\" is not 16 hexadecimal digits");
    }

    /* The precision is written and read by its name (ax_precision_name and
     * ax_precision_parse): each comes back, and a name no precision has is
     * refused, naming the file and the choices. */
    for (int p = 0; p < 3; p++) {
        const ax_precision precision = (ax_precision)p;
        /* Every precision's checkpoint holds float64 arrays: f32's file
         * with the name changed is a valid checkpoint of that precision. */
        char from[600], replace[64];
        snprintf(from, sizeof from, "%s/named.safetensors", folder);
        snprintf(replace, sizeof replace, "\"precision\":\"%s\"", ax_precision_name(precision));
        edit_checkpoint(path, from, "net", "\"precision\":\"f32\"", replace, NULL, 0, 0);
        CHECK_OK(ax_checkpoint_load(from, &loaded, &loaded_config, &state));
        CHECK(loaded && ax_net_config_get(loaded)->precision == precision);
        ax_net_free(loaded);
        ax_train_state_free(state);
        loaded = NULL;
        state = NULL;
    }
    CHECK(strcmp(ax_precision_name((ax_precision)7), "unknown") == 0);
    edit_checkpoint(path, bad, "net", "\"precision\":\"f32\"", "\"precision\":\"f16\"", NULL, 0, 0);
    check_refused(bad, "unknown precision 'f16' (choose from f32, f64, bf16)");

    /* Metadata edited by hand: each field missing, of another type, out of
     * range or not parsable is refused naming the section and the field. */
    static const struct {
        const char *section, *find, *replace, *text;
    } edits[] = {
        {"net", "\"input_width\":", "\"input_width\":\"six\",\"x\":",
         "checkpoint metadata \"net\": field \"input_width\" has the wrong type"},
        {"net", "\"input_width\":", "\"width\":", "field \"input_width\" is missing"},
        {"net", "\"input_width\":", "\"input_width\":0,\"x\":",
         "checkpoint metadata \"net\": field \"input_width\""},
        {"net", "\"seed\":\"", "\"seed\":\"12", "field \"seed\" is not 16 hexadecimal digits"},
        {"net", "\"device\":", "\"device\":\"cpu:1\",\"x\":", "device 'cpu:1' is not a device"},
        {"net", "\"device\":", "\"device\":4096,\"x\":", "field \"device\""},
        {"net", "\"layers\":\"", "\"layers\":\"4:fancy", "checkpoint metadata \"net\""},
        {"net", "\"loss\":\"", "\"loss\":\"hinge", "checkpoint metadata \"net\""},
        {"net", "\"init\":\"", "\"init\":\"zeros", "checkpoint metadata \"net\""},
        {"train", "\"learning_rate\":", "\"learning_rate\":\"fast\",\"x\":",
         "checkpoint metadata \"train\": field \"learning_rate\" has the wrong type"},
        {"train", "\"optimizer\":\"", "\"optimizer\":\"rmsprop", "checkpoint metadata \"train\""},
        {"state", "\"loss_sum\":\"", "\"loss_sum\":\"many",
         "checkpoint metadata \"state\": field \"loss_sum\" is not a number: 'many'"},
        {"state", "\"epoch\":", "\"epoch\":-3,\"x\":", "checkpoint metadata \"state\": field \"epoch\""},
    };
    for (size_t e = 0; e < sizeof edits / sizeof *edits; e++) {
        edit_checkpoint(path, bad, edits[e].section, edits[e].find, edits[e].replace, NULL, 0, 0);
        if (test_failures)
            break;
        check_refused(bad, edits[e].text);
    }
    /* Files missing what their own metadata says they hold: refused as they
     * load (best weights, a stopped epoch's row order) or, for an optimizer
     * state the run needs, by ax_train, naming what is missing, the weights
     * left as loaded. */
    static const struct {
        const char *train_find, *train_replace; /* a first edit of "train", or NULL */
        const char *state_find, *state_replace; /* then one of "state", or NULL */
        const char *tensor;                     /* or a tensor dropped */
        const char *text;
        bool at_load;
    } unresumable[] = {
        {NULL, NULL, NULL, NULL, "optimizer.state0",
         "the checkpoint lacks the sgd optimizer's state array 0", false},
        {"\"keep_best\":\"none\"", "\"keep_best\":\"test\"", "\"best_epoch\":0",
         "\"best_epoch\":1", NULL, "the checkpoint lacks the tensor \"best_parameters\"", true},
        {"\"epochs\":2", "\"epochs\":4", "\"batch\":0", "\"batch\":3", NULL,
         "the checkpoint lacks the tensor \"order\"", true},
    };
    char first[600];
    snprintf(first, sizeof first, "%s/first-edit.safetensors", folder);
    for (size_t e = 0; e < sizeof unresumable / sizeof *unresumable; e++) {
        const bool two = unresumable[e].train_find != NULL;
        if (two)
            edit_checkpoint(path, first, "train", unresumable[e].train_find,
                            unresumable[e].train_replace, NULL, 0, 0);
        edit_checkpoint(two ? first : path, bad, unresumable[e].state_find ? "state" : NULL,
                        unresumable[e].state_find, unresumable[e].state_replace,
                        unresumable[e].tensor, -1, 0);
        if (unresumable[e].at_load) {
            check_refused(bad, unresumable[e].text);
            continue;
        }
        ax_status loaded_status = ax_checkpoint_load(bad, &loaded, &loaded_config, &state);
        CHECK_OK(loaded_status);
        if (loaded_status != AX_STATUS_OK)
            continue;
        double *weights = parameters_of(loaded);
        loaded_config.epochs = 4;
        ax_train_summary resumed = ax_train_summary_empty();
        CHECK_FAILS(ax_train(loaded, train, NULL, train, &loaded_config, &resumed),
                    AX_STATUS_BAD_FILE, unresumable[e].text);
        double *after = parameters_of(loaded);
        CHECK(weights && after && same_parameters(weights, after, ax_net_parameter_count(loaded)));
        free(weights);
        free(after);
        ax_net_free(loaded);
        ax_train_state_free(state);
        loaded = NULL;
        state = NULL;
    }
    /* A section that is not JSON, not an object, or absent. */
    edit_checkpoint(path, bad, "net", "{", "[", NULL, 0, 0);
    check_refused(bad, "checkpoint metadata \"net\"");
    edit_checkpoint(path, bad, "state", "\"epoch\":", "\"epoch\"", NULL, 0, 0);
    check_refused(bad, "checkpoint metadata \"state\"");

    /* A model file is not a checkpoint. */
    net = make_net(AX_PRECISION_F32);
    snprintf(bad, sizeof bad, "%s/model.safetensors", folder);
    CHECK_OK(ax_net_save(net, bad));
    CHECK_FAILS(ax_checkpoint_load(bad, &loaded, &loaded_config, &state), AX_STATUS_BAD_FILE,
                "not an axon checkpoint");

    config.checkpoint_prefix = NULL;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "need a file prefix");

    /* A run that diverges writes and deletes nothing: the old checkpoints stay.
     * The diverging net is linear (identity outputs, MSE): at a learning rate
     * of 1e30 each step multiplies the error by about 1e30, on every CPU.
     * (make_net's ReLU layer could die at the first step instead, leaving a
     * constant, finite loss: it did on an Intel Xeon of model 85.) */
    ax_net_free(net);
    ax_net_config linear_config = ax_net_defaults();
    linear_config.input_width = FEATURES;
    linear_config.seed = 7;
    CHECK_OK(ax_layers_parse("3:identity", &linear_config));
    CHECK_OK(ax_net_create(&linear_config, &net));
    ax_net_config_release(&linear_config);
    struct stat before1, before2, after1, after2;
    char path1[600];
    snprintf(path1, sizeof path1, "%s.epoch-000001.safetensors", prefix);
    CHECK(stat(path1, &before1) == 0 && stat(path, &before2) == 0);
    ax_train_config wild = ax_train_defaults();
    wild.batch_size = 32;
    wild.epochs = 3;
    wild.learning_rate = 1e30;
    wild.checkpoint_every = 1;
    wild.checkpoint_prefix = prefix;
    wild.keep_checkpoints = 1;
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &wild, &summary), AX_STATUS_DIVERGED,
                "diverged in epoch 1");
    CHECK(stat(path1, &after1) == 0 && stat(path, &after2) == 0);
    CHECK(before1.st_ino == after1.st_ino && before2.st_ino == after2.st_ino);
    CHECK(before2.st_mtime == after2.st_mtime && before2.st_size == after2.st_size);
    ax_net_free(net);
}

int main(void)
{
    CHECK_OK(ax_set_threads(1));
    /* a new folder of its own: a pid's name can be left from an earlier run */
    snprintf(folder, sizeof folder, "/tmp/axon_test_checkpoint_XXXXXX");
    CHECK(mkdtemp(folder) != NULL);
    ax_dataset *train = make_data(ROWS, 1);
    ax_dataset *validation = make_data(60, 2);
    CHECK(train && validation);
    if (!train || !validation)
        return test_finish("test_checkpoint");

    ax_train_config sgd = ax_train_defaults();
    sgd.batch_size = 32;
    sgd.learning_rate = 0.05;
    sgd.momentum = 0.9;
    sgd.nesterov = true;
    sgd.dropout = 0.2;
    sgd.l2 = 1e-3;
    sgd.seed = 11;
    ax_train_config adam = ax_train_defaults();
    adam.optimizer = AX_OPTIMIZER_ADAM;
    adam.learning_rate = 0.01;
    adam.batch_size = 32;
    adam.seed = 5;
    ax_train_config early = sgd;
    early.early_stop = 2;
    early.learning_rate = 0.5; /* noisy enough that the validation loss goes up at times */
    for (int p = 0; p < 2; p++) {
        ax_precision precision = p ? AX_PRECISION_F64 : AX_PRECISION_F32;
        test_case("sgd", precision, sgd, train, NULL);
        test_case("adam", precision, adam, train, NULL);
        test_case("early", precision, early, train, validation);
    }
    test_refusals(train);

    ax_dataset *test = make_data(60, 3);
    CHECK(test != NULL);
    ax_train_config cg = ax_train_defaults();
    cg.optimizer = AX_OPTIMIZER_CG;
    cg.batch_size = 0;
    cg.l2 = 1e-3;
    ax_train_config cg_best = cg;
    cg_best.keep_best = AX_KEEP_BEST_VALIDATION;
    ax_train_config lbfgs = cg;
    lbfgs.optimizer = AX_OPTIMIZER_LBFGS;
    lbfgs.lbfgs_memory = 4; /* full after 4 iterations: the ring wraps before the checkpoints */
    ax_train_config lbfgs_best = lbfgs;
    lbfgs_best.keep_best = AX_KEEP_BEST_TEST;
    for (int p = 0; p < 2 && test; p++) {
        ax_precision precision = p ? AX_PRECISION_F64 : AX_PRECISION_F32;
        test_line_search_case("cg", precision, cg, train, NULL, NULL);
        test_line_search_case("cg-best", precision, cg_best, train, validation, NULL);
        test_line_search_case("lbfgs", precision, lbfgs, train, NULL, NULL);
        test_line_search_case("lbfgs-best", precision, lbfgs_best, train, NULL, test);
    }
    test_line_search_refusals(train);
    ax_dataset_free(test);

    ax_dataset_free(train);
    ax_dataset_free(validation);
    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    if (test_failures == 0 && system(command) != 0)
        fprintf(stderr, "could not remove %s\n", folder);
    return test_finish("test_checkpoint");
}
