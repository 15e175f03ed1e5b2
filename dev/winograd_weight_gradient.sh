#!/usr/bin/env bash
# dev/winograd_weight_gradient.sh: builds dev/winograd_weight_gradient.c against
# the library of build/ (cmake --build build --target axon_static first) and
# runs it: a prototype of the weight gradient of LeNet's second layer by
# Winograd's F(5x5, 4x4) against axon's direct tiles (docs/notes/conv.md).
#   ROUNDS (7), CALLS (10).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${WINOGRAD_BENCH:-/tmp/winograd_weight_gradient}
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
gcc -std=c11 -D_GNU_SOURCE -O2 -mavx512f -mfma -fopenmp -Isrc -Iinclude dev/winograd_weight_gradient.c \
    -o "$out" "$build/libaxon.a" $(sed -n 's/^AXON_ONEDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt") "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
. dev/blas_core.sh
uptime
"$out"
uptime
