/* test_conv_reference.c: holds axon's convolution and pooling networks to
 * an independent float64 implementation. scripts/make_conv_reference.py
 * computed, in NumPy alone (NCHW, sliding windows and einsum, backward
 * written by hand; no im2col), the outputs, mean loss and gradient of a few
 * networks over odd-sized images, strides, paddings and both pooling kinds;
 * it also checks that implementation against PyTorch's conv2d, max_pool2d,
 * avg_pool2d and autograd to 1e-10 (registered as conv_reference_torch,
 * skipped without python3-torch). Here axon must reproduce, in float64, the
 * loss and gradient to 1e-10 relative and ax_net_predict's (float32)
 * outputs to 1e-6; in float32 the loss and gradient to 1e-4. The reference
 * file is committed: a missing or malformed one fails. */
#include <errno.h>
#include <stdint.h>

#include "test_util.h"

#define REFERENCE_NAME "conv_reference.txt"
#define F64_TOLERANCE 1e-10
#define F32_TOLERANCE 1e-4

enum { FIELD_INPUTS, FIELD_ANSWERS, FIELD_PARAMS, FIELD_OUTPUTS, FIELD_LOSS, FIELD_GRADIENT,
       FIELD_COUNT };
static const char *field_names[FIELD_COUNT] = {"inputs", "answers", "params",
                                               "outputs", "loss", "gradient"};

typedef struct reference_case {
    char name[64], layers[256], loss[32];
    int64_t shape[3], rows, outputs;
    double *arrays[FIELD_COUNT];
    int64_t counts[FIELD_COUNT];
} reference_case;

/* Reads "NAME FIELD COUNT v..." into the case's array; false on a malformed line. */
static bool read_array(reference_case *c, char *line)
{
    char name[64], field[32];
    long long count = 0;
    int used = 0;
    if (sscanf(line, "%63s %31s %lld%n", name, field, &count, &used) != 3 ||
        strcmp(name, c->name) != 0 || count < 1 || count > 10000000)
        return false;
    if (strcmp(field, "labels") == 0 || strcmp(field, "targets") == 0)
        snprintf(field, sizeof field, "answers");
    int f = 0;
    while (f < FIELD_COUNT && strcmp(field_names[f], field) != 0)
        f++;
    if (f == FIELD_COUNT || c->arrays[f])
        return false;
    double *values = malloc((size_t)count * sizeof *values);
    if (!values)
        return false;
    char *cursor = line + used;
    for (long long i = 0; i < count; i++) {
        char *end;
        errno = 0;
        values[i] = strtod(cursor, &end);
        if (end == cursor || errno) {
            free(values);
            return false;
        }
        cursor = end;
    }
    c->arrays[f] = values;
    c->counts[f] = count;
    return true;
}

