/* checkpoint.c: writing and reading checkpoint files (see checkpoint.h) and
 * keeping the newest K of them. Every field read back is validated and a
 * failure names the file and the field, since a checkpoint is outside input
 * like any other file. */
#define _POSIX_C_SOURCE 200809L
#include "core/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/lr_schedule.h"
#include "core/net.h"
#include "data/fingerprint.h"
#include "io/json.h"
#include "io/safetensors.h"

#define CHECKPOINT_FORMAT "axon-checkpoint-1"

/* ------------------------------------------------------------------ writing */

static void append_double(ax_json_writer *w, const char *key, double value)
{
    char text[64];
    snprintf(text, sizeof text, "\"%s\":%.17g,", key, value);
    ax_json_writer_append(w, text);
}

/* Exact and able to hold Inf and NaN: a hexadecimal float in a string. */
static void append_hex_double(ax_json_writer *w, const char *key, double value)
{
    char text[96];
    snprintf(text, sizeof text, "\"%s\":\"%a\",", key, value);
    ax_json_writer_append(w, text);
}

static void append_int(ax_json_writer *w, const char *key, int64_t value)
{
    char text[64];
    snprintf(text, sizeof text, "\"%s\":%" PRId64 ",", key, value);
    ax_json_writer_append(w, text);
}

static void append_u64(ax_json_writer *w, const char *key, uint64_t value)
{
    char text[64];
    snprintf(text, sizeof text, "\"%s\":\"%016" PRIx64 "\",", key, value);
    ax_json_writer_append(w, text);
}

static void append_string(ax_json_writer *w, const char *key, const char *value)
{
    ax_json_writer_append_string(w, key);
    ax_json_writer_append(w, ":");
    ax_json_writer_append_string(w, value);
    ax_json_writer_append(w, ",");
}

/* Replaces the trailing comma by the closing brace. */
static void close_object(ax_json_writer *w)
{
    if (!w->out_of_memory && w->length > 0 && w->text[w->length - 1] == ',')
        w->text[--w->length] = '\0';
    ax_json_writer_append(w, "}");
}

static void net_json(const ax_net_config *c, ax_json_writer *w)
{
    char layers[AX_MAX_LAYERS * 32];
    ax_layout_text(c, false, layers, sizeof layers);
    ax_json_writer_append(w, "{");
    append_int(w, "input_width", c->input_width);
    char input_shape[80];
    if (ax_layout_input_shape_text(c, input_shape, sizeof input_shape))
        append_string(w, "input_shape", input_shape);
    append_string(w, "layers", layers);
    append_string(w, "loss", ax_loss_name(c->loss));
    append_string(w, "init", ax_init_name(c->init));
    append_double(w, "init_range", c->init_range);
    append_string(w, "precision", ax_precision_name(c->precision));
    append_u64(w, "seed", c->seed);
    /* The CPU as the integer of the files written before ax_device (-1);
     * any other device as its text (checkpoint_load.c reads both). */
    if (ax_device_is_cpu(c->device)) {
        append_int(w, "device", -1);
    } else {
        char device[AX_DEVICE_NAME_CAPACITY + 16];
        ax_device_format(c->device, device, sizeof device);
        append_string(w, "device", device);
    }
    close_object(w);
}

static const char *keep_best_name(ax_keep_best keep_best)
{
    return keep_best == AX_KEEP_BEST_TEST         ? "test"
           : keep_best == AX_KEEP_BEST_VALIDATION ? "validation"
                                                  : "none";
}

