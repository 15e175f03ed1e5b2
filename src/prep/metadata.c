/* metadata.c: the files of a prep output besides the batches (docs/prep.md):
 *
 *   plan.json  written first: the settings and a fingerprint of the input
 *              list, so a rerun resumes only into the run it continues and a
 *              different input or setting is refused instead of mixed in;
 *   meta.json  written last: label names, images per label, image size,
 *              channels, the batch list with each batch's image count, and
 *              for RGB images the colour principal components (color_pca,
 *              data/color_pca.h: AlexNet's lighting noise, cuda-convnet2's
 *              batches.meta key);
 *   mean.npy   float32 (S, S, C): the mean image over every written image
 *              (from exact integer sums, so it does not depend on threads).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/json.h"
#include "prep/prep.h"

static uint64_t fnv(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ p[i]) * 0x100000001b3ULL;
    return hash;
}

uint64_t prep_fingerprint(const prep_list *list, const ax_prep_options *options, int channels)
{
    uint64_t hash = 0xcbf29ce484222325ULL;
    const int64_t settings[5] = {1 /* layout version */, options->image_size, options->batch_size,
                                 (int64_t)options->seed, channels};
    hash = fnv(hash, settings, sizeof settings);
    if (options->format != AX_PREP_FORMAT_RAW) { /* raw runs keep their fingerprint */
        const int64_t format[2] = {options->format, options->jpeg_quality};
        hash = fnv(hash, format, sizeof format);
    }
    for (int32_t i = 0; i < list->label_count; i++)
        hash = fnv(hash, list->labels[i], strlen(list->labels[i]) + 1);
    for (int64_t i = 0; i < list->count; i++) {
        const prep_image *image = &list->images[i];
        const char *name = prep_image_name(list, image);
        hash = fnv(hash, name, strlen(name) + 1);
        hash = fnv(hash, &image->size, sizeof image->size);
        hash = fnv(hash, &image->label, sizeof image->label);
    }
    return hash;
}

static ax_status read_whole(const char *path, char **text, size_t *length)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot open: %s", path, strerror(errno));
    char *buffer = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (used + 4096 > capacity) {
            capacity = capacity ? 2 * capacity : 8192;
            char *grown = realloc(buffer, capacity);
            if (!grown) {
                free(buffer);
                fclose(file);
                return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            buffer = grown;
        }
        size_t got = fread(buffer + used, 1, capacity - used, file);
        used += got;
        if (got == 0)
            break;
    }
    bool failed = ferror(file);
    fclose(file);
    if (failed) {
        free(buffer);
        return ax_fail(AX_STATUS_IO_ERROR, "%s: cannot read", path);
    }
    *text = buffer;
    *length = used;
    return AX_STATUS_OK;
}

ax_status prep_plan_check(const char *dir, uint64_t fingerprint, const ax_prep_options *options)
{
    char path[4096], hex[32];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    snprintf(hex, sizeof hex, "%016" PRIx64, fingerprint);
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
        char *text = NULL;
        size_t length = 0;
        AX_TRY(read_whole(path, &text, &length));
        ax_json *root = NULL;
        ax_status status = ax_json_parse(text, length, 0, &root);
        free(text);
        if (status != AX_STATUS_OK)
            return ax_fail_context(status, "%s", path);
        const char *stored = ax_json_string(ax_json_object_get(root, "fingerprint"));
        bool same = stored && strcmp(stored, hex) == 0;
        ax_json_free(root);
        if (!same)
            return ax_fail(AX_STATUS_BAD_ARGUMENT,
                           "%s: the folder holds the output of a run with another input or "
                           "other settings (size, batch, seed, grey, format, quality); give a new --out folder, "
                           "or delete this one",
                           dir);
        return AX_STATUS_OK;
    }
    ax_json_writer w = {0};
    ax_json_writer_append(&w, "{\"format\": \"axon-prep-plan\", \"version\": 1, \"fingerprint\": ");
    ax_json_writer_append_string(&w, hex);
    ax_json_writer_append(&w, ", \"image_size\": ");
    ax_json_writer_append_int(&w, options->image_size);
    ax_json_writer_append(&w, ", \"batch_size\": ");
    ax_json_writer_append_int(&w, options->batch_size);
    ax_json_writer_append(&w, ", \"seed\": ");
    ax_json_writer_append_int(&w, (int64_t)options->seed);
    ax_json_writer_append(&w, options->grey ? ", \"grey\": true}\n" : ", \"grey\": false}\n");
    if (w.out_of_memory) {
        ax_json_writer_free(&w);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    }
    ax_status status = prep_write_file_atomic(path, w.text, w.length);
    ax_json_writer_free(&w);
    return status;
}

