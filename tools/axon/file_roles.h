/* file_roles.h: the files a command reads and the files it writes, checked
 * together before any work (docs/cli.md, "Output files"):
 *   - no output is one of the inputs: compared as files (device and inode,
 *     through links and other paths), a data spec by the files it reads
 *     (fashion-mnist, a folder of IDX files or of batches: every file in it);
 *   - no checkpoint the run may write is an input (other than --resume's);
 *   - every output's place is writable (ax_output_check: its folder exists
 *     and can be written; a folder, disk or socket is refused);
 *   - no two outputs are one file.
 * A refusal names both roles: "--out g.csv is the training data (--data g.csv)". */
#ifndef AXON_CLI_FILE_ROLES_H
#define AXON_CLI_FILE_ROLES_H

#include <stdbool.h>

typedef enum file_role_kind {
    FILE_ROLE_FILE,        /* a path read or written whole */
    FILE_ROLE_DATA,        /* a --data/--test spec (data_source.h) */
    FILE_ROLE_CHECKPOINTS, /* a --checkpoint PREFIX: PREFIX.epoch-NNNNNN.safetensors, .interrupted */
    FILE_ROLE_RESUMED,     /* --resume's checkpoint: a checkpoint may replace it */
    FILE_ROLE_FOLDER,      /* a folder of outputs named by patterns (axon prep --out) */
} file_role_kind;

typedef struct file_role {
    const char *option; /* "--out" */
    const char *path;   /* as given */
    const char *what;   /* "the training data" */
    file_role_kind kind;
    const char *const *names; /* FILE_ROLE_FOLDER: fnmatch patterns of the files written */
} file_role;

enum { FILE_ROLES_MAX = 16 };

typedef struct file_roles {
    file_role inputs[FILE_ROLES_MAX], outputs[FILE_ROLES_MAX];
    int input_count, output_count;
} file_roles;

/* Each adds one role; a NULL path adds nothing (the option was not given). */
void file_roles_input(file_roles *roles, const char *option, const char *path, const char *what);
void file_roles_resumed(file_roles *roles, const char *option, const char *path, const char *what);
void file_roles_data(file_roles *roles, const char *option, const char *spec, const char *what);
void file_roles_output(file_roles *roles, const char *option, const char *path);
void file_roles_checkpoints(file_roles *roles, const char *option, const char *prefix);
/* A folder the command writes files into, named by the NULL-ended fnmatch
 * patterns names (static): an input in that folder with such a name, or
 * the folder itself given as an input file, is refused. */
void file_roles_folder(file_roles *roles, const char *option, const char *folder,
                       const char *const *names);

/* CLI_EXIT_OK, or CLI_EXIT_RUNTIME after printing "axon: ..." for the first
 * problem found (see above). */
int file_roles_check(const file_roles *roles);

#endif
