/* test_stats.c: the activation statistics (entropy and mutual information
 * of softmax outputs, third-order tensor mean),
 * the layer activations they run on, the
 * float32 .npy reader/writer, and `axon stats`.
 *
 * References are float64 and naive on purpose: the softmax is stored, MI is
 * the full double sum over (i, j) (no factorisation), and the tensor mean is
 * the direct loop over (n, i, j, k); the library must agree within 1e-3
 * relative, as their benchmarks ask. A committed NumPy reference (scripts/make_stats_reference.py)
 * pins the same figures from outside C. Where the CPU has AVX-512 the
 * statistics run hand-written kernels (src/stats/dispatch.h); every case
 * runs with those and again with the portable kernels forced. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/random.h"
#include "stats/dispatch.h"
#include "stats_reference.h"
#include "test_util.h"
#include "test_files.h"

/* The command line's figures against the library's, relative: the two sum in
 * float64 but may use different kernels (AVX-512 or portable), whose sums of
 * float32 terms differ in their last digits (5e-8 measured). */
#define CLI_TOLERANCE 1e-6


/* References: tests/stats_reference.h. */

static float *random_array(ax_rng *rng, int64_t count, double scale)
{
    float *a = malloc((size_t)count * sizeof *a);
    for (int64_t i = 0; i < count; i++)
        a[i] = (float)(scale * ax_rng_normal(rng));
    return a;
}

/* -------------------------------------------------------------- entropy-mi */

static void check_entropy_case(ax_rng *rng, int64_t rows, int64_t d, double scale)
{
    float *x = random_array(rng, rows * d, scale), *y = random_array(rng, rows * d, scale);
    double h = NAN, mi = NAN, h_ref, mi_ref;
    CHECK_OK(ax_stats_entropy_mi(x, y, rows, d, &h, &mi));
    reference_entropy_mi(x, y, rows, d, true, &h_ref, &mi_ref);
    CHECK_NEAR(h, h_ref, 1e-5);
    CHECK_NEAR(mi, mi_ref, 1e-5);
    CHECK(isfinite(h) && isfinite(mi));
    free(x);
    free(y);
}

static void test_entropy_mi(void)
{
    ax_rng rng;
    ax_rng_seed(&rng, 4);
    check_entropy_case(&rng, 1, 256, 1.0);     /* B = 1 */
    check_entropy_case(&rng, 1000, 256, 3.0);  /* threads, the benchmark's D */
    check_entropy_case(&rng, 333, 1027, 1.0);  /* d beyond one float chunk, odd sizes */
    check_entropy_case(&rng, 17, 3, 1.0);
    check_entropy_case(&rng, 8, 256, 1e4);     /* large logits: exp must not overflow */
    check_entropy_case(&rng, 8, 256, 1e-4);    /* nearly uniform: H = -1/d */

    /* D = 1: P = Q = 1 whatever the logit, so H = -1 and MI = 1. */
    float one_x[3] = {5.0f, -1e4f, 1e4f}, one_y[3] = {0.0f, 3e4f, -7.0f};
    double h = 0.0, mi = 0.0;
    CHECK_OK(ax_stats_entropy_mi(one_x, one_y, 3, 1, &h, &mi));
    CHECK(h == -1.0 && mi == 1.0);

    /* Exact values: a row with one logit far above the rest is one-hot
     * (sum P^2 = 1); equal logits give sum P^2 = 1/d. */
    float hot[4] = {1e4f, -1e4f, 0.0f, 1e4f - 100.0f}, flat[4] = {2.0f, 2.0f, 2.0f, 2.0f};
    CHECK_OK(ax_stats_entropy_mi(hot, flat, 1, 4, &h, &mi));
    CHECK_NEAR(h, -1.0, 1e-12);
    CHECK_NEAR(mi, 0.25, 1e-7);

    /* Either output may be NULL. */
    CHECK_OK(ax_stats_entropy_mi(hot, flat, 1, 4, NULL, &mi));
    CHECK_OK(ax_stats_entropy_mi(hot, flat, 1, 4, &h, NULL));

    /* Every remainder of d modulo the 16 lanes, and chunk boundaries. */
    const int64_t widths[] = {2, 15, 16, 17, 31, 33, 511, 512, 513};
    for (int i = 0; i < 9; i++)
        check_entropy_case(&rng, 5, widths[i], 2.0);

    /* Threads add their partial sums in a fixed order: the same call twice
     * gives the same bits. */
    float *x = random_array(&rng, 4096 * 256, 2.0), *y = random_array(&rng, 4096 * 256, 2.0);
    double h2 = 0.0, mi2 = 0.0;
    CHECK_OK(ax_set_threads(2));
    CHECK_OK(ax_stats_entropy_mi(x, y, 4096, 256, &h, &mi));
    CHECK_OK(ax_stats_entropy_mi(x, y, 4096, 256, &h2, &mi2));
    CHECK(h == h2 && mi == mi2);
    CHECK_OK(ax_set_threads(0));
    free(x);
    free(y);
}

