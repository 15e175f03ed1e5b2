/* random.c: xoshiro256** (Blackman and Vigna, 2018) seeded with splitmix64. */
#include "base/random.h"

#include <math.h>

static inline uint64_t rotate_left(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ax_rng_seed(ax_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        rng->state[i] = ax_hash64(x);
        x += 0x9e3779b97f4a7c15ULL;
    }
}

uint64_t ax_rng_next(ax_rng *rng)
{
    uint64_t *s = rng->state;
    const uint64_t result = rotate_left(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotate_left(s[3], 45);
    return result;
}

double ax_rng_uniform(ax_rng *rng) { return (double)(ax_rng_next(rng) >> 11) * 0x1.0p-53; }

double ax_rng_normal(ax_rng *rng)
{
    double u1 = 1.0 - ax_rng_uniform(rng); /* (0, 1]: log is finite */
    double u2 = ax_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t ax_rng_below(ax_rng *rng, uint64_t bound)
{
    /* Lemire's multiply-and-reject. */
    unsigned __int128 product = (unsigned __int128)ax_rng_next(rng) * bound;
    uint64_t low = (uint64_t)product;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            product = (unsigned __int128)ax_rng_next(rng) * bound;
            low = (uint64_t)product;
        }
    }
    return (uint64_t)(product >> 64);
}

void ax_rng_permutation(ax_rng *rng, int64_t *order, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        order[i] = i;
    for (int64_t i = count - 1; i > 0; i--) {
        int64_t j = (int64_t)ax_rng_below(rng, (uint64_t)i + 1);
        int64_t swap = order[i];
        order[i] = order[j];
        order[j] = swap;
    }
}