static void check_case(const reference_case *c, ax_precision precision)
{
    const bool f64 = precision == AX_PRECISION_F64;
    const double tolerance = f64 ? F64_TOLERANCE : F32_TOLERANCE;
    const bool classes = strcmp(c->loss, "cross-entropy") == 0;
    const int64_t features = c->shape[0] * c->shape[1] * c->shape[2];
    CHECK(c->counts[FIELD_INPUTS] == c->rows * features);
    CHECK(c->counts[FIELD_OUTPUTS] == c->rows * c->outputs);
    CHECK(c->counts[FIELD_ANSWERS] == c->rows * (classes ? 1 : c->outputs));
    ax_net_config config = ax_net_defaults();
    config.input_width = features;
    memcpy(config.input_shape, c->shape, sizeof config.input_shape);
    config.precision = precision;
    ax_net *net = NULL;
    ax_dataset *data = NULL;
    CHECK_OK(ax_layers_parse(c->layers, &config));
    CHECK_OK(ax_loss_parse(c->loss, &config.loss));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return;
    const int64_t count = ax_net_parameter_count(net);
    CHECK(count == c->counts[FIELD_PARAMS] && count == c->counts[FIELD_GRADIENT]);
    CHECK_OK(ax_dataset_create(c->rows, features, classes ? c->outputs : 0,
                               classes ? 0 : c->outputs, &data));
    if (!data || count != c->counts[FIELD_PARAMS]) {
        ax_net_free(net);
        ax_dataset_free(data);
        return;
    }
    CHECK_OK(ax_dataset_set_image_shape(data, c->shape));
    float *x = ax_dataset_features_data(data);
    for (int64_t i = 0; i < c->rows * features; i++)
        x[i] = (float)c->arrays[FIELD_INPUTS][i];
    for (int64_t i = 0; i < c->counts[FIELD_ANSWERS]; i++) {
        if (classes)
            ax_dataset_labels_data(data)[i] = (int32_t)c->arrays[FIELD_ANSWERS][i];
        else
            ax_dataset_targets_data(data)[i] = (float)c->arrays[FIELD_ANSWERS][i];
    }
    ax_net_parameters_set(net, c->arrays[FIELD_PARAMS]);

    double loss = NAN, largest = 0, gradient_error = 0, output_error = 0;
    double *gradient = malloc((size_t)count * sizeof *gradient);
    float *outputs = malloc((size_t)(c->rows * c->outputs) * sizeof *outputs);
    CHECK(gradient && outputs);
    if (gradient && outputs) {
        CHECK_OK(ax_net_loss_gradient(net, data, 0, c->rows, NULL, &loss, gradient));
        for (int64_t i = 0; i < count; i++)
            largest = fmax(largest, fabs(c->arrays[FIELD_GRADIENT][i]));
        for (int64_t i = 0; i < count; i++)
            gradient_error = fmax(gradient_error,
                                  fabs(gradient[i] - c->arrays[FIELD_GRADIENT][i]) / largest);
        CHECK_OK(ax_net_predict(net, x, c->rows, outputs));
        for (int64_t i = 0; i < c->rows * c->outputs; i++)
            output_error = fmax(output_error, fabs(outputs[i] - c->arrays[FIELD_OUTPUTS][i]));
    }
    const double expected = c->arrays[FIELD_LOSS][0];
    const double loss_error = fabs(loss - expected) / fmax(1e-30, fabs(expected));
    printf("%-18s %s: loss %.3g, gradient %.3g, outputs %.3g\n", c->name, f64 ? "f64" : "f32",
           loss_error, gradient_error, output_error);
    CHECK(loss_error <= tolerance);
    CHECK(gradient_error <= tolerance);
    CHECK(output_error <= (f64 ? 1e-6 : 1e-4));
    free(gradient);
    free(outputs);
    ax_dataset_free(data);
    ax_net_free(net);
}

int main(void)
{
    const char *path = AXON_TEST_DATA "/" REFERENCE_NAME;
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, "%s: cannot open (%s): it is committed with the tests; regenerate it "
                "with scripts/make_conv_reference.py\n", path, strerror(errno));
        return 1;
    }
    size_t capacity = 1 << 20;
    char *line = malloc(capacity);
    reference_case cases[8];
    memset(cases, 0, sizeof cases);
    int case_count = 0;
    bool magic = false;
    while (line && fgets(line, (int)capacity, file)) {
        if (!magic) {
            magic = strncmp(line, "axon-conv-reference 1", 21) == 0;
            CHECK(magic);
            continue;
        }
        if (strncmp(line, "case ", 5) == 0) {
            CHECK(case_count < 8);
            if (case_count == 8)
                break;
            reference_case *c = &cases[case_count++];
            long long h, w, ch, rows, outputs;
            CHECK(sscanf(line, "case %63s shape=%lldx%lldx%lld layers=%255s loss=%31s rows=%lld "
                               "outputs=%lld",
                         c->name, &h, &w, &ch, c->layers, c->loss, &rows, &outputs) == 8);
            c->shape[0] = h, c->shape[1] = w, c->shape[2] = ch;
            c->rows = rows, c->outputs = outputs;
        } else {
            CHECK(case_count > 0 && read_array(&cases[case_count - 1], line));
        }
    }
    fclose(file);
    free(line);
    CHECK(case_count == 3);
    for (int i = 0; i < case_count; i++) {
        bool complete = true;
        for (int f = 0; f < FIELD_COUNT; f++)
            complete = complete && cases[i].arrays[f];
        CHECK(complete);
        if (complete) {
            check_case(&cases[i], AX_PRECISION_F64);
            check_case(&cases[i], AX_PRECISION_F32);
        }
        for (int f = 0; f < FIELD_COUNT; f++)
            free(cases[i].arrays[f]);
    }
    return test_finish("test_conv_reference");
}