ax_status prep_metadata_write(const char *dir, const prep_list *list,
                              const ax_prep_options *options, int channels,
                              const int64_t *label_counts, const int64_t *batch_counts,
                              int64_t batches, const uint64_t *sums,
                              const ax_color_pca *color_pca, int64_t images, int64_t skipped)
{
    const int64_t side = options->image_size;
    const size_t pixels = (size_t)(side * side * channels);
    float *mean = malloc(pixels * sizeof *mean);
    if (!mean)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory for the mean image");
    for (size_t i = 0; i < pixels; i++)
        mean[i] = images > 0 ? (float)((double)sums[i] / (double)images) : 0.0f;
    char path[4096];
    snprintf(path, sizeof path, "%s/mean.npy", dir);
    const int64_t shape[3] = {side, side, channels};
    ax_status status = ax_npy_write_f32(path, mean, 3, shape);
    free(mean);
    AX_TRY(status);

    ax_json_writer w = {0};
    ax_json_writer_append(&w, "{\n  \"format\": \"axon-prep\",\n  \"version\": 1,\n  \"image_size\": ");
    ax_json_writer_append_int(&w, side);
    ax_json_writer_append(&w, ",\n  \"channels\": ");
    ax_json_writer_append_int(&w, channels);
    ax_json_writer_append(&w, ",\n  \"layout\": \"(images, height, width, channels) uint8\"");
    if (options->format == AX_PREP_FORMAT_JPEG) {
        /* Readers that predate it refuse the .jpegs names rather than misread them. */
        ax_json_writer_append(&w, ",\n  \"batch_format\": \"jpeg\",\n  \"jpeg_quality\": ");
        ax_json_writer_append_int(&w, options->jpeg_quality);
    } else {
        ax_json_writer_append(&w, ",\n  \"batch_format\": \"raw\"");
    }
    ax_json_writer_append(&w, ",\n  \"batch_size\": ");
    ax_json_writer_append_int(&w, options->batch_size);
    ax_json_writer_append(&w, ",\n  \"seed\": ");
    ax_json_writer_append_int(&w, (int64_t)options->seed);
    ax_json_writer_append(&w, ",\n  \"images\": ");
    ax_json_writer_append_int(&w, images);
    ax_json_writer_append(&w, ",\n  \"images_skipped\": ");
    ax_json_writer_append_int(&w, skipped);
    ax_json_writer_append(&w, ",\n  \"mean\": \"mean.npy\"");
    if (color_pca && color_pca->present) {
        ax_json_writer_append(&w, ",\n  \"color_pca\": ");
        ax_color_pca_write_json(&w, color_pca);
    }
    ax_json_writer_append(&w, ",\n  \"labels\": [");
    for (int32_t i = 0; i < list->label_count; i++) {
        ax_json_writer_append(&w, i ? ", " : "");
        ax_json_writer_append_string(&w, list->labels[i]);
    }
    ax_json_writer_append(&w, "],\n  \"counts\": [");
    for (int32_t i = 0; i < list->label_count; i++) {
        ax_json_writer_append(&w, i ? ", " : "");
        ax_json_writer_append_int(&w, label_counts[i]);
    }
    ax_json_writer_append(&w, "],\n  \"batches\": [");
    bool first = true;
    for (int64_t b = 0; b < batches; b++) {
        if (batch_counts[b] == 0)
            continue; /* every image of the batch was bad: no file */
        char data_path[64], labels_path[64];
        prep_batch_names_format(".", b, options->format, data_path, labels_path,
                                sizeof data_path);
        ax_json_writer_append(&w, first ? "\n    {\"data\": " : ",\n    {\"data\": ");
        first = false;
        ax_json_writer_append_string(&w, data_path + 2);
        ax_json_writer_append(&w, ", \"labels\": ");
        ax_json_writer_append_string(&w, labels_path + 2);
        ax_json_writer_append(&w, ", \"images\": ");
        ax_json_writer_append_int(&w, batch_counts[b]);
        ax_json_writer_append(&w, "}");
    }
    ax_json_writer_append(&w, "\n  ]\n}\n");
    if (w.out_of_memory) {
        ax_json_writer_free(&w);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory");
    }
    snprintf(path, sizeof path, "%s/meta.json", dir);
    status = prep_write_file_atomic(path, w.text, w.length);
    ax_json_writer_free(&w);
    return status;
}
