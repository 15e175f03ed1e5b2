#!/usr/bin/env bash
# dev/dense_gemm_libraries.sh: builds dev/dense_gemm_libraries.c against the
# library of build/ (cmake --build build --target axon_static first), oneDNN
# (libdnnl-dev) and BLIS (libblis-openmp-dev, loaded by the program itself)
# and runs it: axon's float32 GEMM against OpenBLAS, oneDNN's dnnl_sgemm and
# BLIS at the dense layers' shapes of LeNet, B1 and B2, 1 and 2 threads,
# and each one's bits on 1-4 threads (docs/notes/conv.md, "The dense
# layer's GEMMs"). OPENBLAS_CORETYPE is the core the axon CLI picks
# (dev/blas_core.sh): unset, OpenBLAS 0.3.21 took a 2-core AMX Xeon for a
# Prescott and ran 5x slower than the CLI does.
#   ROUNDS=7 (default) rounds; SHAPES=lenet runs only shapes whose name
#   contains that text; BITS_THREADS=64 compares bits up to 64 threads
#   (default 4); TIMED=0 only compares bits; ONEDNN_K_BLOCK, BLIS_K_BLOCK
#   the blocks of k of onednn_kb (512) and blis_kb (256).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${DENSE_GEMM_BENCH:-/tmp/dense_gemm_libraries}
[ -e /usr/include/oneapi/dnnl/dnnl.h ] || { echo "needs libdnnl-dev" >&2; exit 77; }
[ -e /usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4 ] || { echo "needs libblis-openmp-dev" >&2; exit 77; }
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/dense_gemm_libraries.c \
    -o "$out" "$build/libaxon.a" -ldnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
uptime
# GOMP_SPINCOUNT as the axon command sets it (docs/notes/blas-choice.md)
. dev/blas_core.sh
GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000} "$out"
uptime