static void test_entropy_bad_input(void)
{
    float x[12], y[12];
    for (int i = 0; i < 12; i++)
        x[i] = y[i] = (float)i;
    double h, mi;
    CHECK_FAILS(ax_stats_entropy_mi(x, y, 0, 4, &h, &mi), AX_STATUS_BAD_ARGUMENT,
                "the arrays are empty (0 rows of 4 values)");
    CHECK_FAILS(ax_stats_entropy_mi(x, y, 3, 0, &h, &mi), AX_STATUS_BAD_ARGUMENT,
                "the arrays are empty (3 rows of 0 values)");
    CHECK_FAILS(ax_stats_entropy_mi(x, NULL, 3, 4, &h, &mi), AX_STATUS_BAD_ARGUMENT,
                "the y array is missing");
    x[2 * 4 + 1] = NAN;
    CHECK_FAILS(ax_stats_entropy_mi(x, y, 3, 4, &h, &mi), AX_STATUS_BAD_DATA,
                "x [row 2, column 1] is NaN");
    x[2 * 4 + 1] = 0.0f;
    y[1 * 4 + 3] = -INFINITY; /* would vanish in the softmax: must still be refused */
    CHECK_FAILS(ax_stats_entropy_mi(x, y, 3, 4, &h, &mi), AX_STATUS_BAD_DATA,
                "y [row 1, column 3] is Inf");
    /* In the threaded path too. */
    ax_rng rng;
    ax_rng_seed(&rng, 5);
    float *big_x = random_array(&rng, 4096 * 64, 1.0), *big_y = random_array(&rng, 4096 * 64, 1.0);
    big_y[4000 * 64 + 63] = INFINITY;
    CHECK_FAILS(ax_stats_entropy_mi(big_x, big_y, 4096, 64, &h, &mi), AX_STATUS_BAD_DATA,
                "y [row 4000, column 63] is Inf");
    /* -Inf, +Inf and NaN in whole vectors of 16 as well as in the tail. */
    big_y[4000 * 64 + 63] = 0.5f;
    big_x[17 * 64 + 5] = -INFINITY;
    CHECK_FAILS(ax_stats_entropy_mi(big_x, big_y, 4096, 64, &h, &mi), AX_STATUS_BAD_DATA,
                "x [row 17, column 5] is Inf");
    big_x[17 * 64 + 5] = 0.5f;
    big_y[4095 * 64 + 40] = INFINITY;
    CHECK_FAILS(ax_stats_entropy_mi(big_x, big_y, 4096, 64, &h, &mi), AX_STATUS_BAD_DATA,
                "y [row 4095, column 40] is Inf");
    big_y[4095 * 64 + 40] = NAN;
    CHECK_FAILS(ax_stats_entropy_mi(big_x, big_y, 4096, 64, &h, &mi), AX_STATUS_BAD_DATA,
                "y [row 4095, column 40] is NaN");
    big_y[4095 * 64 + 40] = 0.5f;
    CHECK_OK(ax_stats_entropy_mi(big_x, big_y, 4096, 64, &h, &mi));
    free(big_x);
    free(big_y);
}

