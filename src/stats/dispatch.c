/* dispatch.c: see dispatch.h. */
#include "stats/dispatch.h"

static bool force_portable = false;

bool ax_stats_use_avx512(void)
{
#ifdef AX_STATS_AVX512
    if (force_portable)
        return false;
    __builtin_cpu_init(); /* idempotent; needed when called from a constructor */
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

void ax_stats_force_portable(bool portable)
{
    force_portable = portable;
}
