/* test_line_search_convergence.c: CG and L-BFGS stop on their gradient test
 * ("converged: gradient norm below gtol") at the least-squares solution of a
 * linear regression with noise, in float64: the weights and bias equal the
 * normal equations' solution (solved here in float64 by Gaussian elimination
 * with partial pivoting, from the data as stored) to 1e-6, and the final loss
 * the residual mean square there to 1e-9 relative, well before the iteration
 * limit. Also: an L-BFGS memory of 0 or 1001 is refused naming the range, and
 * weights that make the cost NaN at the start stop both with
 * AX_STATUS_DIVERGED, saying so, the weights left as they were.
 * gtol is 1e-8, not smaller: below it the gradient test meets the rounding
 * floor of the BLAS kernels at hand. At 1e-10, CG on OpenBLAS's Prescott or
 * Sandybridge kernels (what a test binary, which does not restart itself
 * with a chosen OPENBLAS_CORETYPE as the CLI does, gets on a CPU OpenBLAS
 * 0.3.21 does not know: a Sapphire Rapids) reached the solution to 12 digits
 * and then stopped on a failed line search before its gradient test fired;
 * at 1e-8 both methods stop on it in 8 iterations on every OpenBLAS kernel
 * set (OPENBLAS_CORETYPE=Prescott ... SkylakeX, Zen) and thread count. */
#include "test_util.h"

enum { ROWS = 60, FEATURES = 3, PARAMS = FEATURES + 1 };

static ax_dataset *data;
static double reference[PARAMS], reference_loss;

static void make_data(void)
{
    CHECK_OK(ax_dataset_create(ROWS, FEATURES, 0, 1, &data));
    float *x = ax_dataset_features_data(data), *y = ax_dataset_targets_data(data);
    const double w[FEATURES] = {1.5, -2.0, 0.25}, bias = 0.75;
    for (int r = 0; r < ROWS; r++) {
        double target = bias + 0.1 * sin(7.0 * r); /* the noise: no exact fit */
        for (int f = 0; f < FEATURES; f++) {
            x[r * FEATURES + f] = (float)cos(1.3 * r + 2.1 * f + 0.2 * r * f);
            target += w[f] * x[r * FEATURES + f];
        }
        y[r] = (float)target;
    }
    /* the normal equations A^T A beta = A^T y, A = [x 1], in float64 */
    double m[PARAMS][PARAMS + 1] = {{0}};
    for (int r = 0; r < ROWS; r++) {
        double a[PARAMS];
        for (int f = 0; f < FEATURES; f++)
            a[f] = x[r * FEATURES + f];
        a[FEATURES] = 1.0;
        for (int i = 0; i < PARAMS; i++) {
            for (int j = 0; j < PARAMS; j++)
                m[i][j] += a[i] * a[j];
            m[i][PARAMS] += a[i] * y[r];
        }
    }
    for (int c = 0; c < PARAMS; c++) {
        int pivot = c;
        for (int i = c + 1; i < PARAMS; i++)
            if (fabs(m[i][c]) > fabs(m[pivot][c]))
                pivot = i;
        for (int j = 0; j <= PARAMS; j++) {
            double t = m[c][j];
            m[c][j] = m[pivot][j];
            m[pivot][j] = t;
        }
        for (int i = 0; i < PARAMS; i++)
            if (i != c) {
                double factor = m[i][c] / m[c][c];
                for (int j = c; j <= PARAMS; j++)
                    m[i][j] -= factor * m[c][j];
            }
    }
    for (int i = 0; i < PARAMS; i++)
        reference[i] = m[i][PARAMS] / m[i][i];
    double sum = 0.0;
    for (int r = 0; r < ROWS; r++) {
        double residual = reference[FEATURES] - y[r];
        for (int f = 0; f < FEATURES; f++)
            residual += reference[f] * x[r * FEATURES + f];
        sum += residual * residual;
    }
    reference_loss = sum / ROWS;
}

static ax_net *make_net(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    config.precision = AX_PRECISION_F64;
    config.loss = AX_LOSS_MSE;
    config.seed = 4;
    ax_net *net = NULL;
    CHECK_OK(ax_layers_parse("1:identity", &config));
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static ax_train_config line_search_config(ax_optimizer_kind kind)
{
    ax_train_config c = ax_train_defaults();
    c.optimizer = kind;
    c.batch_size = 0;
    c.epochs = 500;
    c.gtol = 1e-8;
    c.progress_interval = 1e9;
    return c;
}

static void converges(ax_optimizer_kind kind, const char *name)
{
    ax_net *net = make_net();
    if (!net)
        return;
    ax_train_config c = line_search_config(kind);
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &c, &summary));
    double params[PARAMS];
    ax_net_parameters_get(net, params); /* [W (1, 3), b (1)] */
    printf("%s: %d iterations, %s, loss %.12g (least squares %.12g)\n", name, summary.epochs_run,
           summary.stop_reason ? summary.stop_reason : "(none)", summary.final_train_loss, reference_loss);
    if (!summary.stop_reason || strcmp(summary.stop_reason, "converged: gradient norm below gtol") != 0) {
        fprintf(stderr, "%s: stopped for '%s', not on its gradient test\n", name,
                summary.stop_reason ? summary.stop_reason : "(none)");
        test_failures++;
    }
    CHECK(summary.epochs_run < c.epochs);
    for (int i = 0; i < PARAMS; i++)
        if (!(fabs(params[i] - reference[i]) <= 1e-6)) {
            fprintf(stderr, "%s: parameter %d is %.12g, least squares %.12g\n", name, i, params[i], reference[i]);
            test_failures++;
        }
    CHECK_NEAR(summary.final_train_loss, reference_loss, 1e-9);
    ax_net_free(net);
}

static void diverges_at_start(ax_optimizer_kind kind)
{
    ax_net *net = make_net();
    if (!net)
        return;
    double params[PARAMS] = {NAN, 0.0, 0.0, 0.0}, after[PARAMS];
    ax_net_parameters_set(net, params);
    ax_train_config c = line_search_config(kind);
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, data, NULL, NULL, &c, &summary), AX_STATUS_DIVERGED,
                "at the initial weights is NaN or infinite");
    ax_net_parameters_get(net, after);
    CHECK(isnan(after[0]) && after[1] == 0.0 && after[2] == 0.0 && after[3] == 0.0);
    ax_net_free(net);
}

int main(void)
{
    make_data();
    if (test_failures)
        return test_finish("test_line_search_convergence");
    converges(AX_OPTIMIZER_CG, "cg");
    converges(AX_OPTIMIZER_LBFGS, "lbfgs");

    ax_net *net = make_net();
    for (int memory = 0; net && memory <= 1001; memory += 1001) {
        ax_train_config c = line_search_config(AX_OPTIMIZER_LBFGS);
        c.lbfgs_memory = memory;
        ax_train_summary summary = ax_train_summary_empty();
        CHECK_FAILS(ax_train(net, data, NULL, NULL, &c, &summary), AX_STATUS_BAD_ARGUMENT,
                    "the L-BFGS memory must be from 1 to 1000");
    }
    ax_net_free(net);

    diverges_at_start(AX_OPTIMIZER_CG);
    diverges_at_start(AX_OPTIMIZER_LBFGS);
    ax_dataset_free(data);
    return test_finish("test_line_search_convergence");
}