/* Figures computed by NumPy in float64 (scripts/make_stats_reference.py). */
static void test_numpy_reference(void)
{
    float *x = NULL, *y = NULL;
    int64_t xr = 0, xc = 0, yr = 0, yc = 0;
    CHECK_OK(ax_npy_read_f32(AXON_TEST_DATA "/stats_x.npy", &x, &xr, &xc));
    CHECK_OK(ax_npy_read_f32(AXON_TEST_DATA "/stats_y.npy", &y, &yr, &yc));
    CHECK(xr == 64 && xc == 16 && yr == 64 && yc == 16);
    FILE *file = fopen(AXON_TEST_DATA "/stats_reference.txt", "r");
    CHECK(file != NULL);
    double h_ref = NAN, mi_ref = NAN;
    char line[256];
    while (file && fgets(line, sizeof line, file)) {
        sscanf(line, "entropy %lf", &h_ref);
        sscanf(line, "mutual_information %lf", &mi_ref);
    }
    if (file)
        fclose(file);
    CHECK(isfinite(h_ref) && isfinite(mi_ref));
    double h = NAN, mi = NAN;
    if (x && y && xr == yr && xc == yc) {
        CHECK_OK(ax_stats_entropy_mi(x, y, xr, xc, &h, &mi));
        CHECK_NEAR(h, h_ref, 1e-5);
        CHECK_NEAR(mi, mi_ref, 1e-5);
        double h_c, mi_c;
        reference_entropy_mi(x, y, xr, xc, true, &h_c, &mi_c);
        CHECK_NEAR(h_c, h_ref, 1e-12); /* the C reference is NumPy's */
        CHECK_NEAR(mi_c, mi_ref, 1e-12);
    }
    free(x);
    free(y);
}

/* ------------------------------------------------------------- tensor mean */

/* max |a - ref| / max |ref|: the error relative to the tensor's scale. */
static double tensor_error(const float *a, const double *ref, int64_t count)
{
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < count; i++) {
        worst = fmax(worst, fabs(a[i] - ref[i]));
        scale = fmax(scale, fabs(ref[i]));
    }
    return scale > 0 ? worst / scale : worst;
}

static void check_tensor_case(ax_rng *rng, int64_t n, int64_t d)
{
    float *fx = random_array(rng, n * d, 1.0), *fy = random_array(rng, n * d, 1.0);
    float *fz = random_array(rng, n * d, 1.0);
    float *out = malloc((size_t)(d * d * d) * sizeof *out);
    double *ref = malloc((size_t)(d * d * d) * sizeof *ref);
    CHECK_OK(ax_stats_tensor_mean(fx, fy, fz, n, d, out));
    reference_tensor_mean(fx, fy, fz, n, d, ref);
    double error = tensor_error(out, ref, d * d * d);
    if (!(error <= 1e-5))
        fprintf(stderr, "tensor mean n=%lld d=%lld: relative error %g\n", (long long)n,
                (long long)d, error);
    CHECK(error <= 1e-5);
    free(fx);
    free(fy);
    free(fz);
    free(out);
    free(ref);
}

static void test_tensor_mean(void)
{
    ax_rng rng;
    ax_rng_seed(&rng, 6);
    check_tensor_case(&rng, 1, 1);
    check_tensor_case(&rng, 1, 32);     /* N = 1 */
    check_tensor_case(&rng, 64, 1);     /* D = 1 */
    check_tensor_case(&rng, 300, 7);    /* a partial last block */
    check_tensor_case(&rng, 8192, 32);  /* the largest N: 32 blocks of 256 rows */
    check_tensor_case(&rng, 100, 70);   /* blocks of 53 rows */
    check_tensor_case(&rng, 20, 110);   /* d^3 too large for per-thread copies */
    /* Per-thread ranges of blocks, uneven with 3 threads (32 blocks), and
     * more threads than blocks. */
    CHECK_OK(ax_set_threads(3));
    check_tensor_case(&rng, 8192, 32);
    check_tensor_case(&rng, 300, 7);
    CHECK_OK(ax_set_threads(0));
    /* The AVX-512 kernel's tiles of 16, 8, 4, 2, 1 columns j, its masked
     * vectors of k, and its limit d = 64 (the BLAS above). */
    const int64_t widths[] = {15, 16, 17, 31, 33, 47, 63, 64, 65};
    for (int i = 0; i < 9; i++)
        check_tensor_case(&rng, 150, widths[i]);

    /* Exact: A[i,j,k] = fx_i fy_j fz_k for one row. */
    float fx[2] = {1, 2}, fy[2] = {3, 4}, fz[2] = {5, 6}, out[8];
    CHECK_OK(ax_stats_tensor_mean(fx, fy, fz, 1, 2, out));
    CHECK(out[0] == 15 && out[1] == 18 && out[2] == 20 && out[3] == 24 && out[4] == 30 &&
          out[5] == 36 && out[6] == 40 && out[7] == 48);

    CHECK_FAILS(ax_stats_tensor_mean(fx, fy, fz, 0, 2, out), AX_STATUS_BAD_ARGUMENT,
                "the arrays are empty (0 rows of 2 values)");
    CHECK_FAILS(ax_stats_tensor_mean(fx, fy, fz, 1, 0, out), AX_STATUS_BAD_ARGUMENT,
                "the arrays are empty");
    CHECK_FAILS(ax_stats_tensor_mean(fx, fy, NULL, 1, 2, out), AX_STATUS_BAD_ARGUMENT,
                "the fz array is missing");
    CHECK_FAILS(ax_stats_tensor_mean(fx, fy, fz, 1, 5000, out), AX_STATUS_BAD_ARGUMENT,
                "too large");
    float bad[6] = {0, 1, 2, 3, NAN, 5};
    float fine[6] = {0, 1, 2, 3, 4, 5};
    CHECK_FAILS(ax_stats_tensor_mean(fine, fine, bad, 3, 2, out), AX_STATUS_BAD_DATA,
                "fz [row 2, column 0] is NaN");
    bad[4] = 4;
    bad[1] = -INFINITY;
    CHECK_FAILS(ax_stats_tensor_mean(fine, bad, fine, 3, 2, out), AX_STATUS_BAD_DATA,
                "fy [row 0, column 1] is Inf");
}

