/* progress.c: the live line and the per-epoch lines of `axon train`, the
 * per-epoch --metrics record, and Ctrl-C / SIGTERM handling. The live line goes to
 * stderr only when stderr is a terminal, so logs and pipes get the plain
 * epoch lines alone, without carriage returns. */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupt_signal; /* the first caught, 0 before */

static void on_interrupt(int signal_number)
{
    interrupt_signal = signal_number;
}

/* SIGINT (Ctrl-C) and SIGTERM (kill, a batch scheduler's stop) alike. Once
 * installed the handlers stay until the process exits: a signal that comes
 * after training (while the model is saved, or under mpirun while another
 * rank finishes) is noted rather than killing the process half-way through
 * its last writes, or one rank of a job that is ending normally. Replica
 * threads (axon train --replicas) each call this; the first installs. */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install_handlers(void)
{
    static const int caught_signals[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        /* A signal ignored on entry (SIGINT for a background job of a
         * script) stays ignored, as for any well-behaved program. */
        struct sigaction previous;
        if (sigaction(caught_signals[i], NULL, &previous) == 0 && previous.sa_handler == SIG_IGN)
            continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        /* One-shot: the first signal stops training cleanly (after the
         * current step, with a checkpoint when they are on), a second one
         * kills the process as the user would expect if the stop is slow. */
        action.sa_flags = (int)SA_RESETHAND;
        sigaction(caught_signals[i], &action, NULL);
    }
}

void progress_catch_interrupt(void) { pthread_once(&install_once, install_handlers); }

bool progress_interrupted(void) { return interrupt_signal != 0; }

const char *progress_interrupt_name(void)
{
    return interrupt_signal == SIGINT ? "SIGINT" : interrupt_signal == SIGTERM ? "SIGTERM" : "a signal";
}

void format_duration(double seconds, char *text, size_t capacity)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(text, capacity, "?");
        return;
    }
    long long total = (long long)(seconds + 0.5);
    if (seconds > 1e9)
        snprintf(text, capacity, "a long time");
    else if (total < 60)
        snprintf(text, capacity, "%llds", total);
    else if (total < 3600)
        snprintf(text, capacity, "%lldm%02llds", total / 60, total % 60);
    else
        snprintf(text, capacity, "%lldh%02lldm", total / 3600, total % 3600 / 60);
}

void format_seconds(double seconds, char *text, size_t capacity)
{
    if (seconds >= 0.1 || seconds <= 0.0)
        snprintf(text, capacity, "%.2f s", seconds);
    else
        snprintf(text, capacity, "%.2f ms", 1000.0 * seconds);
}

void format_gflops(double gflops, char *text, size_t capacity)
{
    snprintf(text, capacity, gflops >= 100.0 ? "%.0f GFLOP/s" : "%.3g GFLOP/s", gflops);
}

void format_loss(double loss, char *text, size_t capacity)
{
    if (!isfinite(loss))
        snprintf(text, capacity, "%s", isnan(loss) ? "nan" : "inf");
    else if (loss != 0.0 && fabs(loss) < 0.001)
        snprintf(text, capacity, "%.3e", loss);
    else if (fabs(loss) < 1000.0)
        snprintf(text, capacity, "%.4f", loss);
    else
        snprintf(text, capacity, "%.4g", loss);
}

void progress_init(progress_display *display, bool quiet, bool classification,
                   metrics_file *metrics)
{
    memset(display, 0, sizeof *display);
    display->out = stdout;
    display->quiet = quiet;
    display->live = !quiet && isatty(fileno(stderr));
    display->classification = classification;
    display->metrics = metrics;
    display->step_name = "epoch";
}

void progress_clear_line(progress_display *display)
{
    if (display->line_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        display->line_shown = false;
    }
}

