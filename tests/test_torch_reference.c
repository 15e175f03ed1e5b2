/* test_torch_reference.c: holds axon to PyTorch, in the manner of llm.c's
 * test against a PyTorch dump. scripts/make_torch_reference.py wrote, for
 * each case (net, loss, optimizer, float64 and float32), the initial
 * parameters, the data, the outputs, loss and gradient of the first batch and
 * the parameters after every one of the training steps (see the script for
 * the file format). Here axon builds the same net through the public API and
 * must reproduce:
 * - ax_net_predict's outputs of batch 0 at the initial parameters,
 * - ax_net_loss_gradient's loss and gradient of batch 0 (L2 included),
 * - after k = 1 .. steps steps of ax_train (one epoch over the first k
 *   batches, batch size as in the case, no shuffling), the parameters, and
 *   final_train_loss against the mean of torch's k step losses; these
 *   include l2/2 ||W||^2 (the loss each step minimises, as
 *   ax_net_loss_gradient reports it), while evaluations exclude it,
 * to 1e-5 (float64) or 1e-4 (float32) relative error max|a - b| / max|b|.
 * The reference files are committed: a missing or malformed one fails. */
#include <errno.h>
#include <stdint.h>

#include "test_util.h"

#define INDEX_NAME "torch_reference.txt"
#define VALUES_NAME "torch_reference.f64"
#define MAX_CASES 16
#define MAX_INDEX_BYTES (1 << 20)

enum field {
    FIELD_PARAMS0, FIELD_INPUTS, FIELD_LABELS, FIELD_TARGETS, FIELD_OUTPUTS0, FIELD_LOSS0,
    FIELD_GRADIENT0, FIELD_LOSSES, FIELD_OBJECTIVES, FIELD_PARAMS_STEPS, FIELD_COUNT
};
static const char *field_names[FIELD_COUNT] = {"params0", "inputs", "labels", "targets", "outputs0",
                                               "loss0", "gradient0", "losses", "objectives",
                                               "params_steps"};

/* Every case the script writes: a smaller index is a broken reference. */
static const char *expected_cases[] = {"sgd_momentum_f64", "sgd_momentum_f32", "nesterov_l2_f64",
                                       "nesterov_l2_f32", "adam_f64", "adam_f32",
                                       "bce_sgd_f64", "bce_sgd_f32"};

typedef struct reference_case {
    char name[64];
    ax_net_config net;
    ax_layer_spec layers[AX_MAX_LAYERS]; /* net.layers */
    ax_train_config train;
    int64_t classes, targets, steps;
    const double *arrays[FIELD_COUNT]; /* into the values file */
    int64_t counts[FIELD_COUNT];
    bool present[FIELD_COUNT];
} reference_case;

static reference_case cases[MAX_CASES];
static int case_count;

static char *read_file(const char *path, size_t limit, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "%s: cannot open (%s): the reference is committed with the tests; "
                "regenerate it with scripts/make_torch_reference.py\n", path, strerror(errno));
        return NULL;
    }
    char *buffer = NULL;
    long length = -1;
    if (fseek(file, 0, SEEK_END) == 0) length = ftell(file);
    if (length < 0 || (size_t)length > limit || fseek(file, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: cannot size the file or it exceeds %zu bytes\n", path, limit);
    } else if (!(buffer = malloc((size_t)length + 1))) {
        fprintf(stderr, "%s: out of memory\n", path);
    } else if (fread(buffer, 1, (size_t)length, file) != (size_t)length) {
        fprintf(stderr, "%s: short read\n", path);
        free(buffer);
        buffer = NULL;
    } else {
        buffer[length] = '\0';
        *size = (size_t)length;
    }
    fclose(file);
    return buffer;
}

static bool parse_activation(const char *text, size_t length, ax_activation *out)
{
    static const struct { const char *name; ax_activation value; } names[] = {
        {"identity", AX_ACT_IDENTITY}, {"sigmoid", AX_ACT_SIGMOID}, {"tanh", AX_ACT_TANH},
        {"relu", AX_ACT_RELU}, {"softmax", AX_ACT_SOFTMAX}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == length && strncmp(text, names[i].name, length) == 0) {
            *out = names[i].value;
            return true;
        }
    }
    return false;
}

