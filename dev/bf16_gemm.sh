#!/usr/bin/env bash
# dev/bf16_gemm.sh [rounds]: builds dev/bf16_gemm.c (axon's bf16 GEMM,
# OpenBLAS sgemm, oneDNN's bf16 matmul, libxsmm's bf16 kernels) and runs it
# with the CLI's OpenBLAS kernels (dev/blas_core.sh). Needs
# libdnnl-dev and libxsmm-dev (not build dependencies of axon).
set -euo pipefail
cd "$(dirname "$0")/.."
L=/usr/lib/x86_64-linux-gnu
out=${BF16_GEMM_BENCH:-/tmp/bf16_gemm}
gcc -std=c11 -D_GNU_SOURCE -O3 -march=x86-64-v3 -fopenmp -Isrc -Iinclude \
    -I/usr/include/x86_64-linux-gnu/openblas-openmp dev/bf16_gemm.c -o "$out" \
    -L$L/openblas-openmp -Wl,-rpath,$L/openblas-openmp -lopenblas -ldnnl \
    /usr/lib/libxsmmext.a /usr/lib/libxsmm.a -lpthread -lrt -ldl -lm
uptime
. dev/blas_core.sh # the CLI's OpenBLAS kernels
GOMP_SPINCOUNT=1000 "$out" "${1:-7}"
uptime
