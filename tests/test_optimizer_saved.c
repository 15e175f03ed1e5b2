/* test_optimizer_saved.c: the checks a checkpoint's CG or L-BFGS state
 * passes before a run resumes from it (optim/optimizer_saved.c and the
 * kinds' check_saved). A state built as each kind saves it is accepted (so
 * the refusals below are not of everything); then each edit a damaged or
 * mismatched file could carry is refused with AX_STATUS_BAD_FILE and a
 * message naming the kind and the field (and the index of a bad value):
 * "started" absent or neither 0 nor 1, an unstarted state holding more, a
 * name of another kind, an array absent or of the wrong length, a scalar
 * absent or infinite, NaN inside an array, L-BFGS's "pairs" beyond the
 * memory or fractional, "gamma" not positive, "rho" not positive at an
 * index. SGD keeps nothing: any name is refused. Building a state refuses a
 * ninth array or scalar, an empty or too long name and a negative length. */
#include <math.h>

#include "optim/optimizer.h"
#include "test_util.h"

enum { COUNT = 5, MEMORY = 3, PAIRS = 2 };

/* An array of `length` values i + 1 (finite, positive) under name. */
static void add_filled(ax_optimizer_saved *saved, const char *name, int64_t length)
{
    double *values = ax_optimizer_saved_add_array(saved, name, length);
    CHECK(values != NULL);
    for (int64_t i = 0; values && i < length; i++)
        values[i] = (double)i + 1.0;
}

/* L-BFGS's state after some steps: PAIRS pairs of COUNT parameters. */
static void lbfgs_state(ax_optimizer_saved *saved, double pairs)
{
    *saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "f", 0.5));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "f_previous", 0.75));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "pairs", pairs));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "gamma", 0.25));
    add_filled(saved, "g", COUNT);
    add_filled(saved, "s", PAIRS * COUNT);
    add_filled(saved, "y", PAIRS * COUNT);
    add_filled(saved, "rho", PAIRS);
}

static void cg_state(ax_optimizer_saved *saved)
{
    *saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "f", 0.5));
    CHECK_OK(ax_optimizer_saved_add_scalar(saved, "f_previous", 0.75));
    add_filled(saved, "g", COUNT);
    add_filled(saved, "d", COUNT);
}

static ax_train_config config_of(ax_optimizer_kind kind)
{
    ax_train_config config = ax_train_defaults();
    config.optimizer = kind;
    config.lbfgs_memory = MEMORY;
    return config;
}

/* The state is refused for kind with a message holding text; frees it. */
#define CHECK_REFUSED(kind, saved, text)                                                       \
    do {                                                                                       \
        ax_train_config config_ = config_of(kind);                                             \
        CHECK_FAILS(ax_optimizer_saved_check(&config_, COUNT, (saved)), AX_STATUS_BAD_FILE, \
                    (text));                                                                   \
        ax_optimizer_saved_free(saved);                                                        \
    } while (0)

/* A scalar or array of saved, found by name, to edit in place. */
static double *scalar_of(ax_optimizer_saved *saved, const char *name)
{
    for (int i = 0; i < saved->scalar_count; i++)
        if (strcmp(saved->scalars[i].name, name) == 0)
            return &saved->scalars[i].value;
    CHECK(!"scalar present");
    static double absent; /* written to, then ignored: the check has failed */
    return &absent;
}

static double *array_of(ax_optimizer_saved *saved, const char *name)
{
    return (double *)ax_optimizer_saved_array(saved, name, NULL);
}