/* "16:relu,16:tanh,5:softmax" into net->layers (room for AX_MAX_LAYERS). */
static bool parse_layers(const char *text, ax_net_config *net, ax_layer_spec *layers)
{
    net->layer_count = 0;
    net->layers = layers;
    while (*text) {
        char *end;
        long width = strtol(text, &end, 10);
        if (end == text || *end != ':' || width <= 0 || net->layer_count >= AX_MAX_LAYERS) return false;
        text = end + 1;
        size_t length = strcspn(text, ",");
        ax_layer_spec *layer = &layers[net->layer_count++];
        *layer = ax_layer_dense(width, AX_ACT_IDENTITY);
        if (!parse_activation(text, length, &layer->dense.activation)) return false;
        text += length;
        if (*text == ',') text++;
    }
    return net->layer_count > 0;
}

static bool parse_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return end != text && *end == '\0' && errno == 0;
}

/* One "key=value" of a case line. */
static bool parse_setting(reference_case *c, const char *key, const char *value)
{
    double number = 0;
    if (strcmp(key, "precision") == 0) {
        if (strcmp(value, "f64") == 0) c->net.precision = AX_PRECISION_F64;
        else if (strcmp(value, "f32") == 0) c->net.precision = AX_PRECISION_F32;
        else return false;
        return true;
    }
    if (strcmp(key, "layers") == 0) return parse_layers(value, &c->net, c->layers);
    if (strcmp(key, "loss") == 0) {
        if (strcmp(value, "cross-entropy") == 0) c->net.loss = AX_LOSS_CROSS_ENTROPY;
        else if (strcmp(value, "binary-cross-entropy") == 0) c->net.loss = AX_LOSS_BINARY_CROSS_ENTROPY;
        else if (strcmp(value, "mse") == 0) c->net.loss = AX_LOSS_MSE;
        else return false;
        return true;
    }
    if (strcmp(key, "optimizer") == 0) {
        if (strcmp(value, "sgd") == 0) c->train.optimizer = AX_OPTIMIZER_SGD;
        else if (strcmp(value, "adam") == 0) c->train.optimizer = AX_OPTIMIZER_ADAM;
        else return false;
        return true;
    }
    if (!parse_number(value, &number)) return false;
    if (strcmp(key, "input") == 0) c->net.input_width = (int64_t)number;
    else if (strcmp(key, "classes") == 0) c->classes = (int64_t)number;
    else if (strcmp(key, "targets") == 0) c->targets = (int64_t)number;
    else if (strcmp(key, "lr") == 0) c->train.learning_rate = number;
    else if (strcmp(key, "momentum") == 0) c->train.momentum = number;
    else if (strcmp(key, "beta1") == 0) c->train.beta1 = number;
    else if (strcmp(key, "beta2") == 0) c->train.beta2 = number;
    else if (strcmp(key, "epsilon") == 0) c->train.epsilon = number;
    else if (strcmp(key, "l2") == 0) c->train.l2 = number;
    else if (strcmp(key, "nesterov") == 0) c->train.nesterov = number != 0;
    else if (strcmp(key, "batch") == 0) c->train.batch_size = (int64_t)number;
    else if (strcmp(key, "steps") == 0) c->steps = (int64_t)number;
    else return false;
    return true;
}

static reference_case *find_case(const char *name)
{
    for (int i = 0; i < case_count; i++)
        if (strcmp(cases[i].name, name) == 0) return &cases[i];
    return NULL;
}

static int64_t parameter_count(const ax_net_config *net)
{
    int64_t count = 0, width = net->input_width;
    for (int l = 0; l < net->layer_count; l++) {
        count += (width + 1) * net->layers[l].dense.units;
        width = net->layers[l].dense.units;
    }
    return count;
}

