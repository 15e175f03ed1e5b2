/* checkpoint_load.c: reading a checkpoint back (ax_checkpoint_load). The
 * file is outside input: every tensor and metadata field is checked, and a
 * failure names the file and the field, so a truncated or edited checkpoint
 * is refused with a reason rather than resumed into nonsense. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/memory.h"
#include "core/checkpoint.h"
#include "core/lr_schedule.h"
#include "core/net.h"
#include "data/fingerprint.h"
#include "io/json.h"
#include "io/safetensors.h"

typedef struct reader {
    const char *path;
    const char *section; /* "net", "train" or "state" */
    const ax_json *object;
    ax_status status;
} reader;

static const ax_json *field(reader *r, const char *key, ax_json_type type, const char *what)
{
    if (r->status != AX_STATUS_OK)
        return NULL;
    const ax_json *node = ax_json_object_get(r->object, key);
    bool ok = node && (ax_json_type_of(node) == type ||
                       (type == AX_JSON_DOUBLE && ax_json_type_of(node) == AX_JSON_INT));
    if (!ok) {
        r->status = ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\": field \"%s\" %s",
                            r->path, r->section, key, node ? "has the wrong type" : "is missing");
        (void)what;
        return NULL;
    }
    return node;
}

static int64_t get_int(reader *r, const char *key, int64_t low, int64_t high)
{
    const ax_json *node = field(r, key, AX_JSON_INT, "an integer");
    int64_t value = 0;
    if (node && (!ax_json_int(node, &value) || value < low || value > high)) {
        r->status = ax_fail(AX_STATUS_BAD_FILE,
                            "%s: checkpoint metadata \"%s\": field \"%s\" must be from %" PRId64
                            " to %" PRId64,
                            r->path, r->section, key, low, high);
        return low;
    }
    return node ? value : low;
}

static double get_double(reader *r, const char *key)
{
    const ax_json *node = field(r, key, AX_JSON_DOUBLE, "a number");
    double value = 0.0;
    if (node)
        ax_json_number(node, &value);
    return value;
}

static const char *get_string(reader *r, const char *key)
{
    const ax_json *node = field(r, key, AX_JSON_STRING, "a string");
    return node ? ax_json_string(node) : "";
}

static double get_hex_double(reader *r, const char *key)
{
    const char *text = get_string(r, key);
    if (r->status != AX_STATUS_OK)
        return 0.0;
    char *end;
    double value = strtod(text, &end);
    if (end == text || *end)
        r->status = ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\": field \"%s\" is not a number: '%s'",
                            r->path, r->section, key, text);
    return value;
}

static uint64_t get_u64(reader *r, const char *key)
{
    const char *text = get_string(r, key);
    if (r->status != AX_STATUS_OK)
        return 0;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 16);
    if (strlen(text) != 16 || *end || errno)
        r->status = ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\": field \"%s\" is not 16 hexadecimal digits: '%s'",
                            r->path, r->section, key, text);
    return (uint64_t)value;
}

/* Parses metadata entry key as a JSON object into r. */
static ax_status open_section(const ax_safetensors_file *file, const char *key, reader *r, ax_json **root)
{
    r->path = ax_safetensors_path(file);
    r->section = key;
    r->status = AX_STATUS_OK;
    const char *text = ax_safetensors_metadata(file, key);
    if (!text)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: the checkpoint metadata lacks \"%s\"", r->path, key);
    if (ax_json_parse(text, strlen(text), 0, root) != AX_STATUS_OK)
        return ax_fail_context(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\"", r->path, key);
    if (ax_json_type_of(*root) != AX_JSON_OBJECT)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\" is not a JSON object", r->path, key);
    r->object = *root;
    return AX_STATUS_OK;
}

#define CHECK_PARSE(call)                                                                       \
    do {                                                                                        \
        ax_status check_ = (call);                                                              \
        if (check_ != AX_STATUS_OK)                                                             \
            return ax_fail_context(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"%s\"", r->path, \
                                   r->section);                                                 \
    } while (0)

