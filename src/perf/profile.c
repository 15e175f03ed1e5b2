/* profile.c: see profile.h. */
#include "perf/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ax_profile_record(ax_profile *profile, ax_profile_kind kind, int layer, double start,
                       double flops)
{
    ax_profile_record_seconds(profile, kind, layer, ax_seconds_now() - start, flops);
}

void ax_profile_record_seconds(ax_profile *profile, ax_profile_kind kind, int layer,
                               double seconds, double flops)
{
    ax_profile_slot *slot = &profile->slots[kind][layer < 0 ? AX_MAX_LAYERS : layer];
    slot->count++;
    double delta = seconds - slot->mean;
    slot->mean += delta / (double)slot->count;
    slot->m2 += delta * (seconds - slot->mean);
    slot->total += seconds;
    slot->flops += flops;
}

void ax_profile_clear(ax_profile *profile) { memset(profile, 0, sizeof *profile); }

static const char *const kind_names[AX_PROFILE_KIND_COUNT] = {
    "forward GEMM",         "bias + activation", "dropout",        "loss + output gradient",
    "weight-gradient GEMM", "input-gradient GEMM", "derivative + bias gradient", "bias gradient",
    "L2 term",              "optimizer update",  "batch copy",     "shuffle",
    "evaluation",
    "conv forward", "conv weight gradient", "conv input gradient",
    "pooling forward", "pooling backward",
};

static int by_total_descending(const void *a, const void *b)
{
    double x = ((const ax_profile_entry *)a)->total_seconds;
    double y = ((const ax_profile_entry *)b)->total_seconds;
    return (x < y) - (x > y);
}

int ax_profile_entries(const ax_profile *profile, ax_profile_entry *entries, int capacity)
{
    ax_profile_entry all[AX_PROFILE_KIND_COUNT * (AX_MAX_LAYERS + 1)];
    int count = 0;
    double grand_total = 0.0;
    for (int kind = 0; kind < AX_PROFILE_KIND_COUNT; kind++)
        for (int layer = 0; layer <= AX_MAX_LAYERS; layer++) {
            const ax_profile_slot *slot = &profile->slots[kind][layer];
            if (slot->count == 0)
                continue;
            ax_profile_entry *entry = &all[count++];
            memset(entry, 0, sizeof *entry);
            if (layer == AX_MAX_LAYERS)
                snprintf(entry->name, sizeof entry->name, "%s", kind_names[kind]);
            else
                snprintf(entry->name, sizeof entry->name, "layer %d %s", layer + 1, kind_names[kind]);
            entry->count = slot->count;
            entry->total_seconds = slot->total;
            entry->mean_seconds = slot->mean;
            entry->stddev_seconds = slot->count > 1 ? sqrt(slot->m2 / (double)(slot->count - 1)) : 0.0;
            entry->gflop = slot->flops * 1e-9;
            entry->is_gemm = kind == AX_PROFILE_FORWARD_GEMM || kind == AX_PROFILE_WEIGHT_GRADIENT_GEMM ||
                             kind == AX_PROFILE_INPUT_GRADIENT_GEMM || kind == AX_PROFILE_CONV_FORWARD ||
                             kind == AX_PROFILE_CONV_WEIGHT_GRADIENT ||
                             kind == AX_PROFILE_CONV_INPUT_GRADIENT;
            grand_total += slot->total;
        }
    for (int i = 0; i < count; i++)
        all[i].share = grand_total > 0 ? all[i].total_seconds / grand_total : 0.0;
    qsort(all, (size_t)count, sizeof all[0], by_total_descending);
    for (int i = 0; i < count && i < capacity; i++)
        entries[i] = all[i];
    return count;
}