/* The counts each array must have, from the case's settings. */
static bool check_shapes(const char *path, reference_case *c)
{
    int64_t p = parameter_count(&c->net), rows = c->steps * c->train.batch_size;
    int64_t outputs = c->net.layer_count ? c->net.layers[c->net.layer_count - 1].dense.units : 0;
    int64_t expected[FIELD_COUNT] = {p, rows * c->net.input_width, c->classes ? rows : 0,
                                     rows * c->targets, c->train.batch_size * outputs, 1, p,
                                     c->steps, c->steps, c->steps * p};
    bool ok = c->net.layer_count > 0 && c->net.input_width > 0 && c->steps > 0 &&
              c->train.batch_size > 0 && (c->classes > 0) != (c->targets > 0);
    for (int f = 0; ok && f < FIELD_COUNT; f++) {
        bool wanted = expected[f] > 0;
        if (wanted != c->present[f] || (wanted && c->counts[f] != expected[f])) {
            fprintf(stderr, "%s: case %s: array %s has %lld values, expected %lld\n", path, c->name,
                    field_names[f], (long long)(c->present[f] ? c->counts[f] : 0),
                    (long long)expected[f]);
            ok = false;
        }
    }
    if (!ok) fprintf(stderr, "%s: case %s is malformed\n", path, c->name);
    return ok;
}

/* Reads the index and the values; any defect is an error (returns NULL). */
static double *load_reference(const char *folder)
{
    char index_path[4096], values_path[4096];
    snprintf(index_path, sizeof index_path, "%s/%s", folder, INDEX_NAME);
    snprintf(values_path, sizeof values_path, "%s/%s", folder, VALUES_NAME);
    size_t index_size = 0, values_size = 0;
    char *index = read_file(index_path, MAX_INDEX_BYTES, &index_size);
    if (!index) return NULL;
    double *values = NULL;
    int64_t total = -1;
    int line_number = 0;
    bool ok = true, reported = false;
    for (char *line = strtok(index, "\n"); ok && line; line = strtok(NULL, "\n")) {
        line_number++;
        char kind[16] = "", name[64] = "", field[32] = "";
        long long offset = -1, count = -1;
        int used = 0;
        if (line_number == 1) {
            ok = strcmp(line, "axon-torch-reference 1") == 0;
        } else if (line[0] == '#') {
            continue;
        } else if (sscanf(line, "%15s", kind) != 1) {
            ok = false;
        } else if (strcmp(kind, "values") == 0) {
            ok = total < 0 && sscanf(line, "values %lld%n", &offset, &used) == 1 && offset > 0 &&
                 line[used] == '\0';
            total = offset;
            if (!ok) break;
            unsigned char *bytes = (unsigned char *)read_file(values_path, (size_t)total * 8 + 1, &values_size);
            if (!bytes) {
                free(index);
                return NULL;
            }
            if (values_size != (size_t)total * 8) {
                fprintf(stderr, "%s: %zu bytes, but %s says %lld float64 values\n", values_path,
                        values_size, index_path, (long long)total);
                free(bytes);
                ok = false;
                reported = true;
                break;
            }
            values = malloc((size_t)total * sizeof *values);
            for (int64_t i = 0; values && i < total; i++) {
                uint64_t bits = 0;
                for (int b = 7; b >= 0; b--) bits = bits << 8 | bytes[8 * i + b]; /* little-endian */
                memcpy(&values[i], &bits, sizeof bits);
            }
            free(bytes);
            ok = values != NULL;
        } else if (strcmp(kind, "case") == 0) {
            ok = case_count < MAX_CASES && sscanf(line, "case %63s%n", name, &used) == 1 && !find_case(name);
            if (!ok) break;
            reference_case *c = &cases[case_count++];
            memset(c, 0, sizeof *c);
            snprintf(c->name, sizeof c->name, "%s", name);
            c->net = ax_net_defaults();
            c->train = ax_train_defaults();
            for (char *setting = line + used; ok && *setting;) {
                setting += strspn(setting, " ");
                size_t length = strcspn(setting, " ");
                if (!length) break;
                char buffer[512];
                ok = length < sizeof buffer;
                if (!ok) break;
                memcpy(buffer, setting, length);
                buffer[length] = '\0';
                char *equals = strchr(buffer, '=');
                ok = equals != NULL;
                if (ok) {
                    *equals = '\0';
                    ok = parse_setting(c, buffer, equals + 1);
                }
                setting += length;
            }
        } else if (strcmp(kind, "array") == 0) {
            ok = sscanf(line, "array %63s %31s %lld %lld%n", name, field, &offset, &count, &used) == 4 &&
                 line[used] == '\0' && values && offset >= 0 && count > 0 && offset + count <= total;
            reference_case *c = ok ? find_case(name) : NULL;
            ok = c != NULL;
            int f = 0;
            while (ok && f < FIELD_COUNT && strcmp(field_names[f], field) != 0) f++;
            ok = ok && f < FIELD_COUNT && !c->present[f];
            if (ok) {
                c->present[f] = true;
                c->arrays[f] = values + offset;
                c->counts[f] = count;
            }
        } else {
            ok = false;
        }
    }
    if (!ok && !reported) fprintf(stderr, "%s:%d: malformed line\n", index_path, line_number);
    if (ok && !values) {
        fprintf(stderr, "%s: no values line\n", index_path);
        ok = false;
    }
    for (int i = 0; ok && i < case_count; i++) ok = check_shapes(index_path, &cases[i]);
    for (size_t i = 0; ok && i < sizeof expected_cases / sizeof expected_cases[0]; i++) {
        if (!find_case(expected_cases[i])) {
            fprintf(stderr, "%s: case %s is missing\n", index_path, expected_cases[i]);
            ok = false;
        }
    }
    free(index);
    if (!ok) {
        free(values);
        return NULL;
    }
    return values;
}