/* One key per row of train_settings.def, in its order. */
static void train_json(const ax_train_config *c, ax_json_writer *w)
{
    ax_json_writer_append(w, "{");
#define WRITE_DOUBLE(w, key, value) append_double(w, key, value)
#define WRITE_INT(w, key, value) append_int(w, key, value)
#define WRITE_INT64(w, key, value) append_int(w, key, value)
#define WRITE_BOOL(w, key, value) append_int(w, key, value)
#define WRITE_ADDED_BOOL(w, key, value) append_int(w, key, value)
#define WRITE_ADDED_DOUBLE(w, key, value) append_double(w, key, value)
#define WRITE_ADDED_INT(w, key, value) append_int(w, key, value)
#define WRITE_ADDED_INT64(w, key, value) append_int(w, key, value)
#define WRITE_ADDED_LR_SCHEDULE(w, key, value) append_string(w, key, ax_lr_schedule_name(value))
#define WRITE_U64(w, key, value) append_u64(w, key, value)
#define WRITE_OPTIMIZER(w, key, value) append_string(w, key, ax_optimizer_name(value))
#define WRITE_KEEP_BEST(w, key, value) append_string(w, key, keep_best_name(value))
#define WRITE_PATH(w, key, value) append_string(w, key, (value) ? (value) : "")
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    WRITE_##type(w, key, c->field);
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
#undef WRITE_DOUBLE
#undef WRITE_INT
#undef WRITE_INT64
#undef WRITE_BOOL
#undef WRITE_ADDED_BOOL
#undef WRITE_ADDED_DOUBLE
#undef WRITE_ADDED_INT
#undef WRITE_ADDED_INT64
#undef WRITE_ADDED_LR_SCHEDULE
#undef WRITE_U64
#undef WRITE_OPTIMIZER
#undef WRITE_KEEP_BEST
#undef WRITE_PATH
    /* Dropout per layer (issue 30): "" for none, else every rate up to the
     * last nonzero one, comma-separated, each %.17g (exact). */
    char rates[AX_MAX_LAYERS * 26] = "";
    int last = -1;
    for (int l = 0; l < AX_MAX_LAYERS; l++)
        if (c->dropout_layers[l] != 0.0)
            last = l;
    for (int l = 0; l <= last; l++) {
        const size_t used = strlen(rates);
        snprintf(rates + used, sizeof rates - used, "%s%.17g", l ? "," : "", c->dropout_layers[l]);
    }
    append_string(w, "dropout_layers", rates);
    close_object(w);
}

static void state_json(const ax_train_state *s, ax_json_writer *w)
{
    ax_json_writer_append(w, "{");
    append_int(w, "epoch", s->trainer.epoch);
    append_int(w, "batch", s->trainer.batch);
    append_u64(w, "step", s->trainer.step);
    append_int(w, "optimizer_steps", s->trainer.optimizer.steps);
    append_int(w, "evaluations", s->trainer.optimizer.evaluations);
    append_int(w, "gradient_evaluations", s->trainer.optimizer.gradient_evaluations);
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "rng%d", i);
        append_u64(w, key, s->trainer.rng.state[i]);
    }
    append_hex_double(w, "loss_sum", s->trainer.loss_sum);
    append_hex_double(w, "best_loss", s->trainer.best_loss);
    append_int(w, "best_epoch", s->trainer.best_epoch);
    append_int(w, "since_best", s->trainer.since_best);
    append_hex_double(w, "lr_rate", s->trainer.lr.rate);
    append_hex_double(w, "lr_best", s->trainer.lr.best);
    append_int(w, "lr_bad_epochs", s->trainer.lr.bad_epochs);
    append_hex_double(w, "seconds", s->trainer.seconds);
    append_hex_double(w, "gflop", s->trainer.gflop);
    append_hex_double(w, "final_train_loss", s->trainer.final_train_loss);
    append_hex_double(w, "final_test_accuracy", s->trainer.final_test_accuracy);
    append_int(w, "rows", s->rows);
    append_int(w, "features", s->features);
    append_int(w, "classes", s->classes);
    append_int(w, "targets", s->targets);
    append_u64(w, "train_hash", s->train_hash);
    append_int(w, "validation_rows", s->validation_rows);
    append_u64(w, "validation_hash", s->validation_hash);
    append_int(w, "fingerprint", AX_FINGERPRINT_VERSION);
    if (s->line_base)
        append_int(w, "line_searches", s->line_searches);
    if (s->optimizer_saved.scalar_count > 0) {
        ax_json_writer_append(w, "\"optimizer_scalars\":{");
        for (int i = 0; i < s->optimizer_saved.scalar_count; i++)
            append_hex_double(w, s->optimizer_saved.scalars[i].name, s->optimizer_saved.scalars[i].value);
        close_object(w);
        ax_json_writer_append(w, ",");
    }
    close_object(w);
}

