#!/usr/bin/env bash
# dev/amx_conv_forward.sh: builds dev/amx_conv_forward.c against the library
# of build/ (cmake --build build --target axon_static first) and runs it on a
# CPU with AMX: a direct bf16 forward pass on AMX's tiles against float32's
# Winograd at LeNet's second layer, and TDPBF16PS's own rate (docs/notes/conv.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${AMX_CONV_BENCH:-/tmp/amx_conv_forward}
[ -e /usr/include/oneapi/dnnl/dnnl.h ] || { echo "needs libdnnl-dev" >&2; exit 77; }
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/amx_conv_forward.c \
    -o "$out" "$build/libaxon.a" -ldnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
    $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
. dev/blas_core.sh
uptime
"$out"
uptime
