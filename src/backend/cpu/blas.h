/* blas.h: the BLAS functions libaxon calls, through one table bound when
 * libaxon is loaded (blas.c says why a table and not the linked symbols). */
#ifndef AX_BACKEND_CPU_BLAS_H
#define AX_BACKEND_CPU_BLAS_H

#include <stdbool.h>

#include <cblas.h>

typedef struct ax_blas_functions {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(cblas_dgemm) *dgemm;
    void (*set_num_threads)(int threads); /* NULL where the BLAS has no such call */
    char *(*corename)(void);              /* the kernels in use; NULL: not OpenBLAS */
    char *(*config)(void);                /* OpenBLAS's build line; NULL: not OpenBLAS */
    const char *own_copy;                 /* the file of the copy libaxon loaded itself
                                           * (blas.c), NULL where it uses the linked one */
} ax_blas_functions;

/* The BLAS in use: the linked library's functions, or those of libaxon's
 * own copy of the OpenMP OpenBLAS where another build of OpenBLAS took its
 * name first (blas.c). Set before any libaxon function can run. */
extern ax_blas_functions ax_blas;

#endif
