/* test_output_file.c: where the library's writes go (axon.h, "output
 * files"; src/base/atomic_file.c): through a symbolic link to its target
 * (the link kept), into a FIFO or character device in place (never replaced
 * by a regular file), refused for a folder, and after a failure nothing but
 * the library's own temporary removed. ax_output_check finds a missing
 * folder before anything is written. The device cases use a null and a
 * full device made with mknod in the test's folder, where mknod is allowed
 * (root, as in CI); elsewhere they are skipped with a note. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "test_util.h"
#include "test_files.h"

static bool write_text(const char *path, const char *text)
{
    ax_output_file *file = NULL;
    if (ax_output_file_open(path, &file) != AX_STATUS_OK)
        return false;
    if (ax_output_file_write(file, text, strlen(text)) != AX_STATUS_OK) {
        ax_output_file_abandon(file);
        return false;
    }
    return ax_output_file_commit(file) == AX_STATUS_OK;
}

static bool file_holds(const char *path, const char *text)
{
    char buffer[256] = {0};
    FILE *file = fopen(path, "rb");
    if (!file)
        return false;
    size_t length = fread(buffer, 1, sizeof buffer - 1, file);
    fclose(file);
    return length == strlen(text) && memcmp(buffer, text, length) == 0;
}

static bool is_kind(const char *path, mode_t kind)
{
    struct stat info;
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == kind;
}

/* No "NAME.tmp.*" left in the work folder. */
static bool no_temporaries(void)
{
    char command[256];
    snprintf(command, sizeof command, "ls -A '%s' | grep -q '\\.tmp\\.'", work_dir);
    return system(command) != 0;
}

/* A link to a file in another folder: the file is replaced, the link stays;
 * a dangling link gets its target created. */
static void test_links(void)
{
    CHECK(mkdir(in_work("real"), 0777) == 0);
    CHECK(write_text(in_work("real/model.txt"), "old"));
    CHECK(symlink("real/model.txt", in_work("link.txt")) == 0);
    CHECK(write_text(in_work("link.txt"), "new through the link"));
    CHECK(is_kind(in_work("link.txt"), S_IFLNK));
    CHECK(file_holds(in_work("real/model.txt"), "new through the link"));
    CHECK(symlink("real/absent.txt", in_work("dangling.txt")) == 0);
    CHECK(write_text(in_work("dangling.txt"), "created"));
    CHECK(is_kind(in_work("dangling.txt"), S_IFLNK));
    CHECK(file_holds(in_work("real/absent.txt"), "created"));
    /* A chain of two links, the second relative to its own folder. */
    CHECK(symlink("model.txt", in_work("real/inner.txt")) == 0);
    CHECK(symlink("real/inner.txt", in_work("chain.txt")) == 0);
    CHECK(write_text(in_work("chain.txt"), "through two"));
    CHECK(is_kind(in_work("real/inner.txt"), S_IFLNK));
    CHECK(file_holds(in_work("real/model.txt"), "through two"));
    /* A loop of links is refused, not followed forever. */
    CHECK(symlink("loop_b", in_work("loop_a")) == 0);
    CHECK(symlink("loop_a", in_work("loop_b")) == 0);
    CHECK(!write_text(in_work("loop_a"), "x"));
    CHECK(is_kind(in_work("loop_a"), S_IFLNK));
    CHECK(no_temporaries());
}

/* A FIFO is written in place: a reader gets the bytes, and it stays a FIFO. */
static void test_fifo(void)
{
    const char *fifo = in_work("pipe");
    CHECK(mkfifo(fifo, 0666) == 0);
    /* A reader opened first, so that opening the write end does not block. */
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(reader >= 0);
    CHECK(write_text(fifo, "through the pipe"));
    char buffer[64] = {0};
    CHECK(read(reader, buffer, sizeof buffer - 1) == 16);
    CHECK(strcmp(buffer, "through the pipe") == 0);
    close(reader);
    CHECK(is_kind(fifo, S_IFIFO));
    CHECK(no_temporaries());
}

/* A null device takes the bytes and stays a device; a full device fails
 * the write with its cause and is neither replaced nor removed. The nodes
 * are made in the test's folder (never /dev's own: a library that replaced
 * them would break the machine); without mknod (not root) this is skipped. */
static bool devices_made;

static void test_devices(void)
{
    const char *null = in_work("mynull"), *full = in_work("myfull");
    if (mknod(null, S_IFCHR | 0666, makedev(1, 3)) != 0 ||
        mknod(full, S_IFCHR | 0666, makedev(1, 7)) != 0) {
        printf("skipped the device cases: mknod in %s: %s (needs root)\n", work_dir,
               strerror(errno));
        return;
    }
    devices_made = true;
    CHECK(write_text(null, "discarded"));
    CHECK(is_kind(null, S_IFCHR));
    ax_output_file *file = NULL;
    CHECK_OK(ax_output_file_open(full, &file));
    if (file) {
        CHECK(ax_output_file_in_place(file));
        char block[8192] = {0};
        CHECK_FAILS(ax_output_file_write(file, block, sizeof block), AX_STATUS_IO_ERROR,
                    "No space left on device");
        ax_output_file_abandon(file);
    }
    CHECK(is_kind(full, S_IFCHR));
    CHECK(!write_text(full, "no room"));
    CHECK(is_kind(full, S_IFCHR));
    CHECK(no_temporaries());
}

/* A folder is refused; a file in a missing folder is found by ax_output_check
 * before anything is written, naming the folder. */
static void test_refusals(void)
{
    CHECK_FAILS(ax_output_check(work_dir), AX_STATUS_BAD_ARGUMENT, "is a folder");
    CHECK_FAILS(ax_output_check(in_work("nodir/model.safetensors")), AX_STATUS_IO_ERROR,
                "the folder");
    CHECK_FAILS(ax_output_check(in_work("nodir/model.safetensors")), AX_STATUS_IO_ERROR, "nodir");
    CHECK(symlink("nodir/x", in_work("to_nodir")) == 0);
    CHECK_FAILS(ax_output_check(in_work("to_nodir")), AX_STATUS_IO_ERROR, "where its link points");
    CHECK_OK(ax_output_check(in_work("new.safetensors")));
    if (devices_made)
        CHECK_OK(ax_output_check(in_work("mynull")));
    CHECK(access(in_work("new.safetensors"), F_OK) != 0);
}

/* ax_net_save goes the same way: through a link, not over it. */
static void test_model_through_link(void)
{
    ax_net_config config = ax_net_defaults();
    ax_layer_spec layers[1] = {ax_layer_dense(2, AX_ACT_SOFTMAX)};
    config.input_width = 3;
    config.layers = layers;
    config.layer_count = 1;
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    CHECK(symlink("real/saved.safetensors", in_work("saved_link.safetensors")) == 0);
    CHECK_OK(ax_net_save(net, in_work("saved_link.safetensors")));
    CHECK(is_kind(in_work("saved_link.safetensors"), S_IFLNK));
    CHECK(is_kind(in_work("real/saved.safetensors"), S_IFREG));
    if (devices_made) {
        CHECK_OK(ax_net_save(net, in_work("mynull")));
        CHECK(is_kind(in_work("mynull"), S_IFCHR));
    }
    ax_net_free(net);
}

int main(void)
{
    if (!test_work_dir_make("axon-output-file"))
        return 1;
    test_links();
    test_fifo();
    test_devices();
    test_refusals();
    test_model_through_link();
    test_work_dir_remove();
    return test_finish("test_output_file");
}
