#!/usr/bin/env bash
# dev/conv_onednn_vs_axon.sh: builds dev/conv_onednn_vs_axon.c against the
# library of build/ (cmake --build build --target axon_static first) and
# oneDNN (Debian's libdnnl-dev), then runs it: axon's convolution passes
# against oneDNN's, reorders included, 1 and 2 threads (docs/notes/conv.md).
# "axon" is whatever that library's convolution layer runs: to compare
# oneDNN with im2col + GEMM, point AXON_BUILD at a build configured with
# -DAXON_ONEDNN=OFF (AXON_BUILD=build-off dev/conv_onednn_vs_axon.sh); with
# oneDNN built in, its forward pass and input gradient are oneDNN's already.
# OPENBLAS_CORETYPE as the axon CLI sets it (dev/blas_core.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${CONV_ONEDNN_BENCH:-/tmp/conv_onednn_vs_axon}
[ -e /usr/include/oneapi/dnnl/dnnl.h ] || { echo "needs libdnnl-dev" >&2; exit 77; }
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/conv_onednn_vs_axon.c \
    -o "$out" "$build/libaxon.a" -ldnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
. dev/blas_core.sh
"$out"