/* ------------------------------------------------------------- activations */

static void test_activations(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 5;
    CHECK_OK(ax_layers_parse("7:relu,6:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return;
    const int64_t rows = 37;
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_create(rows, 5, 3, 0, &data));
    ax_rng rng;
    ax_rng_seed(&rng, 7);
    float *features = ax_dataset_features_data(data);
    for (int64_t i = 0; i < rows * 5; i++)
        features[i] = (float)ax_rng_normal(&rng);

    /* Layer 0 by hand: relu(W x + b) from the parameters. */
    double *params = malloc((size_t)ax_net_parameter_count(net) * sizeof *params);
    ax_net_parameters_get(net, params);
    float *act0 = malloc((size_t)(rows * 7) * sizeof *act0);
    CHECK_OK(ax_net_activations(net, data, 0, act0));
    double worst = 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int o = 0; o < 7; o++) {
            double z = params[7 * 5 + o];
            for (int i = 0; i < 5; i++)
                z += params[o * 5 + i] * features[r * 5 + i];
            worst = fmax(worst, fabs(fmax(z, 0.0) - act0[r * 7 + o]));
        }
    CHECK(worst < 1e-5);

    /* The output layer is what predict gives. */
    float *act2 = malloc((size_t)(rows * 3) * sizeof *act2);
    float *predicted = malloc((size_t)(rows * 3) * sizeof *predicted);
    CHECK_OK(ax_net_activations(net, data, 2, act2));
    CHECK_OK(ax_net_predict(net, features, rows, predicted));
    CHECK(memcmp(act2, predicted, (size_t)(rows * 3) * sizeof(float)) == 0);

    /* Entropy of the tanh layer against itself runs on real activations. */
    float *act1 = malloc((size_t)(rows * 6) * sizeof *act1);
    CHECK_OK(ax_net_activations(net, data, 1, act1));
    double h, mi, h_ref, mi_ref;
    CHECK_OK(ax_stats_entropy_mi(act1, act1, rows, 6, &h, &mi));
    reference_entropy_mi(act1, act1, rows, 6, true, &h_ref, &mi_ref);
    CHECK_NEAR(h, h_ref, 1e-6);
    CHECK_NEAR(mi, mi_ref, 1e-6);

    CHECK_FAILS(ax_net_activations(net, data, 3, act2), AX_STATUS_BAD_ARGUMENT,
                "layer 3 does not exist: this network has 3 layers, numbered 0 to 2");
    CHECK_FAILS(ax_net_activations(net, data, -1, act2), AX_STATUS_BAD_ARGUMENT,
                "layer -1 does not exist");
    ax_dataset *narrow = NULL;
    CHECK_OK(ax_dataset_create(4, 4, 3, 0, &narrow));
    CHECK_FAILS(ax_net_activations(net, narrow, 0, act2), AX_STATUS_BAD_DATA,
                "has 4 features but the network takes 5 inputs");

    /* Files for the command-line tests. */
    char path[128];
    snprintf(path, sizeof path, "%s/net.safetensors", work_dir);
    CHECK_OK(ax_net_save(net, path));
    snprintf(path, sizeof path, "%s/features.npy", work_dir);
    int64_t shape[2] = {rows, 5};
    CHECK_OK(ax_npy_write_f32(path, features, 2, shape));
    float *labels = calloc((size_t)rows, sizeof *labels);
    snprintf(path, sizeof path, "%s/labels.npy", work_dir);
    CHECK_OK(ax_npy_write_f32(path, labels, 1, shape));
    snprintf(path, sizeof path, "%s/act1.npy", work_dir);
    int64_t act_shape[2] = {rows, 6};
    CHECK_OK(ax_npy_write_f32(path, act1, 2, act_shape));

    free(labels);
    free(params);
    free(act0);
    free(act1);
    free(act2);
    free(predicted);
    ax_dataset_free(narrow);
    ax_dataset_free(data);
    ax_net_free(net);
}