static ax_status read_net(reader *r, ax_net_config *c)
{
    *c = ax_net_defaults();
    c->input_width = get_int(r, "input_width", 1, INT64_MAX);
    const char *layers = get_string(r, "layers");
    const char *loss = get_string(r, "loss");
    const char *init = get_string(r, "init");
    c->init_range = get_double(r, "init_range");
    const char *precision = get_string(r, "precision");
    c->seed = get_u64(r, "seed");
    /* A device's text, or the integer of files written before ax_device
     * (ax_device_from_number: -1 the CPU). */
    const ax_json *device = ax_json_object_get(r->object, "device");
    if (device && ax_json_type_of(device) == AX_JSON_STRING) {
        AX_TRY(r->status);
        if (ax_device_parse(ax_json_string(device), &c->device) != AX_STATUS_OK)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"net\": device '%s' is "
                           "not a device", r->path, ax_json_string(device));
    } else {
        const int index = (int)get_int(r, "device", -1, 1023);
        c->device = ax_device_from_number(index);
    }
    AX_TRY(r->status);
    /* only images have it (checkpoints before images: none) */
    if (ax_json_object_get(r->object, "input_shape")) {
        const char *input_shape = get_string(r, "input_shape");
        AX_TRY(r->status);
        CHECK_PARSE(ax_layout_input_shape_parse(input_shape, c));
    }
    CHECK_PARSE(ax_layers_parse(layers, c));
    CHECK_PARSE(ax_loss_parse(loss, &c->loss));
    CHECK_PARSE(ax_init_parse(init, &c->init));
    CHECK_PARSE(ax_precision_parse(precision, &c->precision));
    return AX_STATUS_OK;
}

static ax_status read_train(reader *r, ax_train_state *s)
{
    ax_train_config *c = &s->config;
    *c = ax_train_defaults();
    /* One key per row of train_settings.def, in its order, integers within
     * the row's range; the names are parsed once every field is read. */
    const char *optimizer = "", *keep_best = "none", *prefix = "", *schedule = "constant";
#define READ_DOUBLE(field, key, low, high) c->field = get_double(r, key)
#define READ_INT(field, key, low, high) c->field = (int)get_int(r, key, low, high)
#define READ_INT64(field, key, low, high) c->field = get_int(r, key, low, high)
#define READ_BOOL(field, key, low, high) c->field = get_int(r, key, low, high) != 0
    /* Absent in checkpoints written before the setting: its default stays. */
#define READ_ADDED_BOOL(field, key, low, high) \
    if (ax_json_object_get(r->object, key))    \
        c->field = get_int(r, key, low, high) != 0
#define READ_ADDED_DOUBLE(field, key, low, high) \
    if (ax_json_object_get(r->object, key))      \
        c->field = get_double(r, key)
#define READ_ADDED_INT(field, key, low, high) \
    if (ax_json_object_get(r->object, key))   \
        c->field = (int)get_int(r, key, low, high)
#define READ_ADDED_INT64(field, key, low, high) \
    if (ax_json_object_get(r->object, key))     \
        c->field = get_int(r, key, low, high)
#define READ_ADDED_LR_SCHEDULE(field, key, low, high) \
    if (ax_json_object_get(r->object, key))           \
        schedule = get_string(r, key)
#define READ_U64(field, key, low, high) c->field = get_u64(r, key)
#define READ_OPTIMIZER(field, key, low, high) optimizer = get_string(r, key)
    /* Absent in checkpoints written before keep_best was recorded. */
#define READ_KEEP_BEST(field, key, low, high) \
    keep_best = ax_json_object_get(r->object, key) ? get_string(r, key) : "none"
#define READ_PATH(field, key, low, high) prefix = get_string(r, key)
#define AX_TRAIN_SETTING(type, field, key, default_value, low, high, check, resume) \
    READ_##type(field, key, low, high);
#include "core/train_settings.def"
#undef AX_TRAIN_SETTING
#undef READ_DOUBLE
#undef READ_INT
#undef READ_INT64
#undef READ_BOOL
#undef READ_ADDED_BOOL
#undef READ_ADDED_DOUBLE
#undef READ_ADDED_INT
#undef READ_ADDED_INT64
#undef READ_ADDED_LR_SCHEDULE
#undef READ_U64
#undef READ_OPTIMIZER
#undef READ_KEEP_BEST
#undef READ_PATH
    AX_TRY(r->status);
    CHECK_PARSE(ax_optimizer_parse(optimizer, &c->optimizer));
    {
        /* The name alone: the settings were read from their own keys. */
        if (!ax_lr_schedule_from_name(schedule, &c->lr_schedule))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: checkpoint metadata \"train\": lr_schedule '%s' is not a schedule's name",
                           r->path, schedule);
        const char *why = ax_lr_schedule_check_text(c);
        if (why)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"train\": %s", r->path, why);
    }
    if (strcmp(keep_best, "none") == 0)
        c->keep_best = AX_KEEP_BEST_NONE;
    else if (strcmp(keep_best, "validation") == 0)
        c->keep_best = AX_KEEP_BEST_VALIDATION;
    else if (strcmp(keep_best, "test") == 0)
        c->keep_best = AX_KEEP_BEST_TEST;
    else
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: checkpoint metadata \"train\": keep_best '%s' is not none, validation or test",
                       r->path, keep_best);
    if (*prefix) {
        s->prefix = malloc(strlen(prefix) + 1);
        if (!s->prefix)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory reading %s", r->path);
        strcpy(s->prefix, prefix);
    }
    c->checkpoint_prefix = s->prefix;
    /* Absent in checkpoints written before dropout per layer: none. */
    if (ax_json_object_get(r->object, "dropout_layers")) {
        const char *text = get_string(r, "dropout_layers");
        AX_TRY(r->status);
        for (int l = 0; *text; l++) {
            char *end = NULL;
            const double rate = strtod(text, &end);
            if (l >= AX_MAX_LAYERS || end == text || !(rate >= 0.0 && rate < 1.0) ||
                (*end != ',' && *end != '\0'))
                return ax_fail(AX_STATUS_BAD_FILE,
                               "%s: checkpoint metadata \"train\": dropout_layers is not a list of "
                               "at most %d probabilities in [0, 1)",
                               r->path, AX_MAX_LAYERS);
            c->dropout_layers[l] = rate;
            text = *end == ',' ? end + 1 : end;
        }
    }
    return AX_STATUS_OK;
}

