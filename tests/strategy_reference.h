/* strategy_reference.h: tests/data/strategy_reference.txt (written by
 * scripts/make_strategy_reference.py), read by test_strategies and
 * test_lr_schedule: lines NAME COUNT V1 .. VCOUNT. */
#ifndef AXON_TEST_STRATEGY_REFERENCE_H
#define AXON_TEST_STRATEGY_REFERENCE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 4096

typedef struct series {
    char name[64];
    int64_t count;
    double *values;
} series;

static series all[32];
static int series_count;

static bool read_reference(void)
{
    const char *path = AXON_TEST_DATA "/strategy_reference.txt";
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, "%s: cannot open (%s): regenerate it with scripts/make_strategy_reference.py\n",
                path, strerror(errno));
        return false;
    }
    while (series_count < 32) {
        series *s = &all[series_count];
        long long count;
        if (fscanf(file, "%63s %lld", s->name, &count) != 2)
            break;
        if (count < 1 || count > MAX_VALUES) {
            fclose(file);
            return false;
        }
        s->count = count;
        s->values = malloc((size_t)count * sizeof(double));
        for (int64_t i = 0; i < count; i++)
            if (fscanf(file, "%lf", &s->values[i]) != 1) {
                fclose(file);
                return false;
            }
        series_count++;
    }
    fclose(file);
    return true;
}

static const double *reference_find(const char *name, int64_t count)
{
    for (int i = 0; i < series_count; i++)
        if (strcmp(all[i].name, name) == 0) {
            if (all[i].count != count) {
                fprintf(stderr, "%s: %lld values, expected %lld\n", name, (long long)all[i].count,
                        (long long)count);
                return NULL;
            }
            return all[i].values;
        }
    fprintf(stderr, "%s: not in the reference\n", name);
    return NULL;
}

#endif