ax_status ax_checkpoint_write(const ax_train_state *state, const char *path)
{
    const bool single = state->net_config.precision != AX_PRECISION_F64; /* bf16: float32 too */
    const int64_t n = state->parameter_count;
    ax_safetensors_tensor tensors[6 + AX_OPTIMIZER_SAVED_MAX];
    char kind_names[AX_OPTIMIZER_SAVED_MAX][AX_OPTIMIZER_SAVED_NAME + 16];
    const char *names[] = {"parameters", "optimizer.state0", "optimizer.state1", "best_parameters",
                           "order"};
    const double *arrays[] = {state->parameters, state->optimizer_state[0], state->optimizer_state[1],
                              state->best_parameters, NULL};
    float *singles[4] = {NULL, NULL, NULL, NULL};
    double *order = NULL;
    ax_status status = AX_STATUS_OK;
    int count = 0;
    for (int i = 0; i < 4 && status == AX_STATUS_OK; i++) {
        if (!arrays[i])
            continue;
        ax_safetensors_tensor *t = &tensors[count++];
        memset(t, 0, sizeof *t);
        t->name = names[i];
        t->rank = 1;
        t->shape[0] = n;
        /* The arenas in their own precision (the best weights are doubles). */
        if (single && i < 3) {
            singles[i] = malloc((size_t)n * sizeof(float));
            if (!singles[i]) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory writing %s", path);
                break;
            }
            for (int64_t j = 0; j < n; j++)
                singles[i][j] = (float)arrays[i][j];
            t->dtype = AX_SAFETENSORS_F32;
            t->data = singles[i];
        } else {
            t->dtype = AX_SAFETENSORS_F64;
            t->data = arrays[i];
        }
    }
    if (status == AX_STATUS_OK && state->trainer.batch > 0 && state->order) {
        /* Row numbers are below 2^53, so doubles hold them exactly. */
        order = malloc((size_t)state->rows * sizeof(double));
        if (!order)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory writing %s", path);
        else {
            for (int64_t j = 0; j < state->rows; j++)
                order[j] = (double)state->order[j];
            ax_safetensors_tensor *t = &tensors[count++];
            memset(t, 0, sizeof *t);
            t->name = names[4];
            t->dtype = AX_SAFETENSORS_F64;
            t->rank = 1;
            t->shape[0] = state->rows;
            t->data = order;
        }
    }
    /* CG's and L-BFGS's own arrays and the line-search cache's base: doubles
     * (some are host doubles, such as L-BFGS's rho, not arena values). */
    const ax_optimizer_saved *saved = &state->optimizer_saved;
    for (int i = 0; status == AX_STATUS_OK && i < saved->array_count; i++) {
        snprintf(kind_names[i], sizeof kind_names[i], "optimizer.%s", saved->arrays[i].name);
        ax_safetensors_tensor *t = &tensors[count++];
        memset(t, 0, sizeof *t);
        t->name = kind_names[i];
        t->dtype = AX_SAFETENSORS_F64;
        t->rank = 1;
        t->shape[0] = saved->arrays[i].length;
        t->data = saved->arrays[i].values;
    }
    if (status == AX_STATUS_OK && state->line_base) {
        ax_safetensors_tensor *t = &tensors[count++];
        memset(t, 0, sizeof *t);
        t->name = "line_cache.base";
        t->dtype = AX_SAFETENSORS_F64;
        t->rank = 1;
        t->shape[0] = state->line_base_count;
        t->data = state->line_base;
    }
    ax_json_writer net = {0}, train = {0}, progress = {0};
    net_json(&state->net_config, &net);
    train_json(&state->config, &train);
    state_json(state, &progress);
    if (status == AX_STATUS_OK && (net.out_of_memory || train.out_of_memory || progress.out_of_memory))
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory writing %s", path);
    if (status == AX_STATUS_OK) {
        const char *keys[] = {"format", "producer", "net", "train", "state", "note"};
        const char *values[] = {CHECKPOINT_FORMAT, "axon " AX_VERSION, net.text, train.text,
                                progress.text, state->note ? state->note : ""};
        status = ax_safetensors_write(path, tensors, count, keys, values, 6);
    }
    ax_json_writer_free(&net);
    ax_json_writer_free(&train);
    ax_json_writer_free(&progress);
    for (int i = 0; i < 4; i++)
        free(singles[i]);
    free(order);
    return status;
}