/* The optimizer's named scalars: an object of hexadecimal floats. */
static ax_status read_optimizer_scalars(reader *r, ax_train_state *s)
{
    const ax_json *scalars = ax_json_object_get(r->object, "optimizer_scalars");
    if (!scalars)
        return AX_STATUS_OK;
    if (ax_json_type_of(scalars) != AX_JSON_OBJECT)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: checkpoint metadata \"state\": field \"optimizer_scalars\" is not an object",
                       r->path);
    reader inner = *r;
    inner.section = "state.optimizer_scalars";
    inner.object = scalars;
    for (size_t i = 0; i < ax_json_length(scalars); i++) {
        const char *key = ax_json_object_key(scalars, i);
        if (ax_json_object_key_length(scalars, i) != strlen(key))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: checkpoint metadata \"state.optimizer_scalars\": a name holds a NUL",
                           r->path);
        double value = get_hex_double(&inner, key);
        AX_TRY(inner.status);
        if (ax_optimizer_saved_scalar(&s->optimizer_saved, key, &(double){0}))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: checkpoint metadata \"state.optimizer_scalars\": \"%s\" appears twice",
                           r->path, key);
        if (ax_optimizer_saved_add_scalar(&s->optimizer_saved, key, value) != AX_STATUS_OK)
            return ax_fail_context(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"state\"", r->path);
    }
    return AX_STATUS_OK;
}

