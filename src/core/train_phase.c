/* train_phase.c: the text of one training phase (issue 30; TMVA's training
 * strategy of several phases, each with its own learning rate, momentum,
 * batch size, regularisation and dropout): "lr=0.01,batch=1024,epochs=5"
 * overrides those settings of an ax_train_config. A phase is one ax_train
 * call; the caller carries the optimizer state from one to the next
 * (ax_train_config.optimizer_state), so a checkpoint written in a phase is
 * an ordinary checkpoint of that call and resumes it exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static const char keys_text[] =
    "lr, momentum, nesterov, batch, epochs, dropout, l1, l2, weight_decay, optimizer, "
    "lr_schedule, warmup, patience (early stopping), clip_norm, clip_value";

/* A number in [low, high] (high_open: below high), the whole text. */
static bool read_number(const char *text, double low, double high, bool high_open, double *out)
{
    char *end = NULL;
    const double value = strtod(text, &end);
    if (end == text || *end || !isfinite(value) || value < low || value > high ||
        (high_open && value >= high))
        return false;
    *out = value;
    return true;
}

static bool read_whole(const char *text, double low, double high, int64_t *out)
{
    double value = 0.0;
    if (!read_number(text, low, high, false, &value) || value != floor(value))
        return false;
    *out = (int64_t)value;
    return true;
}

/* Key names compare with '-' as '_' (the CLI's --weight-decay). */
static bool key_is(const char *key, const char *name)
{
    for (; *key && *name; key++, name++)
        if ((*key == '-' ? '_' : *key) != *name)
            return false;
    return *key == '\0' && *name == '\0';
}

/* One key=value into c; NULL, or why the value is refused. */
static const char *apply_setting(const char *key, const char *value, ax_train_config *c)
{
    double number = 0.0;
    int64_t whole = 0;
    if (key_is(key, "lr")) {
        if (!read_number(value, 0.0, INFINITY, false, &number) || number <= 0.0)
            return "a learning rate above 0";
        c->learning_rate = number;
    } else if (key_is(key, "momentum")) {
        if (!read_number(value, 0.0, 1.0, true, &c->momentum))
            return "a number in [0, 1)";
    } else if (key_is(key, "nesterov")) {
        if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0)
            c->nesterov = true;
        else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0)
            c->nesterov = false;
        else
            return "true, false, 1 or 0";
    } else if (key_is(key, "batch")) {
        if (strcmp(value, "full") == 0)
            c->batch_size = 0;
        else if (!read_whole(value, 0.0, 1e9, &c->batch_size))
            return "a whole number of rows (0 or full: the full batch)";
    } else if (key_is(key, "epochs")) {
        if (!read_whole(value, 1.0, 1e6, &whole))
            return "a whole number of epochs >= 1";
        c->epochs = (int)whole;
    } else if (key_is(key, "dropout")) {
        if (!read_number(value, 0.0, 1.0, true, &c->dropout))
            return "a probability in [0, 1)";
    } else if (key_is(key, "l1")) {
        if (!read_number(value, 0.0, INFINITY, false, &c->l1))
            return "a number >= 0";
    } else if (key_is(key, "l2")) {
        if (!read_number(value, 0.0, INFINITY, false, &c->l2))
            return "a number >= 0";
    } else if (key_is(key, "weight_decay")) {
        if (!read_number(value, 0.0, INFINITY, false, &c->weight_decay))
            return "a number >= 0";
    } else if (key_is(key, "clip_norm")) {
        if (!read_number(value, 0.0, INFINITY, false, &c->clip_norm))
            return "a number >= 0";
    } else if (key_is(key, "clip_value")) {
        if (!read_number(value, 0.0, INFINITY, false, &c->clip_value))
            return "a number >= 0";
    } else if (key_is(key, "optimizer")) {
        if (ax_optimizer_parse(value, &c->optimizer) != AX_STATUS_OK)
            return "an optimizer this library has (sgd, adam, adamw, cg, lbfgs)";
    } else if (key_is(key, "lr_schedule")) {
        if (ax_lr_schedule_parse(value, c) != AX_STATUS_OK)
            return ax_error_message();
    } else if (key_is(key, "warmup")) {
        if (!read_whole(value, 0.0, 9e15, &c->warmup_steps))
            return "a whole number of steps >= 0";
    } else if (key_is(key, "patience") || key_is(key, "early_stop")) {
        if (!read_whole(value, 0.0, 1e6, &whole))
            return "a whole number of epochs >= 0 (0: no early stopping)";
        c->early_stop = (int)whole;
    } else {
        return NULL;
    }
    return "";
}

ax_status ax_train_phase_parse(const char *text, ax_train_config *config)
{
    if (!text || !*text)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "an empty phase: give KEY=VALUE,... (the keys: %s)",
                       keys_text);
    ax_train_config c = *config;
    char item[512];
    for (const char *at = text; *at;) {
        const char *comma = strchr(at, ',');
        const size_t length = comma ? (size_t)(comma - at) : strlen(at);
        if (length >= sizeof item)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "phase '%s': a setting of %zu characters",
                           text, length);
        memcpy(item, at, length);
        item[length] = '\0';
        char *equals = strchr(item, '=');
        if (!equals || equals == item || !equals[1])
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "phase '%s': '%s' is not KEY=VALUE (the keys: %s)", text, item, keys_text);
        *equals = '\0';
        const char *value = equals + 1;
        const char *why = apply_setting(item, value, &c);
        if (!why)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "phase '%s': unknown key '%s' (the keys: %s)",
                           text, item, keys_text);
        if (*why) {
            char reason[512]; /* why may be the error message ax_fail is about to replace */
            snprintf(reason, sizeof reason, "%s", why);
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "phase '%s': %s=%s: not %s", text, item, value,
                           reason);
        }
        at = comma ? comma + 1 : at + length;
        if (comma && !*at)
            return ax_fail(AX_STATUS_BAD_ARGUMENT, "phase '%s': a trailing comma", text);
    }
    *config = c;
    return AX_STATUS_OK;
}
