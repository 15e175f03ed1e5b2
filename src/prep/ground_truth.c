/* ground_truth.c: the labels of a validation set as ILSVRC hands it out
 * (seed 002's "7 GB validation image dataset"): a flat folder or tar of
 * images (ILSVRC2012_val_00000001.JPEG, ...) and a ground-truth file of one
 * label number a line, line i for the i-th image in byte order of the file
 * names, numbered from 1 (ILSVRC2012_validation_ground_truth.txt, whose
 * numbers are the devkit's ILSVRC2012_IDs; cuda-convnet2's make-data.py
 * reads it the same way, less one). Label number k is the k-th name of the
 * labels file when one is given (the training set prepared with the same
 * file then numbers its folders the same way), else the name "k". */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "prep/prep.h"

typedef struct named {
    const char *name;
    int64_t index;
} named;

static int compare_by_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* The numbers of path, one a line (blank lines skipped), into *numbers. */
static ax_status read_numbers(const char *path, int64_t largest, int64_t **numbers, int64_t *count)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open the ground-truth file: %s", path,
                       strerror(errno));
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    int64_t line_number = 0, capacity = 0;
    ax_status status = AX_STATUS_OK;
    *numbers = NULL;
    *count = 0;
    while (status == AX_STATUS_OK && (length = getline(&line, &line_capacity, file)) >= 0) {
        line_number++;
        while (length > 0 && strchr("\r\n \t", line[length - 1]))
            line[--length] = '\0';
        const char *text = line;
        while (*text == ' ' || *text == '\t')
            text++;
        if (!*text)
            continue;
        char *end = NULL;
        errno = 0;
        long long value = strtoll(text, &end, 10);
        if (errno || *end || end == text || value < 1 || value > largest) {
            status = ax_fail(AX_STATUS_BAD_FILE,
                             "%s:%lld: '%s' is not a label number 1 .. %lld (one a line, "
                             "numbered from 1 as ILSVRC's ground truth)",
                             path, (long long)line_number, text, (long long)largest);
            break;
        }
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            int64_t *grown = realloc(*numbers, (size_t)capacity * sizeof *grown);
            if (!grown) {
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            *numbers = grown;
        }
        (*numbers)[(*count)++] = value;
    }
    /* getline's -1 is the end of the file, a read error, or no memory for
     * the line (ENOMEM, which sets no error flag): only the first is the end. */
    const int read_error = errno;
    free(line);
    if (status == AX_STATUS_OK && !feof(file))
        status = read_error == ENOMEM
                     ? ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path)
                     : ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read: %s", path,
                               strerror(read_error));
    fclose(file);
    if (status != AX_STATUS_OK) {
        free(*numbers);
        *numbers = NULL;
    }
    return status;
}

ax_status prep_list_ground_truth(prep_list *list, const char *path, bool labels_file)
{
    for (int64_t i = 0; i < list->count; i++)
        if (list->images[i].label >= 0)
            return ax_fail(AX_STATUS_BAD_DATA,
                           "%s: with a ground-truth file the images must lie flat in the folder "
                           "or tar, as ILSVRC's validation set does; %s is in a folder or inner tar",
                           path, prep_image_name(list, &list->images[i]));
    /* Numbers name the labels file's lines; without one, any number names itself. */
    const int64_t largest = labels_file ? list->label_count : INT32_MAX;
    int64_t *numbers = NULL, count = 0;
    AX_TRY(read_numbers(path, largest, &numbers, &count));
    if (count != list->count) {
        free(numbers);
        return ax_fail(AX_STATUS_BAD_DATA,
                       "%s: %lld label%s for %lld images (one a line, the i-th for the i-th "
                       "image in byte order of the file names)",
                       path, (long long)count, count == 1 ? "" : "s", (long long)list->count);
    }
    named *by_name = malloc((size_t)(count > 0 ? count : 1) * sizeof *by_name);
    ax_status status = by_name ? AX_STATUS_OK : ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    int64_t used = 0;
    for (int64_t i = 0; i < count; i++)
        used = numbers[i] > used ? numbers[i] : used;
    if (status == AX_STATUS_OK && !labels_file) { /* names "1" .. "used" */
        char **names = calloc((size_t)used, sizeof *names);
        if (!names)
            status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        for (int64_t k = 0; k < used && status == AX_STATUS_OK; k++) {
            char text[24];
            snprintf(text, sizeof text, "%lld", (long long)k + 1);
            if (!(names[k] = strdup(text)))
                status = ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        if (status == AX_STATUS_OK) {
            for (int32_t k = 0; k < list->label_count; k++)
                free(list->labels[k]);
            free(list->labels);
            list->labels = names;
            list->label_count = list->label_capacity = (int32_t)used;
        } else if (names) {
            for (int64_t k = 0; k < used; k++)
                free(names[k]);
            free(names);
        }
    }
    if (status == AX_STATUS_OK) {
        for (int64_t i = 0; i < count; i++)
            by_name[i] = (named){prep_image_name(list, &list->images[i]), i};
        qsort(by_name, (size_t)count, sizeof *by_name, compare_by_name);
        for (int64_t i = 0; i < count; i++)
            list->images[by_name[i].index].label = (int32_t)(numbers[i] - 1);
        list->unlabelled = 0;
    }
    free(by_name);
    free(numbers);
    return status;
}
