/* test_npy_header_refusals.c: the .npy header parser (src/io/npy_header.c)
 * on headers NumPy never writes but a hand-made or damaged file may hold:
 * each is refused with the status and the message that names the file and
 * what is wrong in its header (a shape that is a list, of 9 dimensions, of a
 * size past int64, without commas, of words; a descr that is not a string; a
 * fortran_order that is not True or False; an unused key whose string never
 * ends; two values without a comma; no shape; a header longer than the file;
 * a version 2 length cut off; a folder given as the file), and nothing is
 * loaded. Python 2's long integers in the shape ("(3L, 2L)", as numpy under
 * Python 2 wrote them) are read as integers: the data loads with its values.
 * (An unused key's value that is a bare word, 'x': @, is skipped like any
 * word: the parser reads only descr, fortran_order and shape.) */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "test_files.h"

static char expected[1024];
#define EXPECT(...) (snprintf(expected, sizeof expected, __VA_ARGS__), expected)

static const float f4[6] = {0, 1, 2, 3, 4, 5};
static char labels[256];

static void refused(const char *name, const char *dict, ax_status status, const char *why)
{
    const char *path = in_work(name);
    write_npy_file(path, 1, dict, f4, sizeof f4);
    ax_dataset *data = NULL;
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), status, EXPECT("%s: %s", path, why));
    CHECK(data == NULL);
}

int main(void)
{
    if (!test_work_dir_make("axon-npy-header"))
        return 1;
    const int64_t i8[3] = {0, 1, 2};
    snprintf(labels, sizeof labels, "%s", in_work("labels.npy"));
    write_npy_array(labels, "<i8", "(3,)", i8, sizeof i8);

    /* Python 2's longs: read as the integers they are */
    const char *path = in_work("longs.npy");
    write_npy_array(path, "<f4", "(3L, 2L)", f4, sizeof f4);
    ax_dataset *data = NULL;
    CHECK_OK(ax_dataset_load_npy(path, labels, 1.0, &data));
    if (data) {
        CHECK(ax_dataset_rows(data) == 3 && ax_dataset_features(data) == 2);
        CHECK(memcmp(ax_dataset_features_data(data), f4, sizeof f4) == 0);
        ax_dataset_free(data);
    }

    const char *bad = "malformed .npy header: ";
    char why[256];
#define WHY(text) (snprintf(why, sizeof why, "%s%s", bad, text), why)
    refused("list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [3, 2], }", AX_STATUS_BAD_FILE,
            WHY("'shape' is not a tuple"));
    refused("nine.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6), }",
            AX_STATUS_UNSUPPORTED, "arrays of more than 8 dimensions are not supported");
    refused("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }",
            AX_STATUS_BAD_FILE, WHY("a dimension in 'shape' is too large"));
    refused("nocomma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3 2), }", AX_STATUS_BAD_FILE,
            WHY("'shape' is not a tuple of integers"));
    refused("letters.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (three, 2), }",
            AX_STATUS_BAD_FILE, WHY("'shape' holds something other than integers"));
    refused("descr.npy", "{'descr': 4, 'fortran_order': False, 'shape': (3, 2), }", AX_STATUS_BAD_FILE,
            WHY("'descr' is not a dtype string"));
    refused("order.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (3, 2), }", AX_STATUS_BAD_FILE,
            WHY("'fortran_order' is neither True nor False"));
    refused("value.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x': 'no end, }",
            AX_STATUS_BAD_FILE, WHY("unreadable value"));
    refused("between.npy", "{'descr': '<f4' 'fortran_order': False, 'shape': (3, 2), }", AX_STATUS_BAD_FILE,
            WHY("expected ',' or '}' after a value"));
    refused("noshape.npy", "{'descr': '<f4', 'fortran_order': False, }", AX_STATUS_BAD_FILE,
            WHY("no 'shape' key"));

    /* a version 1 header that says 1000 bytes in a file of 80 */
    path = in_work("short.npy");
    unsigned char bytes[80] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xe8, 0x03};
    memset(bytes + 10, ' ', sizeof bytes - 10);
    write_file(path, bytes, sizeof bytes);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated: the header needs 1010 bytes but the file holds only 80", path));
    /* version 2 with its 4-byte length cut off */
    path = in_work("cut.npy");
    write_file(path, (const unsigned char[]){0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0x40, 0}, 10);
    CHECK_FAILS(ax_dataset_load_npy(path, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: truncated .npy header", path));
    /* a folder */
    CHECK_FAILS(ax_dataset_load_npy(work_dir, labels, 1.0, &data), AX_STATUS_BAD_FILE,
                EXPECT("%s: not a regular file", work_dir));
    CHECK(data == NULL);

    test_work_dir_remove();
    return test_finish("test_npy_header_refusals");
}