static ax_status read_state(reader *r, ax_train_state *s)
{
    s->trainer.epoch = (int)get_int(r, "epoch", 0, 100000000);
    s->trainer.batch = get_int(r, "batch", 0, INT64_MAX);
    s->trainer.step = get_u64(r, "step");
    s->trainer.optimizer.steps = get_int(r, "optimizer_steps", 0, INT64_MAX);
    s->trainer.optimizer.evaluations = get_int(r, "evaluations", 0, INT64_MAX);
    s->trainer.optimizer.gradient_evaluations = get_int(r, "gradient_evaluations", 0, INT64_MAX);
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "rng%d", i);
        s->trainer.rng.state[i] = get_u64(r, key);
    }
    s->trainer.loss_sum = get_hex_double(r, "loss_sum");
    s->trainer.best_loss = get_hex_double(r, "best_loss");
    s->trainer.best_epoch = (int)get_int(r, "best_epoch", 0, 100000000);
    s->trainer.since_best = (int)get_int(r, "since_best", 0, 100000000);
    /* Absent in checkpoints written before schedules: a constant rate,
     * the recorded one (read_train came first). */
    s->trainer.lr = ax_lr_state_start(&s->config);
    if (ax_json_object_get(r->object, "lr_rate")) {
        s->trainer.lr.rate = get_hex_double(r, "lr_rate");
        s->trainer.lr.best = get_hex_double(r, "lr_best");
        s->trainer.lr.bad_epochs = (int)get_int(r, "lr_bad_epochs", 0, 100000000);
        if (r->status == AX_STATUS_OK &&
            (!(s->trainer.lr.rate > 0.0 && isfinite(s->trainer.lr.rate)) ||
             isnan(s->trainer.lr.best)))
            return ax_fail(AX_STATUS_BAD_FILE,
                           "%s: checkpoint metadata \"state\": lr_rate must be a finite rate > 0 "
                           "and lr_best a number",
                           r->path);
    }
    s->trainer.seconds = get_hex_double(r, "seconds");
    s->trainer.gflop = get_hex_double(r, "gflop");
    s->trainer.final_train_loss = get_hex_double(r, "final_train_loss");
    s->trainer.final_test_accuracy = get_hex_double(r, "final_test_accuracy");
    s->rows = get_int(r, "rows", 1, INT64_MAX);
    s->features = get_int(r, "features", 1, INT64_MAX);
    s->classes = get_int(r, "classes", 0, INT64_MAX);
    s->targets = get_int(r, "targets", 0, INT64_MAX);
    s->train_hash = get_u64(r, "train_hash");
    s->validation_rows = get_int(r, "validation_rows", -1, INT64_MAX);
    s->validation_hash = get_u64(r, "validation_hash");
    /* Absent in checkpoints written before sharded fingerprints. */
    s->fingerprint = ax_json_object_get(r->object, "fingerprint")
                         ? (int)get_int(r, "fingerprint", 1, AX_FINGERPRINT_VERSION)
                         : 1;
    /* CG and L-BFGS only (checked against the optimizer once all is read). */
    if (ax_json_object_get(r->object, "line_searches"))
        s->line_searches = (int)get_int(r, "line_searches", 0, AX_LINE_CACHE_REFRESH);
    else
        s->line_searches = -1;
    AX_TRY(r->status);
    AX_TRY(read_optimizer_scalars(r, s));
    const uint64_t *rng = s->trainer.rng.state;
    if (rng[0] == 0 && rng[1] == 0 && rng[2] == 0 && rng[3] == 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"state\": the random state is all zero",
                       r->path);
    return AX_STATUS_OK;
}

/* A 1-D tensor of count values into a new double array; NULL when absent
 * and not required. */
static ax_status read_array(const ax_safetensors_file *file, const char *name, int64_t count,
                            bool required, double **out)
{
    *out = NULL;
    const char *path = ax_safetensors_path(file);
    const ax_safetensors_tensor *t = ax_safetensors_find(file, name);
    if (!t)
        return required ? ax_fail(AX_STATUS_BAD_FILE, "%s: the checkpoint lacks the tensor \"%s\"", path, name)
                        : AX_STATUS_OK;
    if (t->rank != 1 || t->shape[0] != count)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" should have shape (%lld)", path, name,
                       (long long)count);
    double *values = malloc((size_t)(count > 0 ? count : 1) * sizeof(double));
    if (!values)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    for (int64_t i = 0; i < count; i++) {
        values[i] = t->dtype == AX_SAFETENSORS_F64 ? ((const double *)t->data)[i]
                                                   : (double)((const float *)t->data)[i];
        if (!isfinite(values[i])) {
            free(values);
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" holds a NaN or infinite value at index %lld",
                           path, name, (long long)i);
        }
    }
    *out = values;
    return AX_STATUS_OK;
}

/* CG's and L-BFGS's named arrays ("optimizer.NAME" other than the SGD and
 * Adam arenas) and the line-search cache's base, checked with the scalars
 * against what the run's optimizer keeps. */
