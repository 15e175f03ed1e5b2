/* blas.c: binds libaxon to the OpenBLAS it was built for, the OpenMP build,
 * even where another build of OpenBLAS was loaded into the process first.
 *
 * Debian installs OpenBLAS's OpenMP and pthread builds under one soname,
 * libopenblas.so.0, and the dynamic loader satisfies a library's need for a
 * soname with any object of that soname already loaded. NumPy links the
 * pthread build (Debian's default libblas.so.3), so in a Python program that
 * imports NumPy (or scikit-learn, SciPy) before axon, libaxon ran on NumPy's
 * pthread OpenBLAS: its thread pool beside libgomp's, whose idle threads each
 * spin while the other's work, three threads on two cores. Issue 29: the
 * same fit (B1's MLP, Adam, 3 epochs, 2 threads) took 3.6 s with axon
 * imported first and 33-35 s with scikit-learn first, on this project's
 * loaded 2-core machine (docs/notes/python-sklearn.md).
 *
 * So when the OpenBLAS that libaxon's symbols were bound to is not an OpenMP
 * build, a constructor (run while libaxon is loaded, in the environment the
 * loader set: the package's OPENBLAS_CORETYPE) opens the OpenMP build by its
 * path, which the loader maps as a separate object since the path names
 * another file, privately (RTLD_LOCAL: nobody else binds to it), and every
 * BLAS call of libaxon goes through this table. One OpenMP runtime serves
 * both, as when axon is loaded first; NumPy keeps its own BLAS. Where the
 * path is missing or is not an OpenMP build, the linked functions stay. */
#include "backend/cpu/blas.h"

#include <dlfcn.h>
#include <string.h>

#if defined(AXON_BLAS_OPENBLAS)
void openblas_set_num_threads(int threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);
#define LINKED_SET_NUM_THREADS openblas_set_num_threads
#define LINKED_CORENAME openblas_get_corename
#define LINKED_CONFIG openblas_get_config
#else
#define LINKED_SET_NUM_THREADS NULL
#define LINKED_CORENAME NULL
#define LINKED_CONFIG NULL
#endif

ax_blas_functions ax_blas = {
    .sgemm = cblas_sgemm,
    .dgemm = cblas_dgemm,
    .set_num_threads = LINKED_SET_NUM_THREADS,
    .corename = LINKED_CORENAME,
    .config = LINKED_CONFIG,
    .own_copy = NULL,
};

#if defined(AXON_BLAS_OPENBLAS) && defined(AXON_BLAS_OPENMP_PATH)
/* dlsym's object pointer as a function pointer (POSIX guarantees it). */
static bool resolve(void *handle, const char *name, void *function_pointer)
{
    void *symbol = dlsym(handle, name);
    if (!symbol)
        return false;
    memcpy(function_pointer, &symbol, sizeof symbol);
    return true;
}

__attribute__((constructor)) static void bind_openmp_openblas(void)
{
    if (strstr(openblas_get_config(), "USE_OPENMP"))
        return; /* the usual case: the linked build is the OpenMP one */
    void *handle = dlopen(AXON_BLAS_OPENMP_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return;
    ax_blas_functions own = {.own_copy = AXON_BLAS_OPENMP_PATH};
    if (!resolve(handle, "cblas_sgemm", &own.sgemm) || !resolve(handle, "cblas_dgemm", &own.dgemm) ||
        !resolve(handle, "openblas_set_num_threads", &own.set_num_threads) ||
        !resolve(handle, "openblas_get_corename", &own.corename) ||
        !resolve(handle, "openblas_get_config", &own.config) || !strstr(own.config(), "USE_OPENMP")) {
        dlclose(handle);
        return;
    }
    ax_blas = own;
}
#endif