/* max |a - b| / max |b| */
static double relative_error(const double *a, const double *b, int64_t count)
{
    double difference = 0, scale = 0;
    for (int64_t i = 0; i < count; i++) {
        difference = fmax(difference, fabs(a[i] - b[i]));
        if (isnan(a[i])) difference = INFINITY;
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? difference / scale : difference;
}

static bool within(const reference_case *c, const char *what, double error, double tolerance)
{
    if (error <= tolerance) return true;
    fprintf(stderr, "%s: %s differs from torch by %.3g relative (tolerance %g)\n", c->name, what,
            error, tolerance);
    test_failures++;
    return false;
}

/* The first rows of the case's data as an axon dataset. */
static ax_dataset *make_dataset(const reference_case *c, int64_t rows)
{
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, c->net.input_width, c->classes, c->targets, &data));
    if (!data) return NULL;
    float *features = ax_dataset_features_data(data);
    for (int64_t i = 0; i < rows * c->net.input_width; i++)
        features[i] = (float)c->arrays[FIELD_INPUTS][i];
    if (c->classes) {
        int32_t *labels = ax_dataset_labels_data(data);
        for (int64_t r = 0; r < rows; r++) labels[r] = (int32_t)c->arrays[FIELD_LABELS][r];
    } else {
        float *targets = ax_dataset_targets_data(data);
        for (int64_t i = 0; i < rows * c->targets; i++) targets[i] = (float)c->arrays[FIELD_TARGETS][i];
    }
    return data;
}