static ax_status read_optimizer_arrays(const ax_safetensors_file *file, ax_train_state *s)
{
    const char *path = ax_safetensors_path(file);
    for (int i = 0; i < ax_safetensors_count(file); i++) {
        const ax_safetensors_tensor *t = ax_safetensors_tensor_at(file, i);
        if (strncmp(t->name, "optimizer.", 10) != 0 || strcmp(t->name, "optimizer.state0") == 0 ||
            strcmp(t->name, "optimizer.state1") == 0)
            continue;
        if (t->rank != 1)
            return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"%s\" should have rank 1, not %d", path,
                           t->name, t->rank);
        double *values = NULL;
        AX_TRY(read_array(file, t->name, t->shape[0], true, &values));
        double *kept = ax_optimizer_saved_add_array(&s->optimizer_saved, t->name + 10, t->shape[0]);
        if (kept)
            memcpy(kept, values, (size_t)t->shape[0] * sizeof *values);
        free(values);
        if (!kept)
            return ax_fail_context(AX_STATUS_BAD_FILE, "%s: tensor \"%s\"", path, t->name);
    }
    if (ax_optimizer_saved_check(&s->config, s->parameter_count, &s->optimizer_saved) != AX_STATUS_OK)
        return ax_fail_context(AX_STATUS_BAD_FILE, "%s", path);
    const bool line_search = ax_optimizer_uses(s->config.optimizer, AX_OPTIMIZER_SETTING_LINE_SEARCH);
    const bool has_base = ax_safetensors_find(file, "line_cache.base") != NULL;
    if (has_base != (s->line_searches >= 0) || (has_base && !line_search)) {
        char searching[128];
        ax_optimizer_names_using(AX_OPTIMIZER_SETTING_LINE_SEARCH, searching, sizeof searching);
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: the line-search cache needs both tensor \"line_cache.base\" and field "
                       "\"line_searches\", and only %s%s",
                       path, line_search ? "" : "for ", line_search ? "together" : searching);
    }
    if (!has_base)
        return AX_STATUS_OK;
    const int64_t width = ax_layout_width(&s->net_config, 0);
    if (width < 1 || s->rows > INT64_MAX / width)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"line_cache.base\" cannot hold %lld rows x %lld",
                       path, (long long)s->rows, (long long)width);
    s->line_base_count = s->rows * width;
    return read_array(file, "line_cache.base", s->line_base_count, true, &s->line_base);
}

static ax_status read_tensors(const ax_safetensors_file *file, ax_train_state *s)
{
    const char *path = ax_safetensors_path(file);
    const int64_t n = s->parameter_count;
    AX_TRY(read_array(file, "parameters", n, true, &s->parameters));
    AX_TRY(read_array(file, "optimizer.state0", n, false, &s->optimizer_state[0]));
    AX_TRY(read_array(file, "optimizer.state1", n, false, &s->optimizer_state[1]));
    const bool keeps_best = s->config.early_stop > 0 || s->config.keep_best != AX_KEEP_BEST_NONE;
    AX_TRY(read_array(file, "best_parameters", n, keeps_best && s->trainer.best_epoch > 0,
                      &s->best_parameters));
    AX_TRY(read_optimizer_arrays(file, s));
    if (s->trainer.batch == 0)
        return AX_STATUS_OK;
    double *order = NULL;
    AX_TRY(read_array(file, "order", s->rows, true, &order));
    s->order = malloc((size_t)s->rows * sizeof *s->order);
    unsigned char *seen = calloc((size_t)s->rows, 1);
    ax_status status = AX_STATUS_OK;
    if (!s->order || !seen)
        status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    for (int64_t i = 0; status == AX_STATUS_OK && i < s->rows; i++) {
        double v = order[i];
        if (!(v >= 0 && v < (double)s->rows) || v != floor(v) || seen[(int64_t)v])
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: tensor \"order\" is not a permutation of the rows (index %lld)",
                             path, (long long)i);
        else {
            seen[(int64_t)v] = 1;
            s->order[i] = (int64_t)v;
        }
    }
    free(order);
    free(seen);
    return status;
}