/* -------------------------------------------------------------------- npy */

static void test_npy(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/cube.npy", work_dir);
    float values[24];
    for (int i = 0; i < 24; i++)
        values[i] = (float)i - 3.5f;
    int64_t shape[3] = {2, 3, 4};
    CHECK_OK(ax_npy_write_f32(path, values, 3, shape));
    float *data = NULL;
    int64_t rows, cols;
    CHECK_FAILS(ax_npy_read_f32(path, &data, &rows, &cols), AX_STATUS_BAD_DATA,
                "the shape has 3 dimensions");
    CHECK(data == NULL);
    int64_t flat[1] = {24};
    CHECK_OK(ax_npy_write_f32(path, values, 1, flat));
    CHECK_OK(ax_npy_read_f32(path, &data, &rows, &cols));
    CHECK(rows == 24 && cols == 1 && data && memcmp(data, values, sizeof values) == 0);
    free(data);
    data = NULL;
    int64_t matrix[2] = {6, 4};
    CHECK_OK(ax_npy_write_f32(path, values, 2, matrix));
    CHECK_OK(ax_npy_read_f32(path, &data, &rows, &cols));
    CHECK(rows == 6 && cols == 4 && data && memcmp(data, values, sizeof values) == 0);
    free(data);
    snprintf(path, sizeof path, "%s/missing/dir/a.npy", work_dir);
    CHECK_FAILS(ax_npy_write_f32(path, values, 1, flat), AX_STATUS_IO_ERROR, "cannot create");
    CHECK_FAILS(ax_npy_read_f32(path, &data, &rows, &cols), AX_STATUS_BAD_FILE, "cannot open");
}

/* ------------------------------------------------------------------ CLI */

/* Runs the axon command with args; returns its exit status, output in *text. */
static int run_cli(const char *args, char *text, size_t capacity)
{
    char command[2048];
    snprintf(command, sizeof command, "cd '%s' && '%s' %s > out.txt 2>&1", work_dir, AXON_CLI,
             args);
    int status = system(command);
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", work_dir);
    FILE *file = fopen(path, "r");
    size_t got = file ? fread(text, 1, capacity - 1, file) : 0;
    text[got] = '\0';
    if (file)
        fclose(file);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_array(const char *name, const float *values, int64_t rows, int64_t cols)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", work_dir, name);
    int64_t shape[2] = {rows, cols};
    CHECK_OK(ax_npy_write_f32(path, values, 2, shape));
}

static double json_field(const char *text, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(text, pattern);
    return at ? strtod(at + strlen(pattern), NULL) : NAN;
}