static void run_case(const reference_case *c)
{
    double tolerance = c->net.precision == AX_PRECISION_F64 ? 1e-5 : 1e-4;
    int64_t p = c->counts[FIELD_PARAMS0], batch = c->train.batch_size;
    int64_t outputs = c->net.layers[c->net.layer_count - 1].dense.units;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&c->net, &net));
    if (!net) return;
    CHECK(ax_net_parameter_count(net) == p);
    double *params = malloc((size_t)p * sizeof *params), *gradient = malloc((size_t)p * sizeof *gradient);
    float *predicted = malloc((size_t)(batch * outputs) * sizeof *predicted);
    double *predicted64 = malloc((size_t)(batch * outputs) * sizeof *predicted64);
    ax_dataset *data = make_dataset(c, c->steps * batch);
    if (!params || !gradient || !predicted || !predicted64 || !data || ax_net_parameter_count(net) != p) {
        test_failures++;
        goto done;
    }

    /* Forward pass, loss and gradient of batch 0 at the initial parameters. */
    ax_net_parameters_set(net, c->arrays[FIELD_PARAMS0]);
    ax_net_parameters_get(net, params);
    CHECK(memcmp(params, c->arrays[FIELD_PARAMS0], (size_t)p * sizeof *params) == 0);
    CHECK_OK(ax_net_predict(net, ax_dataset_features_data(data), batch, predicted));
    for (int64_t i = 0; i < batch * outputs; i++) predicted64[i] = predicted[i];
    double output_error = relative_error(predicted64, c->arrays[FIELD_OUTPUTS0], batch * outputs);
    within(c, "outputs of batch 0", output_error, tolerance);
    ax_regularization regularization = {.size = sizeof(ax_regularization), .l2 = c->train.l2};
    double loss = NAN;
    CHECK_OK(ax_net_loss_gradient(net, data, 0, batch, &regularization, &loss, gradient));
    double loss_error = relative_error(&loss, c->arrays[FIELD_LOSS0], 1);
    double gradient_error = relative_error(gradient, c->arrays[FIELD_GRADIENT0], p);
    within(c, "loss of batch 0", loss_error, tolerance);
    within(c, "gradient of batch 0", gradient_error, tolerance);

    /* k steps = one epoch over the first k batches, from the initial
     * parameters and fresh optimizer state each time. */
    double worst_params = 0, worst_loss = 0, objective_sum = 0, data_loss_sum = 0;
    for (int64_t k = 1; k <= c->steps; k++) {
        ax_dataset *prefix = make_dataset(c, k * batch);
        if (!prefix) break;
        ax_train_config train = c->train;
        train.epochs = 1;
        train.shuffle = false;
        train.dropout = 0;
        train.early_stop = 0;
        train.progress = NULL;
        ax_train_summary summary = ax_train_summary_empty();
        ax_net_parameters_set(net, c->arrays[FIELD_PARAMS0]);
        ax_status status = ax_train(net, prefix, NULL, NULL, &train, &summary);
        ax_dataset_free(prefix);
        if (status != AX_STATUS_OK) {
            fprintf(stderr, "%s: ax_train over %lld batches failed: %s: %s\n", c->name, (long long)k,
                    ax_status_name(status), ax_error_message());
            test_failures++;
            break;
        }
        CHECK(summary.epochs_run == 1);
        ax_net_parameters_get(net, params);
        const double *expected = c->arrays[FIELD_PARAMS_STEPS] + (k - 1) * p;
        double error = relative_error(params, expected, p);
        worst_params = fmax(worst_params, error);
        char what[256];
        snprintf(what, sizeof what, "parameters after step %lld", (long long)k);
        if (!within(c, what, error, tolerance)) break; /* later steps inherit the error */
        objective_sum += c->arrays[FIELD_OBJECTIVES][k - 1];
        data_loss_sum += c->arrays[FIELD_LOSSES][k - 1];
        double mean = objective_sum / (double)k;
        double mean_error = relative_error(&summary.final_train_loss, &mean, 1);
        worst_loss = fmax(worst_loss, mean_error);
        snprintf(what, sizeof what, "final_train_loss after %lld steps (%.17g vs torch's mean step "
                 "loss %.17g; without l2 %.17g)", (long long)k, summary.final_train_loss, mean,
                 data_loss_sum / (double)k);
        within(c, what, mean_error, tolerance);
    }
    /* The steps must move the parameters well beyond the tolerance, or the
     * comparison above would prove nothing. */
    double moved = relative_error(c->arrays[FIELD_PARAMS_STEPS] + (c->steps - 1) * p,
                                  c->arrays[FIELD_PARAMS0], p);
    CHECK(moved > 100 * tolerance);
    printf("%-18s outputs %.2g  loss %.2g  gradient %.2g  parameters %.2g  train loss %.2g  "
           "(tolerance %g; the steps moved the parameters by %.2g)\n",
           c->name, output_error, loss_error, gradient_error, worst_params, worst_loss, tolerance, moved);
done:
    ax_dataset_free(data);
    free(params);
    free(gradient);
    free(predicted);
    free(predicted64);
    ax_net_free(net);
}

int main(void)
{
    double *values = load_reference(AXON_TEST_DATA);
    if (!values) {
        fprintf(stderr, "test_torch_reference: the reference in %s is missing or malformed\n",
                AXON_TEST_DATA);
        return 1;
    }
    for (int i = 0; i < case_count; i++) run_case(&cases[i]);
    free(values);
    return test_finish("test_torch_reference");
}