static void test_lbfgs(void)
{
    const ax_train_config config = config_of(AX_OPTIMIZER_LBFGS);
    ax_optimizer_saved saved;
    lbfgs_state(&saved, PAIRS);
    CHECK_OK(ax_optimizer_saved_check(&config, COUNT, &saved));
    ax_optimizer_saved_free(&saved);
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "started", 0.0));
    CHECK_OK(ax_optimizer_saved_check(&config, COUNT, &saved)); /* not started: nothing else */
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "optimizer state scalar \"f\" is not part of lbfgs's state (written by another "
                  "optimizer?)");
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state lacks the scalar \"started\"");

    lbfgs_state(&saved, PAIRS);
    *scalar_of(&saved, "started") = 0.5;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state scalar \"started\" is 0.5, not 0 or 1");
    lbfgs_state(&saved, MEMORY + 1);
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state scalar \"pairs\" is 4; it must be a whole number from 0 "
                  "to the memory size 3");
    lbfgs_state(&saved, 1.5);
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved, "scalar \"pairs\" is 1.5; it must be a whole number");
    lbfgs_state(&saved, NAN);
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved, "scalar \"pairs\" is nan");
    lbfgs_state(&saved, 1); /* arrays of 2 pairs where 1 is declared */
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state \"s\" has 10 values; this state needs 5");
    lbfgs_state(&saved, PAIRS);
    *scalar_of(&saved, "f") = INFINITY;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state scalar \"f\" is inf, not a finite number");
    lbfgs_state(&saved, PAIRS);
    array_of(&saved, "y")[7] = NAN;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state \"y\" holds a NaN or infinite value at index 7");
    lbfgs_state(&saved, PAIRS);
    array_of(&saved, "g")[0] = -INFINITY;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved, "\"g\" holds a NaN or infinite value at index 0");
    lbfgs_state(&saved, PAIRS);
    *scalar_of(&saved, "gamma") = 0.0;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state scalar \"gamma\" is 0; with pairs held it must be "
                  "positive");
    lbfgs_state(&saved, PAIRS);
    array_of(&saved, "rho")[1] = -2.0;
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "lbfgs's optimizer state \"rho\" is -2 at index 1; it must be positive");
    lbfgs_state(&saved, PAIRS);
    add_filled(&saved, "d", COUNT); /* CG's direction */
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved,
                  "optimizer state \"d\" is not part of lbfgs's state");

    /* pairs 0: only g, no s, y or rho. */
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f_previous", 0.75));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "gamma", 0.0)); /* unused without pairs */
    add_filled(&saved, "g", COUNT);
    CHECK_REFUSED(AX_OPTIMIZER_LBFGS, &saved, "lbfgs's optimizer state lacks the scalar \"pairs\"");
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f_previous", 0.75));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "gamma", 0.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "pairs", 0.0));
    add_filled(&saved, "g", COUNT);
    CHECK_OK(ax_optimizer_saved_check(&config, COUNT, &saved));
    ax_optimizer_saved_free(&saved);
}

static void test_cg(void)
{
    const ax_train_config config = config_of(AX_OPTIMIZER_CG);
    ax_optimizer_saved saved;
    cg_state(&saved);
    CHECK_OK(ax_optimizer_saved_check(&config, COUNT, &saved));
    CHECK_FAILS(ax_optimizer_saved_check(&config, COUNT + 1, &saved), AX_STATUS_BAD_FILE,
                "cg's optimizer state \"g\" has 5 values; this state needs 6");
    ax_optimizer_saved_free(&saved);
    cg_state(&saved);
    *scalar_of(&saved, "started") = 2.0;
    CHECK_REFUSED(AX_OPTIMIZER_CG, &saved, "cg's optimizer state scalar \"started\" is 2, not 0 or 1");
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f_previous", 0.75));
    add_filled(&saved, "g", COUNT);
    CHECK_REFUSED(AX_OPTIMIZER_CG, &saved, "cg's optimizer state lacks the array \"d\"");
    saved = (ax_optimizer_saved){0};
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "started", 1.0));
    CHECK_OK(ax_optimizer_saved_add_scalar(&saved, "f", 0.5));
    add_filled(&saved, "g", COUNT);
    add_filled(&saved, "d", COUNT);
    CHECK_REFUSED(AX_OPTIMIZER_CG, &saved, "cg's optimizer state lacks the scalar \"f_previous\"");
    lbfgs_state(&saved, PAIRS); /* another kind's checkpoint */
    CHECK_REFUSED(AX_OPTIMIZER_CG, &saved, "is not part of cg's state (written by another optimizer?)");
}

