/* lr_schedule.c: learning-rate schedules (issue 30): their names and the
 * --lr-schedule text, and the rate of each epoch as PyTorch's schedulers
 * (torch 1.13, torch/optim/lr_scheduler.py) and scikit-learn's SGD
 * (sklearn/neural_network/_stochastic_optimizers.py) compute it. Torch's
 * schedulers are followed in their recursive forms (get_lr: each epoch's
 * rate from the last one), so the rates carry the same rounding as theirs;
 * the state that recursion needs (the rate, and ReduceLROnPlateau's best
 * and bad-epoch count) is the trainer's, recorded by checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/lr_schedule.h"

static const char *const schedule_names[] = {"constant", "step",       "exp",     "cosine",
                                             "plateau",  "invscaling", "adaptive"};
enum { SCHEDULE_COUNT = (int)(sizeof schedule_names / sizeof *schedule_names) };

const char *ax_lr_schedule_name(ax_lr_schedule schedule)
{
    return (int)schedule >= 0 && (int)schedule < SCHEDULE_COUNT ? schedule_names[schedule]
                                                                : "unknown";
}

bool ax_lr_schedule_from_name(const char *name, ax_lr_schedule *out)
{
    for (int i = 0; i < SCHEDULE_COUNT; i++)
        if (strcmp(name, schedule_names[i]) == 0) {
            *out = (ax_lr_schedule)i;
            return true;
        }
    return false;
}

/* The numbers after NAME: in "NAME:A:B", at most `most`, at least `least`. */
static int read_numbers(const char *text, double *values, int least, int most)
{
    int count = 0;
    while (*text == ':') {
        if (count == most)
            return -1;
        char *end = NULL;
        values[count] = strtod(text + 1, &end);
        if (end == text + 1 || !isfinite(values[count]))
            return -1;
        count++;
        text = end;
    }
    return *text == '\0' && count >= least ? count : -1;
}

static bool is_whole(double value, double low) { return value >= low && value <= 1e8 && value == floor(value); }

ax_status ax_lr_schedule_parse(const char *text, ax_train_config *config)
{
    static const char usage[] =
        "constant, step:EVERY:GAMMA, exp:GAMMA, cosine[:MIN], plateau:PATIENCE:FACTOR, "
        "invscaling[:POWER] or adaptive[:PATIENCE[:TOL]]";
    if (!text)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "no learning-rate schedule given: %s", usage);
    int kind = -1;
    size_t length = 0;
    for (int i = 0; i < SCHEDULE_COUNT; i++) {
        const size_t n = strlen(schedule_names[i]);
        if (strncmp(text, schedule_names[i], n) == 0 && (text[n] == ':' || text[n] == '\0')) {
            kind = i;
            length = n;
        }
    }
    if (kind < 0)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "learning-rate schedule '%s': not one of %s", text,
                       usage);
    double v[2] = {0.0, 0.0};
    static const int least[] = {0, 2, 1, 0, 2, 0, 0}, most[] = {0, 2, 1, 1, 2, 1, 2};
    const int count = read_numbers(text + length, v, least[kind], most[kind]);
    const char *why = NULL;
    if (count < 0)
        why = "wrong count of numbers after the name";
    ax_train_config c = *config;
    c.lr_schedule = (ax_lr_schedule)kind;
    switch (c.lr_schedule) {
    case AX_LR_SCHEDULE_CONSTANT:
        break;
    case AX_LR_SCHEDULE_STEP:
        c.lr_step_every = (int)v[0];
        c.lr_gamma = v[1];
        if (!why && !is_whole(v[0], 1))
            why = "EVERY must be a whole number of epochs >= 1";
        break;
    case AX_LR_SCHEDULE_EXP:
        c.lr_gamma = v[0];
        break;
    case AX_LR_SCHEDULE_COSINE:
        c.lr_min = count > 0 ? v[0] : 0.0;
        break;
    case AX_LR_SCHEDULE_PLATEAU:
        c.lr_patience = (int)v[0];
        c.lr_gamma = v[1];
        if (!why && !is_whole(v[0], 0))
            why = "PATIENCE must be a whole number of epochs >= 0";
        break;
    case AX_LR_SCHEDULE_INVSCALING:
        if (count > 0)
            c.lr_power = v[0];
        break;
    case AX_LR_SCHEDULE_ADAPTIVE:
        if (count > 0) {
            c.lr_patience = (int)v[0];
            if (!why && !is_whole(v[0], 0))
                why = "PATIENCE must be a whole number of epochs >= 0";
        }
        if (count > 1)
            c.lr_tol = v[1];
        break;
    }
    if (!why)
        why = ax_lr_schedule_check_text(&c);
    if (why)
        return ax_fail(AX_STATUS_BAD_ARGUMENT, "learning-rate schedule '%s': %s (the forms: %s)",
                       text, why, usage);
    *config = c;
    return AX_STATUS_OK;
}

