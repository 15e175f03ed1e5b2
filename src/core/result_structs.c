/* result_structs.c: the _init functions of the structs the library writes
 * results into (ax_train_summary, ax_evaluation, ax_prep_summary), for the
 * _empty() functions of axon.h and for bindings. They are functions rather
 * than a zeroed initializer in the header so that C++ programs compile the
 * header without -Wmissing-field-initializers warnings, and so that they
 * match the configs' _init. Built with or without image preparation: a
 * program may make a prep summary before it learns prep is absent. */
#include <string.h>

#include "axon.h"

static void init(void *result, size_t size)
{
    memset(result, 0, size);
    if (size >= sizeof size)
        memcpy(result, &size, sizeof size);
}

void ax_train_summary_init(ax_train_summary *summary, size_t size) { init(summary, size); }
void ax_evaluation_init(ax_evaluation *evaluation, size_t size) { init(evaluation, size); }
void ax_prep_summary_init(ax_prep_summary *summary, size_t size) { init(summary, size); }