static ax_status load_state(const ax_safetensors_file *file, ax_train_state *s)
{
    const char *path = ax_safetensors_path(file);
    const char *format = ax_safetensors_metadata(file, "format");
    if (!format || strcmp(format, "axon-checkpoint-1") != 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: not an axon checkpoint (metadata \"format\" is %s%s%s)",
                       path, format ? "'" : "", format ? format : "missing", format ? "'" : "");
    reader r;
    ax_json *root = NULL;
    ax_status status = open_section(file, "net", &r, &root);
    if (status == AX_STATUS_OK)
        status = read_net(&r, &s->net_config);
    ax_json_free(root);
    root = NULL;
    if (status == AX_STATUS_OK)
        status = open_section(file, "train", &r, &root);
    if (status == AX_STATUS_OK)
        status = read_train(&r, s);
    ax_json_free(root);
    root = NULL;
    if (status == AX_STATUS_OK)
        status = open_section(file, "state", &r, &root);
    if (status == AX_STATUS_OK)
        status = read_state(&r, s);
    ax_json_free(root);
    AX_TRY(status);
    const char *note = ax_safetensors_metadata(file, "note");
    if (note && *note) {
        s->note = malloc(strlen(note) + 1);
        if (!s->note)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        strcpy(s->note, note);
        s->config.checkpoint_note = s->note;
    }
    if (s->trainer.epoch >= s->config.epochs && s->trainer.batch > 0)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: checkpoint metadata \"state\": batch %lld of epoch %d is past the last epoch",
                       path, (long long)s->trainer.batch, s->trainer.epoch + 1);
    return AX_STATUS_OK;
}

/* The layout in the metadata decides how much ax_net_create allocates, so it
 * is checked against the weights the file actually holds first: a layout of
 * 2^48 weights in a 2 KB file is refused here, not tried. Counted in double,
 * which is exact far beyond any real file and cannot overflow. */
static ax_status check_layout_size(const ax_safetensors_file *file, const ax_net_config *c)
{
    const char *path = ax_safetensors_path(file);
    const double needed = ax_layout_parameters(c);
    const ax_safetensors_tensor *t = ax_safetensors_find(file, "parameters");
    if (!t)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: the checkpoint lacks the tensor \"parameters\"", path);
    const double held = ax_safetensors_tensor_elements(t);
    if (t->rank != 1 || held != needed)
        return ax_fail(AX_STATUS_BAD_FILE,
                       "%s: the layout in checkpoint metadata \"net\" has %.0f parameters but tensor "
                       "\"parameters\" holds %.0f",
                       path, needed, held);
    return AX_STATUS_OK;
}

ax_status ax_checkpoint_load_sized(const char *path, ax_net **net_out, ax_train_config *config,
                                   size_t config_size, ax_train_state **state_out)
{
    *net_out = NULL;
    *state_out = NULL;
    const size_t least = offsetof(ax_train_config, check_replicas) + sizeof config->check_replicas;
    if (config_size < least || config_size > sizeof *config)
        return ax_fail(AX_STATUS_BAD_ARGUMENT,
                       "a training config of %zu bytes: this library takes %zu to %zu bytes",
                       config_size, least, sizeof *config);
    ax_safetensors_file *file = NULL;
    AX_TRY(ax_safetensors_read(path, &file));
    ax_train_state *s = calloc(1, sizeof *s);
    ax_net *net = NULL;
    ax_status status = s ? load_state(file, s)
                         : ax_fail(AX_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    if (status == AX_STATUS_OK)
        status = check_layout_size(file, &s->net_config);
    if (status == AX_STATUS_OK) {
        status = ax_net_create(&s->net_config, &net);
        if (status != AX_STATUS_OK)
            status = ax_fail_context(status, "%s: checkpoint metadata \"net\"", path);
    }
    if (status == AX_STATUS_OK) {
        s->parameter_count = net->parameter_count;
        status = read_tensors(file, s);
    }
    if (status == AX_STATUS_OK)
        ax_net_parameters_set(net, s->parameters);
    ax_safetensors_free(file);
    if (status != AX_STATUS_OK) {
        ax_net_free(net);
        ax_train_state_free(s);
        return status;
    }
    *net_out = net;
    ax_train_config loaded = s->config;
    loaded.resume = s;
    ax_sized_fill(config, config_size, &loaded, sizeof loaded);
    *state_out = s;
    return AX_STATUS_OK;
}