static void show_live_line(progress_display *display, const ax_progress *progress)
{
    char loss[32], eta[32];
    format_loss(progress->train_loss, loss, sizeof loss);
    format_duration(progress->eta_seconds, eta, sizeof eta);
    char waiting[64] = "";
    if (progress->data_wait_seconds >= 0.01)
        snprintf(waiting, sizeof waiting, "  waited %.2f s for data", progress->data_wait_seconds);
    char phase[32] = "";
    if (display->phases > 0)
        snprintf(phase, sizeof phase, "phase %d/%d  ", display->phase, display->phases);
    fprintf(stderr, "\r%s%s %d/%d  batch %lld/%lld  %.0f samples/s  loss %s  ETA %s%s\033[K",
            phase, display->step_name, progress->epoch, progress->epochs, (long long)progress->batch,
            (long long)progress->batches, progress->samples_per_second, loss, eta, waiting);
    fflush(stderr);
    display->line_shown = true;
}

static void show_epoch_line(progress_display *display, const ax_progress *progress)
{
    char line[512];
    char number[32];
    size_t used = 0;
#define APPEND(...)                                                                      \
    do {                                                                                 \
        if (used < sizeof line)                                                          \
            used += (size_t)snprintf(line + used, sizeof line - used, __VA_ARGS__);       \
    } while (0)
    format_loss(progress->train_loss, number, sizeof number);
    if (display->phases > 0)
        APPEND("phase %d/%d  ", display->phase, display->phases);
    APPEND("%s %d/%d  loss %s", display->step_name, progress->epoch, progress->epochs, number);
    if (display->show_rate && isfinite(progress->learning_rate))
        APPEND("  lr %.6g", progress->learning_rate);
    if (!isnan(progress->validation_loss)) {
        format_loss(progress->validation_loss, number, sizeof number);
        APPEND("  val_loss %s", number);
        if (display->classification && isfinite(progress->validation_accuracy))
            APPEND("  val_acc %.2f%%", 100.0 * progress->validation_accuracy);
    }
    if (!isnan(progress->test_loss)) {
        format_loss(progress->test_loss, number, sizeof number);
        APPEND("  test_loss %s", number);
        if (display->classification && isfinite(progress->test_accuracy))
            APPEND("  test_acc %.2f%%", 100.0 * progress->test_accuracy);
    }
    format_seconds(progress->epoch_seconds, number, sizeof number);
    APPEND("  %s", number);
    if (isfinite(progress->gflops)) {
        format_gflops(progress->gflops, number, sizeof number);
        APPEND("  %s", number);
    }
    /* Why an epoch was slow: the batch files (JPEG ones decoded) were not
     * ready when training wanted them. */
    if (progress->epoch_seconds > 0 && progress->data_wait_seconds >= 0.01)
        APPEND("  (waited %.2f s, %.0f%%, for the next batch file to be read and decoded)",
               progress->data_wait_seconds,
               100.0 * progress->data_wait_seconds / progress->epoch_seconds);
    /* Why an epoch was slow: other processes held the cores, and axon ran
     * on fewer threads (ax_train_config.adapt_threads). */
    if (progress->epoch_seconds > 0 &&
        progress->fewer_threads_seconds >= 0.01 * progress->epoch_seconds)
        APPEND("  (other processes held the cores: fewer than %d threads for %.0f%% of it, "
               "now %d)", ax_threads(),
               100.0 * progress->fewer_threads_seconds / progress->epoch_seconds,
               progress->threads);
#undef APPEND
    progress_clear_line(display);
    fprintf(display->out, "%s\n", line);
    fflush(display->out);
}

bool progress_callback(const ax_progress *progress, void *user)
{
    progress_display *display = user;
    display->current_epoch = progress->epoch;
    if (progress->epoch_done) {
        display->last_epoch = *progress;
        display->have_epoch = true;
        if (!display->quiet)
            show_epoch_line(display, progress);
        if (!metrics_write_epoch(display->metrics, progress, display->classification)) {
            display->metrics_failed = true;
            return false;
        }
    } else if (display->live) {
        show_live_line(display, progress);
    }
    return !progress_interrupted();
}
