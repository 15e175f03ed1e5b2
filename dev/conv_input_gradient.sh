#!/usr/bin/env bash
# dev/conv_input_gradient.sh [THREADS]: builds dev/conv_input_gradient.c against the
# library of build/ (cmake --build build --target axon_static first; oneDNN needed) and
# runs it: the float32 input gradient's direct kernel against oneDNN's, e.g.
# `dev/conv_input_gradient.sh 1,2` (docs/notes/conv.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${CONV_INPUT_GRADIENT_BENCH:-/tmp/conv_input_gradient}
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
# oneDNN where the library was configured with it (unused symbols cost nothing)
dnnl=$(sed -n 's/^AXON_ONEDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
[ -f "$dnnl" ] || dnnl=""
gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/conv_input_gradient.c \
    -o "$out" "$build/libaxon.a" $dnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
. dev/blas_core.sh # the CLI's OpenBLAS kernels for the layer path
"$out" "${1:-1,2}"
