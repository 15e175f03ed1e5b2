/* random.h: the one seeded generator behind every random choice in axon
 * (initial weights, shuffling, splits, synthetic data), xoshiro256** seeded
 * through splitmix64, plus a counter-based hash for dropout masks so that a
 * mask depends only on (key, index) and not on how threads divide the work. */
#ifndef AX_BASE_RANDOM_H
#define AX_BASE_RANDOM_H

#include <stdint.h>

typedef struct ax_rng {
    uint64_t state[4];
} ax_rng;

void ax_rng_seed(ax_rng *rng, uint64_t seed);
uint64_t ax_rng_next(ax_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double ax_rng_uniform(ax_rng *rng);
/* Standard normal (Box-Muller, both values used in turn is not kept: one
 * call, one fresh pair, so a stream is easy to reproduce elsewhere). */
double ax_rng_normal(ax_rng *rng);
/* Uniform integer in [0, bound), without modulo bias. */
uint64_t ax_rng_below(ax_rng *rng, uint64_t bound);
/* order = a uniformly random permutation of 0 .. count-1 (Fisher-Yates). */
void ax_rng_permutation(ax_rng *rng, int64_t *order, int64_t count);

/* The CUDA backend's dropout kernel calls ax_hash64 on the device, so that
 * its masks are the CPU's bit for bit: nvcc sees it as a host and device
 * function, C compilers as a plain inline one. */
#if defined(__CUDACC__)
#define AX_HOST_DEVICE __host__ __device__
#else
#define AX_HOST_DEVICE
#endif

/* splitmix64's finaliser: a bijective mix of 64 bits. */
static inline AX_HOST_DEVICE uint64_t ax_hash64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
