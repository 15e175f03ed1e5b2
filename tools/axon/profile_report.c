/* profile_report.c: the table `axon train --profile` prints (calls, mean,
 * standard deviation and share per operation, as the galaxy classifier's
 * Python profiling reported them; the GEMM share, as TMVA's analysis did)
 * and the same as JSON, with the run's GFLOP/s set against the
 * machine's peak and the GEMM rate at the network's own shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "job.h"
#include "metrics.h"
#include "output_stream.h"

enum { MAX_ENTRIES = 512 };

/* The fastest rate the run or the measurements after it reached, in
 * float32's terms (float64 runs at half float32's peak; bf16's peak has
 * its own ratio and AMX's tiles beyond it, so its rates say nothing of the
 * FMA pipes): a lower bound on the machine's float32 peak. */
static double fastest_seen(const ax_profile_entry *entries, int count, ax_precision precision,
                           double gemm_rate, double conv_rate, const double conv_passes[3])
{
    if (precision == AX_PRECISION_BF16)
        return 0.0;
    /* float32's convolutions may run Winograd's fewer products: their
     * rates say nothing of the peak then */
    const bool winograd = precision == AX_PRECISION_F32 && ax_conv_winograd_enabled();
    double fastest = gemm_rate > conv_rate || winograd ? gemm_rate : conv_rate;
    for (int i = 0; i < 3 && !winograd; i++)
        fastest = conv_passes[i] > fastest ? conv_passes[i] : fastest;
    for (int i = 0; i < count; i++)
        if (entries[i].gflop > 0 && entries[i].total_seconds > 0 &&
            !(winograd && strstr(entries[i].name, " conv "))) {
            const double rate = entries[i].gflop / entries[i].total_seconds;
            fastest = rate > fastest ? rate : fastest;
        }
    return precision == AX_PRECISION_F64 ? 2.0 * fastest : fastest;
}

