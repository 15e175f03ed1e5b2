/* test_perf_reports.c: what the profiler, ax_machine_peak and
 * ax_net_gemm_rate report, checked for structure and sanity, never for
 * speed (docs/testing.md: no verdict depends on how fast the machine is).
 *
 * - The profile of a training run: one entry per operation and layer that
 *   ran, longest total first; the shares add up to 1; mean x calls is the
 *   total; the calls are the run's steps; the GEMMs' FLOP counts are
 *   exactly TMVA's per-operation counts summed over the run's batches
 *   (forward and weight-gradient products of every layer, the input
 *   gradient of every layer but the first, which axon never computes), and
 *   only GEMMs are marked as such.
 *   Reset forgets it all; a network without profiling records nothing.
 * - ax_machine_peak: a vector width of 256 or 512 bits, at least one FMA
 *   pipe, a clock in (0, 10) GHz, at least one core; the theoretical peaks are
 *   lanes x 2 x pipes x clock x cores (float64 half of float32), the FMA
 *   loop's rate and the bf16 peak positive and finite. The width is 512
 *   exactly where the CPU has AVX-512F; the AVX2 loop, measured at 256
 *   bits where the CPU has AVX2 and FMA, keeps the same identities; other
 *   widths are refused (and 512 where the CPU lacks AVX-512F), *out zeroed.
 *   The bf16 peak is f32's times the measured VDPBF16PS ratio where it is
 *   native and measured, twice f32 where native but not measured, f32
 *   where emulated, and this CPU's is the one its bf16 support gives.
 * - ax_net_gemm_rate: positive and finite in float32 and float64; a batch
 *   of 0 refused.
 * - ax_net_conv_rate: positive and finite over all passes and for each
 *   (forward, weight gradient, input gradient of a second convolution),
 *   the overall rate between the slowest and the fastest pass (it is their
 *   FLOP-weighted harmonic mean); a batch of 0 and a network without
 *   convolutions refused; the parameters left as they were.
 * - ax_set_threads: more than 4096 refused, the count kept; the default is
 *   OMP_NUM_THREADS when set, else the CPUs of this process's affinity
 *   mask (sched_getaffinity); ax_others_running is -1 or a count. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CPU_COUNT, setenv */
#endif
#include <math.h>
#include <sched.h>
#include <stdlib.h>

#include "perf/peak.h"
#include "test_util.h"
#include "test_datasets.h"

enum { ROWS = 90, FEATURES = 5, HIDDEN = 12, CLASSES = 3, BATCH = 16, EPOCHS = 3, ENTRIES = 64 };