const char *ax_lr_schedule_check_text(const ax_train_config *c)
{
    if ((int)c->lr_schedule < 0 || (int)c->lr_schedule >= SCHEDULE_COUNT)
        return "lr_schedule is not a schedule this library has";
    const bool gamma = c->lr_schedule == AX_LR_SCHEDULE_STEP || c->lr_schedule == AX_LR_SCHEDULE_EXP ||
                       c->lr_schedule == AX_LR_SCHEDULE_PLATEAU;
    if (gamma && !(c->lr_gamma > 0.0 && c->lr_gamma <= 1.0))
        return c->lr_schedule == AX_LR_SCHEDULE_PLATEAU ? "FACTOR must be in (0, 1]"
                                                        : "GAMMA must be in (0, 1]";
    if (c->lr_schedule == AX_LR_SCHEDULE_PLATEAU && c->lr_gamma == 1.0)
        return "FACTOR must be below 1 (ReduceLROnPlateau's rule)";
    if (c->lr_step_every < 1)
        return "EVERY (lr_step_every) must be >= 1";
    if (c->lr_patience < 0)
        return "PATIENCE (lr_patience) must be >= 0";
    if (!(c->lr_min >= 0.0 && isfinite(c->lr_min)))
        return "MIN (lr_min) must be a finite number >= 0";
    if (!(c->lr_power >= 0.0 && isfinite(c->lr_power)))
        return "POWER (lr_power) must be a finite number >= 0";
    if (!(c->lr_tol >= 0.0 && isfinite(c->lr_tol)))
        return "TOL (lr_tol) must be a finite number >= 0";
    if (c->warmup_steps < 0)
        return "warmup_steps must be >= 0";
    return NULL;
}

void ax_lr_schedule_format(const ax_train_config *c, char *text, size_t capacity)
{
    const char *name = ax_lr_schedule_name(c->lr_schedule);
    switch (c->lr_schedule) {
    case AX_LR_SCHEDULE_STEP:
        snprintf(text, capacity, "%s:%d:%.17g", name, c->lr_step_every, c->lr_gamma);
        break;
    case AX_LR_SCHEDULE_EXP:
        snprintf(text, capacity, "%s:%.17g", name, c->lr_gamma);
        break;
    case AX_LR_SCHEDULE_COSINE:
        snprintf(text, capacity, "%s:%.17g", name, c->lr_min);
        break;
    case AX_LR_SCHEDULE_PLATEAU:
        snprintf(text, capacity, "%s:%d:%.17g", name, c->lr_patience, c->lr_gamma);
        break;
    case AX_LR_SCHEDULE_INVSCALING:
        snprintf(text, capacity, "%s:%.17g", name, c->lr_power);
        break;
    case AX_LR_SCHEDULE_ADAPTIVE:
        snprintf(text, capacity, "%s:%d:%.17g", name, c->lr_patience, c->lr_tol);
        break;
    default:
        snprintf(text, capacity, "%s", name);
    }
}

ax_lr_state ax_lr_state_start(const ax_train_config *config)
{
    return (ax_lr_state){.rate = config->learning_rate, .best = INFINITY, .bad_epochs = 0};
}

/* ReduceLROnPlateau's step(metrics) in mode min, threshold_mode rel,
 * threshold 1e-4, cooldown 0, min_lr 0, eps 1e-8. */
static void plateau_step(const ax_train_config *c, ax_lr_state *s, double loss)
{
    if (loss < s->best * (1.0 - 1e-4)) {
        s->best = loss;
        s->bad_epochs = 0;
    } else {
        s->bad_epochs++;
    }
    if (s->bad_epochs > c->lr_patience) {
        const double reduced = fmax(s->rate * c->lr_gamma, 0.0);
        if (s->rate - reduced > 1e-8)
            s->rate = reduced;
        s->bad_epochs = 0;
    }
}

bool ax_lr_schedule_after_epoch(const ax_train_config *c, ax_lr_state *s, int epochs_done,
                                int64_t rows, double train_loss, double validation_loss)
{
    const double lr0 = c->learning_rate;
    const int e = epochs_done; /* torch's last_epoch after this step() */
    switch (c->lr_schedule) {
    case AX_LR_SCHEDULE_CONSTANT:
        break;
    case AX_LR_SCHEDULE_STEP: /* StepLR.get_lr */
        if (e % c->lr_step_every == 0)
            s->rate *= c->lr_gamma;
        break;
    case AX_LR_SCHEDULE_EXP: /* ExponentialLR.get_lr */
        s->rate *= c->lr_gamma;
        break;
    case AX_LR_SCHEDULE_COSINE: { /* CosineAnnealingLR.get_lr, T_max = the run's epochs */
        const double t = (double)c->epochs, eta_min = c->lr_min;
        if (((e - 1 - c->epochs) % (2 * c->epochs)) == 0)
            s->rate = s->rate + (lr0 - eta_min) * (1.0 - cos(M_PI / t)) / 2.0;
        else
            s->rate = (1.0 + cos(M_PI * e / t)) / (1.0 + cos(M_PI * (e - 1) / t)) *
                          (s->rate - eta_min) +
                      eta_min;
        break;
    }
    case AX_LR_SCHEDULE_PLATEAU:
        plateau_step(c, s, validation_loss);
        break;
    case AX_LR_SCHEDULE_INVSCALING: /* SGDOptimizer.iteration_ends(time_step = rows seen) */
        s->rate = lr0 / pow((double)e * (double)rows + 1.0, c->lr_power);
        break;
    case AX_LR_SCHEDULE_ADAPTIVE:
        /* BaseMultilayerPerceptron._update_no_improvement_count (no early
         * stopping), then SGDOptimizer.trigger_stopping. */
        if (train_loss > s->best - c->lr_tol)
            s->bad_epochs++;
        else
            s->bad_epochs = 0;
        if (train_loss < s->best)
            s->best = train_loss;
        if (s->bad_epochs > c->lr_patience) {
            if (s->rate <= 1e-6)
                return true;
            s->rate /= 5.0;
            s->bad_epochs = 0;
        }
        break;
    }
    return false;
}

double ax_lr_warmup_factor(const ax_train_config *c, uint64_t step)
{
    if (c->warmup_steps <= 0 || step >= (uint64_t)c->warmup_steps)
        return 1.0;
    return (double)(step + 1) / (double)c->warmup_steps;
}