int profile_report(ax_net *net, const ax_train_summary *summary, int64_t batch, bool print,
                   const char *json_path)
{
    static ax_profile_entry entries[MAX_ENTRIES];
    int count = ax_net_profile_get(net, entries, MAX_ENTRIES);
    if (count > MAX_ENTRIES)
        count = MAX_ENTRIES;
    double total = 0.0, gemm_seconds = 0.0, gemm_gflop = 0.0;
    for (int i = 0; i < count; i++) {
        total += entries[i].total_seconds;
        if (entries[i].is_gemm) {
            gemm_seconds += entries[i].total_seconds;
            gemm_gflop += entries[i].gflop;
        }
    }
    /* Measured after training so that it does not disturb the run. */
    ax_peak peak;
    double gemm_rate = 0.0;
    ax_status status = ax_machine_peak(&peak);
    if (status == AX_STATUS_OK)
        status = ax_net_gemm_rate(net, batch, &gemm_rate);
    if (status != AX_STATUS_OK)
        return report_failure(status, "--profile");
    /* The convolutions: their rate in the run (all passes, im2col and col2im
     * included) and measured alone at the batch. */
    const ax_net_config *config = ax_net_config_get(net);
    bool has_conv = false, has_5x5 = false;
    for (int l = 0; l < config->layer_count; l++) {
        const ax_layer_spec *layer = &config->layers[l];
        has_conv = has_conv || layer->kind == AX_LAYER_CONV;
        has_5x5 = has_5x5 || (layer->kind == AX_LAYER_CONV && layer->conv.kernel_height == 5 &&
                              layer->conv.kernel_width == 5 && layer->conv.stride == 1);
    }
    double conv_seconds = 0.0, conv_gflop = 0.0, conv_rate = 0.0, conv_passes[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < count; i++)
        if (strstr(entries[i].name, " conv ")) {
            conv_seconds += entries[i].total_seconds;
            conv_gflop += entries[i].gflop;
        }
    if (has_conv && (status = ax_net_conv_rate(net, batch, &conv_rate, conv_passes)) != AX_STATUS_OK)
        return report_failure(status, "--profile");
    const double achieved = summary->seconds > 0 ? summary->gflop / summary->seconds : 0.0;
    const ax_precision precision = config->precision;
    const double measured_loop = peak.measured_f32_gflops, seen = fastest_seen(
        entries, count, precision, gemm_rate, conv_rate, conv_passes);
    const bool raised = ax_peak_at_least(&peak, seen);
    double peak_gflops = precision == AX_PRECISION_F64    ? peak.f64_gflops
                         : precision == AX_PRECISION_BF16 ? ax_peak_bf16_gflops(&peak)
                                                          : peak.f32_gflops;
    /* The run's GFLOP count is all ranks' work (MPI processes or --replicas
     * threads), the peak and the GEMM rate one rank's, with its threads:
     * set the work against all ranks together. */
    const int ranks = cli_job_size();
    char whose[48] = "the machine's peak";
    if (ranks > 1) {
        peak_gflops *= ranks;
        gemm_rate *= ranks;
        snprintf(whose, sizeof whose, "the peak of %d ranks' threads", ranks);
    }
    if (print) {
        printf("\nprofile (%.3f s timed; GFLOP by TMVA's per-operation FLOP counts; %s)\n", total,
               ax_net_data_placement(net));
        printf("  %-44s %9s %10s %11s %11s %7s %9s %7s\n", "operation", "calls", "total s", "mean ms",
               "sd ms", "share", "GFLOP/s", "of peak");
        for (int i = 0; i < count; i++) {
            const ax_profile_entry *e = &entries[i];
            char rate[16] = "", of_peak[16] = "";
            if (e->gflop > 0 && e->total_seconds > 0) {
                snprintf(rate, sizeof rate, "%.1f", e->gflop / e->total_seconds);
                /* one rank's operation against one rank's peak */
                snprintf(of_peak, sizeof of_peak, "%.1f%%",
                         100.0 * e->gflop / e->total_seconds / (peak_gflops / ranks));
            }
            printf("  %-44s %9lld %10.4f %11.4f %11.4f %6.1f%% %9s %7s\n", e->name, (long long)e->count,
                   e->total_seconds, 1e3 * e->mean_seconds, 1e3 * e->stddev_seconds, 100.0 * e->share,
                   rate, of_peak);
        }
        printf("  GEMMs: %.1f%% of the time, %.1f GFLOP/s while in them\n",
               total > 0 ? 100.0 * gemm_seconds / total : 0.0,
               gemm_seconds > 0 ? gemm_gflop / gemm_seconds : 0.0);
        printf("  run: %.1f GFLOP/s = %.1f%% of %s (%.0f) and %.1f%% of the GEMM rate\n"
               "       at this network's shapes with batch %lld (%.1f GFLOP/s)\n",
               achieved, 100.0 * achieved / peak_gflops, whose, peak_gflops,
               gemm_rate > 0 ? 100.0 * achieved / gemm_rate : 0.0, (long long)batch, gemm_rate);
        if (raised)
            printf("  peak: the FMA loop reached %.0f GFLOP/s float32 after the run, but an operation\n"
                   "       ran at %.0f (in float32's terms): %d FMA pipes a core, not fewer; the loop\n"
                   "       ran in a slow moment (a virtual machine's cores drift between two rates)\n",
                   measured_loop, seen, peak.fma_units);
        if (has_conv) {
            const double one_peak = peak_gflops / ranks, in_run = conv_seconds > 0 ? conv_gflop / conv_seconds : 0.0;
            printf("  convolutions: %.1f%% of the time, %.1f GFLOP/s while in them (%.1f%% of the peak);\n"
                   "       measured alone at batch %lld: %.1f GFLOP/s (%.1f%%): forward %.1f (%.1f%%),\n"
                   "       weight gradient %.1f (%.1f%%), input gradient %.1f (%.1f%%)\n",
                   total > 0 ? 100.0 * conv_seconds / total : 0.0, in_run, 100.0 * in_run / one_peak,
                   (long long)batch, conv_rate, 100.0 * conv_rate / one_peak, conv_passes[0],
                   100.0 * conv_passes[0] / one_peak, conv_passes[1], 100.0 * conv_passes[1] / one_peak,
                   conv_passes[2], 100.0 * conv_passes[2] / one_peak);
            if (has_5x5 && precision == AX_PRECISION_F32 && ax_conv_winograd_enabled() &&
                (config->device.backend[0] == '\0' || strcmp(config->device.backend, "cpu") == 0))
                printf("       (5x5 convolutions of stride 1 may run Winograd's F(4x4, 5x5) and F(5x5, 4x4)\n"
                       "       in all three passes: their rates count a direct convolution's FLOPs,\n"
                       "       3-6x the products made; AXON_CONV_WINOGRAD=off runs the direct kernels)\n");
        }
    }
    if (!json_path)
        return CLI_EXIT_OK;
    output_stream output; /* as every output: a link's target, a device in place */
    if (output_stream_open(&output, "--profile-json", json_path) != CLI_EXIT_OK)
        return CLI_EXIT_RUNTIME;
    FILE *file = output.stream;
    fprintf(file, "{\"timed_seconds\":%.6f,\"achieved_gflops\":%.3f,\"peak_gflops\":%.3f,"
                  "\"gemm_rate_gflops\":%.3f,\"batch\":%lld,\"gemm_share\":%.6f,",
            total, achieved, peak_gflops, gemm_rate, (long long)batch,
            total > 0 ? gemm_seconds / total : 0.0);
    if (has_conv)
        fprintf(file, "\"conv_share\":%.6f,\"conv_rate_gflops\":%.3f,\"conv_forward_gflops\":%.3f,"
                      "\"conv_weight_gradient_gflops\":%.3f,\"conv_input_gradient_gflops\":%.3f,",
                total > 0 ? conv_seconds / total : 0.0, conv_rate, conv_passes[0], conv_passes[1],
                conv_passes[2]);
    fprintf(file, "\"operations\":[");
    for (int i = 0; i < count; i++) {
        const ax_profile_entry *e = &entries[i];
        fprintf(file, "%s{\"name\":", i ? "," : "");
        json_write_string(file, e->name);
        fprintf(file, ",\"calls\":%lld,\"total_seconds\":%.6f,\"mean_seconds\":%.9f,"
                      "\"stddev_seconds\":%.9f,\"share\":%.6f,\"gflop\":%.6f,\"gemm\":%s}",
                (long long)e->count, e->total_seconds, e->mean_seconds, e->stddev_seconds, e->share,
                e->gflop, e->is_gemm ? "true" : "false");
    }
    fprintf(file, "]}\n");
    return output_stream_close(&output, true);
}
