#!/usr/bin/env bash
# dev/winograd_conv.sh: builds dev/winograd_conv.c against the library of
# build/ (cmake --build build --target axon_static first; oneDNN needed) and
# runs it: Winograd's F(4x4, 5x5) against oneDNN at LeNet's second
# convolution, forward and input gradient (docs/notes/conv.md).
#   ROUNDS (7), CALLS (10), BLOCK_TILES (36: tiles a thread transforms and
#   multiplies at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${WINOGRAD_BENCH:-/tmp/winograd_conv}
[ -e /usr/include/oneapi/dnnl/dnnl.h ] || { echo "needs libdnnl-dev" >&2; exit 77; }
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/winograd_conv.c \
    -o "$out" "$build/libaxon.a" -ldnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
. dev/blas_core.sh
uptime
"$out"
uptime