static void test_sgd_keeps_nothing(void)
{
    const ax_train_config config = config_of(AX_OPTIMIZER_SGD);
    ax_optimizer_saved saved = {0};
    CHECK_OK(ax_optimizer_saved_check(&config, COUNT, &saved));
    cg_state(&saved);
    CHECK_REFUSED(AX_OPTIMIZER_SGD, &saved, "is not part of sgd's state");
}

static void test_building(void)
{
    ax_optimizer_saved saved = {0};
    char name[8];
    for (int i = 0; i < AX_OPTIMIZER_SAVED_MAX; i++) {
        snprintf(name, sizeof name, "a%d", i);
        add_filled(&saved, name, 1);
        CHECK_OK(ax_optimizer_saved_add_scalar(&saved, name, (double)i));
    }
    CHECK(ax_optimizer_saved_add_array(&saved, "a8", 1) == NULL);
    CHECK(strstr(ax_error_message(), "optimizer state array \"a8\": more than 8 arrays"));
    CHECK_FAILS(ax_optimizer_saved_add_scalar(&saved, "a8", 1.0), AX_STATUS_BAD_FILE,
                "optimizer state scalar \"a8\": more than 8 scalars");
    CHECK(saved.array_count == AX_OPTIMIZER_SAVED_MAX && saved.scalar_count == AX_OPTIMIZER_SAVED_MAX);
    double value = 0.0;
    int64_t length = 0;
    CHECK(ax_optimizer_saved_scalar(&saved, "a7", &value) && value == 7.0);
    CHECK(ax_optimizer_saved_array(&saved, "a7", &length) && length == 1);
    CHECK(ax_optimizer_saved_array(&saved, "a9", &length) == NULL);
    CHECK(!ax_optimizer_saved_scalar(&saved, "a9", &value));
    ax_optimizer_saved_free(&saved);
    CHECK(saved.array_count == 0 && saved.scalar_count == 0);
    ax_optimizer_saved_free(NULL);

    char long_name[AX_OPTIMIZER_SAVED_NAME + 1];
    memset(long_name, 'x', AX_OPTIMIZER_SAVED_NAME);
    long_name[AX_OPTIMIZER_SAVED_NAME] = '\0';
    CHECK(ax_optimizer_saved_add_array(&saved, long_name, 1) == NULL);
    CHECK(ax_optimizer_saved_add_array(&saved, "", 1) == NULL);
    CHECK(ax_optimizer_saved_add_array(&saved, NULL, 1) == NULL);
    CHECK(strstr(ax_error_message(), "optimizer state array \"\": more than 8 arrays, or a bad name"));
    CHECK(ax_optimizer_saved_add_array(&saved, "g", -1) == NULL);
    CHECK(strstr(ax_error_message(), "\"g\": more than 8 arrays, or a bad name or length"));
    CHECK_FAILS(ax_optimizer_saved_add_scalar(&saved, long_name, 1.0), AX_STATUS_BAD_FILE,
                "or a bad name");
    CHECK_FAILS(ax_optimizer_saved_add_scalar(&saved, NULL, 1.0), AX_STATUS_BAD_FILE,
                "optimizer state scalar \"\": more than 8 scalars, or a bad name");
    long_name[AX_OPTIMIZER_SAVED_NAME - 1] = '\0'; /* 31 characters and the NUL fit */
    CHECK(ax_optimizer_saved_add_array(&saved, long_name, 0) != NULL);
    CHECK(ax_optimizer_saved_array(&saved, long_name, &length) && length == 0);
    CHECK(saved.array_count == 1 && saved.scalar_count == 0);
    ax_optimizer_saved_free(&saved);
}

int main(void)
{
    test_lbfgs();
    test_cg();
    test_sgd_keeps_nothing();
    test_building();
    return test_finish("test_optimizer_saved");
}