static ax_net *make_net(ax_precision precision)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = FEATURES;
    config.precision = precision;
    CHECK_OK(ax_layers_parse("12:tanh,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static const ax_profile_entry *entry_named(const ax_profile_entry *entries, int count,
                                           const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    return NULL;
}

static void check_profile(void)
{
    ax_dataset *data = test_uniform_dataset(ROWS, FEATURES, 4, false);
    ax_net *net = make_net(AX_PRECISION_F64);
    if (!data || !net)
        return;
    ax_net_profile_enable(net, true);
    ax_train_config config = ax_train_defaults();
    config.batch_size = BATCH;
    config.epochs = EPOCHS;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    ax_profile_entry entries[ENTRIES];
    const int count = ax_net_profile_get(net, entries, ENTRIES);
    CHECK(count > 0 && count <= ENTRIES);
    double shares = 0.0;
    for (int i = 0; i < count; i++) {
        const ax_profile_entry *e = &entries[i];
        CHECK(e->name[0] != '\0' && e->count > 0);
        CHECK(isfinite(e->total_seconds) && e->total_seconds >= 0.0);
        CHECK(e->stddev_seconds >= 0.0 && isfinite(e->stddev_seconds));
        CHECK(e->share >= 0.0 && e->share <= 1.0);
        /* the running mean times the calls is the total, to rounding */
        CHECK(fabs(e->mean_seconds * (double)e->count - e->total_seconds) <=
              1e-9 * fmax(e->total_seconds, 1e-300));
        if (i > 0)
            CHECK(entries[i - 1].total_seconds >= e->total_seconds);
        CHECK(e->is_gemm == (strstr(e->name, "GEMM") != NULL));
        CHECK(e->gflop >= 0.0 && (e->is_gemm ? e->gflop > 0.0 : true));
        shares += e->share;
    }
    CHECK(fabs(shares - 1.0) <= 1e-12 * count);

    /* The GEMMs, by name, with TMVA's counts (a dot product of length k is
     * 2k - 1 FLOPs): over a batch of b rows a layer (in -> out) costs
     * (2 in - 1) out b forward, (2 b - 1) in out for its weight gradient
     * and (2 out - 1) in b for its input gradient. Summed over the run:
     * b adds up to ROWS per epoch, and there are `steps` batches. */
    const int64_t steps = EPOCHS * ((ROWS + BATCH - 1) / BATCH);
    const double rows = (double)ROWS * EPOCHS;
    const int64_t widths[3] = {FEATURES, HIDDEN, CLASSES};
    for (int layer = 1; layer <= 2; layer++) {
        const double in = (double)widths[layer - 1], out = (double)widths[layer];
        const double flops[3] = {(2.0 * in - 1.0) * out * rows,
                                 (2.0 * rows - (double)steps) * in * out,
                                 (2.0 * out - 1.0) * in * rows};
        const char *kinds[3] = {"forward GEMM", "weight-gradient GEMM", "input-gradient GEMM"};
        for (int k = 0; k < 3; k++) {
            const double flop = flops[k];
            char name[64];
            snprintf(name, sizeof name, "layer %d %s", layer, kinds[k]);
            const ax_profile_entry *e = entry_named(entries, count, name);
            if (layer == 1 && k == 2) {
                CHECK(e == NULL); /* the input's gradient is never needed */
                continue;
            }
            if (!e) {
                fprintf(stderr, "no profile entry \"%s\"\n", name);
                test_failures++;
                continue;
            }
            CHECK(e->is_gemm && e->count == steps);
            CHECK_NEAR(e->gflop, flop * 1e-9, 1e-12);
        }
    }
    printf("profile: %d entries over %lld steps, shares add to 1, GEMM FLOPs as counted\n", count,
           (long long)steps);

    ax_net_profile_reset(net);
    CHECK(ax_net_profile_get(net, entries, ENTRIES) == 0);
    ax_net_profile_enable(net, false);
    CHECK_OK(ax_train(net, data, NULL, NULL, &config, &summary));
    CHECK(ax_net_profile_get(net, entries, ENTRIES) == 0);
    ax_net_free(net);
    ax_dataset_free(data);
}

static void check_peak(void)
{
    ax_peak peak;
    CHECK_OK(ax_machine_peak(&peak));
    CHECK(peak.vector_bits == 256 || peak.vector_bits == 512);
    /* no upper bound: a clock measured while other processes held the core
     * makes the pipes look more numerous */
    CHECK(peak.fma_units >= 1);
    /* measured under load, so a busy machine lowers it: no lower bound */
    CHECK(isfinite(peak.clock_ghz) && peak.clock_ghz > 0.0 && peak.clock_ghz < 10.0);
    CHECK(peak.cores >= 1);
    const double expected_f32 =
        (double)(peak.vector_bits / 32) * 2.0 * peak.fma_units * peak.clock_ghz * peak.cores;
    CHECK_NEAR(peak.f32_gflops, expected_f32, 1e-12);
    CHECK_NEAR(peak.f64_gflops, expected_f32 / 2.0, 1e-12);
    CHECK(isfinite(peak.measured_f32_gflops) && peak.measured_f32_gflops > 0.0);
    /* the pipes read from the threads' rates together as well as the
     * fastest one's: the loop never lies above the theory by half a pipe */
    CHECK(peak.measured_f32_gflops < peak.f32_gflops * (peak.fma_units + 0.5) / peak.fma_units);
    const double bf16 = ax_peak_bf16_gflops(&peak);
    CHECK(isfinite(bf16) && bf16 > 0.0);
    CHECK(peak.method && peak.method[0]);
    printf("peak: %d bits, %d FMA pipes, %.2f GHz, %d cores: %.0f GFLOP/s float32 (theory)\n",
           peak.vector_bits, peak.fma_units, peak.clock_ghz, peak.cores, peak.f32_gflops);
}

/* The identities every measured peak keeps, at its own width. */
static void check_peak_identities(const ax_peak *peak, int vector_bits)
{
    CHECK(peak->vector_bits == vector_bits);
    CHECK(peak->fma_units >= 1 && peak->cores >= 1);
    CHECK(isfinite(peak->clock_ghz) && peak->clock_ghz > 0.0 && peak->clock_ghz < 10.0);
    const double expected_f32 =
        (double)(vector_bits / 32) * 2.0 * peak->fma_units * peak->clock_ghz * peak->cores;
    CHECK_NEAR(peak->f32_gflops, expected_f32, 1e-12);
    CHECK_NEAR(peak->f64_gflops, expected_f32 / 2.0, 1e-12);
    CHECK(isfinite(peak->measured_f32_gflops) && peak->measured_f32_gflops > 0.0);
    CHECK(peak->method && strstr(peak->method, "lanes x 2 x pipes x clock x cores"));
}

static void check_peak_widths(void)
{
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    ax_peak peak;
    if (avx2 || avx512) {
        CHECK_OK(ax_machine_peak(&peak));
        CHECK(peak.vector_bits == (avx512 ? 512 : 256));
    }
    if (avx2) {
        CHECK_OK(ax_machine_peak_at(256, &peak));
        check_peak_identities(&peak, 256);
        printf("peak at 256 bits (the AVX2 loop): %d FMA pipes, %.2f GHz: %.0f GFLOP/s float32\n",
               peak.fma_units, peak.clock_ghz, peak.f32_gflops);
    } else {
        CHECK_FAILS(ax_machine_peak_at(256, &peak), AX_STATUS_UNSUPPORTED, "needs AVX2 and FMA");
    }
    if (!avx512) {
        CHECK_FAILS(ax_machine_peak_at(512, &peak), AX_STATUS_UNSUPPORTED,
                    "peak measurement at 512 bits needs AVX-512F, which this CPU lacks");
        CHECK(peak.vector_bits == 0);
    }
    for (int i = 0; i < 3; i++) {
        const int widths[3] = {128, 0, 1024};
        peak.vector_bits = 7;
        CHECK_FAILS(ax_machine_peak_at(widths[i], &peak), AX_STATUS_BAD_ARGUMENT,
                    "axon measures 256 (AVX2) or 512 (AVX-512)");
        CHECK(peak.vector_bits == 0 && peak.f32_gflops == 0.0);
    }
}

/* A rate seen above the peak raises its pipes to the fewest that could
 * have run it, past a 10 % slack for the clock's measurement. */
static void check_peak_at_least(void)
{
    const ax_peak one_pipe = {.vector_bits = 512, .fma_units = 1, .clock_ghz = 2.5, .cores = 4,
                              .f32_gflops = 320.0, .f64_gflops = 160.0, .measured_f32_gflops = 170.0};
    ax_peak peak = one_pipe;
    /* and rates no CPU runs: more than 64 pipes a core */
    const double within[] = {0.0, 100.0, 320.0, 352.0, NAN, -1.0, INFINITY, 1e300, 64 * 320.0 * 1.2};
    for (size_t i = 0; i < sizeof within / sizeof *within; i++) {
        CHECK(!ax_peak_at_least(&peak, within[i]));
        CHECK(peak.fma_units == 1 && peak.f32_gflops == 320.0 && peak.f64_gflops == 160.0);
    }
    CHECK(ax_peak_at_least(&peak, 353.0));
    CHECK(peak.fma_units == 2);
    CHECK_NEAR(peak.f32_gflops, 640.0, 1e-9);
    CHECK_NEAR(peak.f64_gflops, 320.0, 1e-9);
    CHECK(peak.measured_f32_gflops == 170.0 && peak.clock_ghz == 2.5 && peak.cores == 4);
    CHECK(!ax_peak_at_least(&peak, 700.0)); /* within 10 % of 640 */
    CHECK(ax_peak_at_least(&peak, 2000.0)); /* 2000 / (1.1 x 320) = 5.7 pipes */
    CHECK(peak.fma_units == 6);
    CHECK_NEAR(peak.f32_gflops, 1920.0, 1e-9);
    ax_peak zeroed = {0}; /* a failed measurement's */
    CHECK(!ax_peak_at_least(&zeroed, 100.0) && zeroed.fma_units == 0 && zeroed.f32_gflops == 0.0);
    /* the invariant: the raised peak, with its slack, holds what was seen */
    for (double seen = 400.0; seen < 5000.0; seen *= 1.37) {
        peak = one_pipe;
        CHECK(ax_peak_at_least(&peak, seen));
        CHECK(1.1 * peak.f32_gflops >= seen);
        CHECK(1.1 * (peak.f32_gflops - 320.0) < seen); /* and one pipe fewer would not */
    }
}

static void check_bf16_peak(void)
{
    const ax_peak peak = {.vector_bits = 512, .fma_units = 2, .clock_ghz = 2.5, .cores = 4,
                          .f32_gflops = 640.0, .f64_gflops = 320.0};
    const ax_bf16_support measured = {true, true, 0.45, "native, measured"};
    const ax_bf16_support unmeasured = {true, true, 0.0, "native, not measured"};
    const ax_bf16_support emulated = {true, false, 0.45, "emulated though measured"};
    const ax_bf16_support absent = {false, false, 0.0, "no AVX512_BF16"};
    CHECK_NEAR(ax_peak_bf16_for(&peak, measured), 288.0, 1e-12);
    CHECK_NEAR(ax_peak_bf16_for(&peak, unmeasured), 1280.0, 1e-12);
    CHECK_NEAR(ax_peak_bf16_for(&peak, emulated), 640.0, 1e-12);
    CHECK_NEAR(ax_peak_bf16_for(&peak, absent), 640.0, 1e-12);
    CHECK(ax_peak_bf16_gflops(&peak) == ax_peak_bf16_for(&peak, ax_bf16_support_get()));
}

static void check_gemm_rate(void)
{
    for (int p = 0; p < 2; p++) {
        ax_net *net = make_net(p == 0 ? AX_PRECISION_F32 : AX_PRECISION_F64);
        if (!net)
            continue;
        double rate = -1.0;
        CHECK_OK(ax_net_gemm_rate(net, 64, &rate));
        CHECK(isfinite(rate) && rate > 0.0);
        CHECK_FAILS(ax_net_gemm_rate(net, 0, &rate), AX_STATUS_BAD_ARGUMENT, "must be positive");
        CHECK(rate == 0.0);
        ax_net_free(net);
    }
}

static void check_threads(void)
{
    const int before = ax_threads();
    CHECK_FAILS(ax_set_threads(5000), AX_STATUS_BAD_ARGUMENT,
                "5000 threads is more than this machine can use");
    CHECK(ax_threads() == before);
    const char *saved = getenv("OMP_NUM_THREADS");
    char *kept = saved ? strdup(saved) : NULL;
    CHECK(setenv("OMP_NUM_THREADS", "3", 1) == 0);
    CHECK_OK(ax_set_threads(0));
    CHECK(ax_threads() == 3);
    CHECK(setenv("OMP_NUM_THREADS", "none", 1) == 0); /* not a count: the default */
    CHECK_OK(ax_set_threads(-1));
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    CHECK(ax_threads() == CPU_COUNT(&set));
    if (kept)
        CHECK(setenv("OMP_NUM_THREADS", kept, 1) == 0);
    else
        CHECK(unsetenv("OMP_NUM_THREADS") == 0);
    free(kept);
    const int others = ax_others_running();
    CHECK(others >= -1);
    CHECK_OK(ax_set_threads(before));
    CHECK(ax_threads() == before);
}

static void check_conv_rate(void)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 8 * 8 * 2;
    config.input_shape[0] = 8, config.input_shape[1] = 8, config.input_shape[2] = 2;
    CHECK_OK(ax_layers_parse("conv:4x3x3:relu,maxpool:2,conv:5x2x2:relu,3:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    if (!net)
        return;
    const int64_t parameters = ax_net_parameter_count(net);
    double *before = malloc((size_t)parameters * sizeof *before), *after = malloc((size_t)parameters * sizeof *after);
    if (!before || !after) {
        free(before), free(after), ax_net_free(net);
        CHECK(!"out of memory");
        return;
    }
    ax_net_parameters_get(net, before);
    double rate = -1.0, passes[3] = {-1.0, -1.0, -1.0};
    CHECK_OK(ax_net_conv_rate(net, 32, &rate, passes));
    CHECK(isfinite(rate) && rate > 0.0);
    double slowest = INFINITY, fastest = 0.0;
    for (int p = 0; p < 3; p++) {
        CHECK(isfinite(passes[p]) && passes[p] > 0.0);
        slowest = fmin(slowest, passes[p]);
        fastest = fmax(fastest, passes[p]);
    }
    CHECK(rate >= slowest * (1.0 - 1e-12) && rate <= fastest * (1.0 + 1e-12));
    printf("conv rate: %.1f GFLOP/s (forward %.1f, weight gradient %.1f, input gradient %.1f)\n",
           rate, passes[0], passes[1], passes[2]);
    CHECK_OK(ax_net_conv_rate(net, 7, &rate, NULL));
    CHECK(isfinite(rate) && rate > 0.0);
    ax_net_parameters_get(net, after);
    CHECK(memcmp(before, after, (size_t)parameters * sizeof *before) == 0);
    CHECK_FAILS(ax_net_conv_rate(net, 0, &rate, passes), AX_STATUS_BAD_ARGUMENT, "must be positive");
    CHECK(rate == 0.0 && passes[0] == 0.0);
    free(before);
    free(after);
    ax_net_free(net);
    ax_net *dense = make_net(AX_PRECISION_F32);
    if (dense)
        CHECK_FAILS(ax_net_conv_rate(dense, 16, &rate, NULL), AX_STATUS_BAD_ARGUMENT,
                    "no convolution layer");
    ax_net_free(dense);
}

int main(void)
{
    check_profile();
    check_peak();
    check_peak_widths();
    check_peak_at_least();
    check_bf16_peak();
    check_gemm_rate();
    check_threads();
    check_conv_rate();
    return test_finish("test_perf_reports");
}
