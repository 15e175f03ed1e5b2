/* links.c: which symbolic links a folder input's listing follows (issue 25:
 * `ln -s .. m1/cat/loop` made prep list the whole tree again and again
 * under cat, 384 images from 12, dog images labelled cat).
 *
 * A label is the first folder below the input that an image sits in, so a
 * link may only bring in what has no place of its own in the tree:
 * - a link whose target lies inside the input is not followed: the target
 *   is listed in its own place, under its own label (following it would
 *   list it twice, the second time under the link's label);
 * - a link to a folder that holds the input (`..` from the top) is a loop;
 * - a link out of the input is followed, its images labelled by where the
 *   link sits (a folder of links to data kept elsewhere is a common layout),
 *   but a folder reached a second time by any path (device and inode) is
 *   not listed again, which also ends loops outside the input.
 * Each refusal is a warning naming the link and why, and counted. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "prep/prep.h"

ax_status prep_walk_start(prep_walk *walk, const char *input)
{
    memset(walk, 0, sizeof *walk);
    walk->root = realpath(input, NULL);
    if (!walk->root)
        return ax_fail(AX_STATUS_BAD_FILE, "%s: cannot resolve the folder: %s", input,
                       strerror(errno));
    return AX_STATUS_OK;
}

void prep_walk_free(prep_walk *walk)
{
    free(walk->root);
    free(walk->folders);
    memset(walk, 0, sizeof *walk);
}

/* The folders entered are kept in an open-addressing hash set: a tree of
 * 100,000 folders must not cost 10^10 comparisons. Slot 0 is free: no
 * folder has inode 0. */
static uint64_t slot_of(dev_t device, ino_t inode, int64_t capacity)
{
    uint64_t key = (uint64_t)inode * 0x9e3779b97f4a7c15ull ^ (uint64_t)device;
    key ^= key >> 29;
    return key & (uint64_t)(capacity - 1);
}

static bool insert(prep_folder_id *folders, int64_t capacity, prep_folder_id id)
{
    for (uint64_t i = slot_of(id.device, id.inode, capacity);; i = (i + 1) & (uint64_t)(capacity - 1)) {
        if (folders[i].inode == 0) {
            folders[i] = id;
            return true;
        }
        if (folders[i].device == id.device && folders[i].inode == id.inode)
            return false;
    }
}

ax_status prep_walk_enter(prep_walk *walk, const struct stat *folder, bool *first)
{
    if (2 * (walk->folder_count + 1) > walk->folder_capacity) {
        int64_t capacity = walk->folder_capacity ? 2 * walk->folder_capacity : 256;
        prep_folder_id *grown = calloc((size_t)capacity, sizeof *grown);
        if (!grown)
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "prep: out of memory listing the input");
        for (int64_t i = 0; i < walk->folder_capacity; i++)
            if (walk->folders[i].inode != 0)
                insert(grown, capacity, walk->folders[i]);
        free(walk->folders);
        walk->folders = grown;
        walk->folder_capacity = capacity;
    }
    *first = insert(walk->folders, walk->folder_capacity,
                    (prep_folder_id){folder->st_dev, folder->st_ino});
    if (*first)
        walk->folder_count++;
    return AX_STATUS_OK;
}

/* Whether path is inside (or is) folder; both are real paths. */
static bool is_within(const char *path, const char *folder)
{
    size_t length = strlen(folder);
    if (length == 1 && folder[0] == '/')
        return true;
    return strncmp(path, folder, length) == 0 && (path[length] == '\0' || path[length] == '/');
}

bool prep_walk_link(const prep_walk *walk, const char *link, char *why, size_t why_capacity)
{
    char *target = realpath(link, NULL);
    if (!target)
        return true; /* dangling: the stat that follows names the error */
    bool follow = true;
    if (is_within(target, walk->root)) {
        const char *inside = target + strlen(walk->root);
        snprintf(why, why_capacity,
                 "a link to %s inside the input, which is listed in its own place: not followed",
                 *inside ? inside + 1 : "the input itself");
        follow = false;
    } else if (is_within(walk->root, target)) {
        snprintf(why, why_capacity, "a link to %s, which holds the input (a loop): not followed",
                 target);
        follow = false;
    }
    free(target);
    return follow;
}