static void test_cli(void)
{
    char text[65536];
    float *x = NULL, *y = NULL;
    int64_t rows, cols;
    CHECK_OK(ax_npy_read_f32(AXON_TEST_DATA "/stats_x.npy", &x, &rows, &cols));
    CHECK_OK(ax_npy_read_f32(AXON_TEST_DATA "/stats_y.npy", &y, &rows, &cols));
    if (!x || !y)
        return;
    double h, mi;
    CHECK_OK(ax_stats_entropy_mi(x, y, rows, cols, &h, &mi));
    char args[1024];
    snprintf(args, sizeof args, "stats entropy-mi --x %s/stats_x.npy --y %s/stats_y.npy --json",
             AXON_TEST_DATA, AXON_TEST_DATA);
    CHECK(run_cli(args, text, sizeof text) == 0);
    /* CLI_TOLERANCE: the child may run another kernel than this process
     * (under valgrind, which hides AVX-512, this one runs the portable one). */
    CHECK_NEAR(json_field(text, "entropy"), h, CLI_TOLERANCE);
    CHECK_NEAR(json_field(text, "mutual_information"), mi, CLI_TOLERANCE);
    CHECK(json_field(text, "rows") == 64 && json_field(text, "d") == 16);
    snprintf(args, sizeof args, "stats entropy-mi --x %s/stats_x.npy --y %s/stats_y.npy",
             AXON_TEST_DATA, AXON_TEST_DATA);
    CHECK(run_cli(args, text, sizeof text) == 0);
    CHECK(strstr(text, "entropy H") && strstr(text, "mutual information"));

    /* Mismatched shapes. */
    write_array("short.npy", x, 63, 16);
    snprintf(args, sizeof args, "stats entropy-mi --x %s/stats_x.npy --y short.npy",
             AXON_TEST_DATA);
    CHECK(run_cli(args, text, sizeof text) == 1);
    CHECK(strstr(text, "is (64, 16) but short.npy is (63, 16)") != NULL);
    /* NaN named by row and column. */
    x[5 * 16 + 9] = NAN;
    write_array("nan.npy", x, 64, 16);
    snprintf(args, sizeof args, "stats entropy-mi --x nan.npy --y %s/stats_y.npy", AXON_TEST_DATA);
    CHECK(run_cli(args, text, sizeof text) == 1);
    CHECK(strstr(text, "x [row 5, column 9] is NaN") != NULL);
    CHECK(run_cli("stats entropy-mi --x nan.npy", text, sizeof text) == 2);
    CHECK(run_cli("stats entropi-mi", text, sizeof text) == 2);
    CHECK(strstr(text, "did you mean 'entropy-mi'") != NULL);

    /* Tensor mean through the CLI equals the library's, saved as .npy. */
    write_array("fx.npy", y, 64, 16);
    write_array("fy.npy", y + 16, 62, 16);
    write_array("fz.npy", y, 62, 16);
    CHECK(run_cli("stats tensor-mean --fx fx.npy --fy fy.npy --fz fz.npy", text, sizeof text) == 1);
    CHECK(strstr(text, "fx.npy is (64, 16) but fy.npy is (62, 16)") != NULL);
    write_array("fx.npy", y + 32, 62, 16); /* rows 2..63 of y */
    CHECK(run_cli("stats tensor-mean --fx fx.npy --fy fy.npy --fz fz.npy --out t.npy --json", text,
                  sizeof text) == 0);
    float *expected = malloc(16 * 16 * 16 * sizeof *expected);
    CHECK_OK(ax_stats_tensor_mean(y + 32, y + 16, y, 62, 16, expected));
    float *saved = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/t.npy", work_dir);
    int64_t trows = 0, tcols = 0;
    CHECK_FAILS(ax_npy_read_f32(path, &saved, &trows, &tcols), AX_STATUS_BAD_DATA,
                "3 dimensions"); /* (16, 16, 16) */
    CHECK(json_field(text, "n") == 62);
    const char *values = strstr(text, "\"values\":[");
    CHECK(values != NULL);
    if (values)
        CHECK_NEAR(strtod(values + 10, NULL), expected[0], 1e-8); /* JSON has 10 digits */
    free(expected);

    /* A model's layers: widths must match, layers must exist. */
    const char *data = "--data features.npy --labels labels.npy";
    snprintf(args, sizeof args, "stats entropy-mi --model net.safetensors %s --layer 1 --json",
             data);
    CHECK(run_cli(args, text, sizeof text) == 0);
    float *act1 = NULL;
    snprintf(path, sizeof path, "%s/act1.npy", work_dir);
    CHECK_OK(ax_npy_read_f32(path, &act1, &rows, &cols));
    if (act1) {
        CHECK_OK(ax_stats_entropy_mi(act1, act1, rows, cols, &h, &mi));
        CHECK_NEAR(json_field(text, "entropy"), h, CLI_TOLERANCE);
        CHECK_NEAR(json_field(text, "mutual_information"), mi, CLI_TOLERANCE);
    }
    free(act1);
    snprintf(args, sizeof args, "stats entropy-mi --model net.safetensors %s --layer 0 --layer-y 1",
             data);
    CHECK(run_cli(args, text, sizeof text) == 2);
    CHECK(strstr(text, "layers 0 and 1 of net.safetensors have different widths (7 and 6)") !=
          NULL);
    snprintf(args, sizeof args, "stats entropy-mi --model net.safetensors %s --layer 3", data);
    CHECK(run_cli(args, text, sizeof text) == 2);
    CHECK(strstr(text, "layer 3 does not exist in net.safetensors: it has 3 layers, numbered 0 "
                       "to 2") != NULL);
    free(x);
    free(y);
}