/* Splits prefix into its folder ("." when none) and file-name start. */
static void split_prefix(const char *prefix, char *folder, size_t capacity, const char **base)
{
    const char *slash = strrchr(prefix, '/');
    if (!slash) {
        snprintf(folder, capacity, ".");
        *base = prefix;
    } else {
        snprintf(folder, capacity, "%.*s", slash == prefix ? 1 : (int)(slash - prefix), prefix);
        *base = slash + 1;
    }
}

/* The epoch of "BASE.epoch-NNNNNN.safetensors", or -1 for any other name. */
static long epoch_of(const char *name, const char *base)
{
    size_t length = strlen(base);
    if (strncmp(name, base, length) != 0 || strncmp(name + length, ".epoch-", 7) != 0)
        return -1;
    const char *digits = name + length + 7;
    char *end;
    errno = 0;
    long epoch = strtol(digits, &end, 10);
    if (end == digits || *digits < '0' || *digits > '9' || errno || strcmp(end, ".safetensors") != 0)
        return -1;
    return epoch;
}

static int compare_longs_descending(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x < y) - (x > y);
}

/* Deletes all but the newest `keep` epoch checkpoints of prefix. */
static ax_status prune(const char *prefix, int keep)
{
    char folder[4096];
    const char *base;
    split_prefix(prefix, folder, sizeof folder, &base);
    DIR *dir = opendir(folder);
    if (!dir)
        return ax_fail(AX_STATUS_IO_ERROR, "cannot list %s to delete old checkpoints: %s", folder,
                       strerror(errno));
    long *epochs = NULL;
    size_t count = 0, capacity = 0;
    ax_status status = AX_STATUS_OK;
    for (struct dirent *entry; (entry = readdir(dir));) {
        long epoch = epoch_of(entry->d_name, base);
        if (epoch < 0)
            continue;
        if (count == capacity) {
            size_t grown = capacity ? 2 * capacity : 16;
            long *bigger = realloc(epochs, grown * sizeof *epochs);
            if (!bigger) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory listing checkpoints");
                break;
            }
            epochs = bigger;
            capacity = grown;
        }
        epochs[count++] = epoch;
    }
    closedir(dir);
    if (status == AX_STATUS_OK && count > (size_t)keep) {
        qsort(epochs, count, sizeof *epochs, compare_longs_descending);
        for (size_t i = (size_t)keep; i < count && status == AX_STATUS_OK; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s.epoch-%06ld.safetensors", prefix, epochs[i]);
            if (remove(path) != 0 && errno != ENOENT)
                status = ax_fail(AX_STATUS_IO_ERROR, "cannot delete the old checkpoint %s: %s", path,
                                 strerror(errno));
        }
    }
    free(epochs);
    return status;
}

ax_status ax_checkpoint_write_epoch(const ax_train_state *state, const char *prefix, int keep)
{
    char path[4200];
    snprintf(path, sizeof path, "%s.epoch-%06d.safetensors", prefix, state->trainer.epoch);
    AX_TRY(ax_checkpoint_write(state, path));
    return keep > 0 ? prune(prefix, keep) : AX_STATUS_OK;
}

ax_status ax_checkpoint_write_interrupted(const ax_train_state *state, const char *prefix)
{
    char path[4200];
    snprintf(path, sizeof path, "%s.interrupted.safetensors", prefix);
    return ax_checkpoint_write(state, path);
}