/* `axon bench entropy-mi|tensor-mean`: one CSV row per sample in the
 * columns of bench/peers (compare_stats.sh relies on them), and usage
 * errors for bad sizes. */
static void test_bench_cli(void)
{
    char text[65536];
    CHECK(run_cli("bench entropy-mi --sizes 64,300 --d 20 --repeat 2 --min-time 0 --threads 1 "
                  "--csv b.csv",
                  text, sizeof text) == 0);
    CHECK(strstr(text, "axon bench entropy-mi: D = 20, 1 thread(s), 2 sample(s)") != NULL);
    CHECK(run_cli("bench tensor-mean --sizes 50 --d 5 --repeat 3 --min-time 0 --csv b.csv", text,
                  sizeof text) == 0);
    char path[128];
    snprintf(path, sizeof path, "%s/b.csv", work_dir);
    FILE *file = fopen(path, "r");
    CHECK(file != NULL);
    char line[512];
    int rows = 0;
    /* A new file starts with the columns' names (bench/report.py reads them). */
    CHECK(file && fgets(line, sizeof line, file) &&
          strncmp(line, "system,workload,variant,precision,threads,batch,", 48) == 0);
    while (file && fgets(line, sizeof line, file)) {
        /* system,workload,variant,precision,threads,batch,width,repeat,epoch,
         * seconds,loss,test_accuracy,gflops,samples_per_second */
        char *field[14] = {0};
        int count = 0;
        for (char *p = line; count < 14; p++) {
            field[count++] = p;
            p = strchr(p, ',');
            if (!p)
                break;
            *p = '\0';
        }
        CHECK(count == 14);
        if (count != 14)
            break;
        bool entropy = rows < 4;
        long long batch = atoll(field[5]);
        double seconds = strtod(field[9], NULL), per_second = strtod(field[13], NULL);
        CHECK(strcmp(field[0], "axon") == 0 && strcmp(field[2], "axon") == 0);
        CHECK(strcmp(field[1], entropy ? "entropy-mi" : "tensor-mean") == 0);
        CHECK(batch == (entropy ? (rows < 2 ? 64 : 300) : 50));
        CHECK(atoi(field[6]) == (entropy ? 20 : 5));
        CHECK(atoi(field[7]) == (entropy ? rows % 2 : rows - 4) + 1);
        CHECK(field[8][0] == '\0' && seconds > 0.0);
        CHECK(fabs(per_second * seconds / (double)batch - 1.0) < 1e-3);
        if (!entropy) /* 2 N D^3 flops */
            CHECK(fabs(strtod(field[12], NULL) * 1e9 * seconds / (2.0 * 50 * 125) - 1.0) < 1e-2);
        rows++;
    }
    if (file)
        fclose(file);
    CHECK(rows == 7);

    CHECK(run_cli("bench entropy-mi --sizes 0", text, sizeof text) == 2);
    CHECK(strstr(text, "--sizes: expected sizes from 1") != NULL);
    CHECK(run_cli("bench tensor-mean --sizes 64,x", text, sizeof text) == 2);
    CHECK(strstr(text, "got '64,x'") != NULL);
    CHECK(run_cli("bench tensor-mean --sizes 64, --d 4", text, sizeof text) == 2);
    CHECK(strstr(text, "a size is missing after the last comma") != NULL);
    CHECK(run_cli("bench tensor-mean --d 2000", text, sizeof text) == 2);
    CHECK(run_cli("bench entropy-mi --help", text, sizeof text) == 0);
    CHECK(strstr(text, "--sizes") != NULL);
}

int main(void)
{
    if (!test_work_dir_make("axon-test-stats"))
        return 1;
    /* With the AVX-512 kernels where the CPU has them, then the portable. */
    for (int portable = 0; portable <= 1; portable++) {
        ax_stats_force_portable(portable);
        if (portable)
            CHECK(!ax_stats_use_avx512());
        test_entropy_mi();
        test_entropy_bad_input();
        test_numpy_reference();
        test_tensor_mean();
    }
    ax_stats_force_portable(false);
    test_npy();
    test_activations();
    test_cli();
    test_bench_cli();
    test_work_dir_remove();
    return test_finish("test_stats");
}
