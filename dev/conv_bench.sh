#!/usr/bin/env bash
# dev/conv_bench.sh: builds dev/conv_bench.c with axon's image kernels and
# runs it with OpenBLAS's AVX-512 kernels (as axon's command line sets them),
# then dev/conv_onednn.cpp (oneDNN's convolutions at the same shapes).
set -euo pipefail
cd "$(dirname "$0")/.."
L=/usr/lib/x86_64-linux-gnu
out=${CONV_BENCH:-/tmp/conv_bench}
gcc -std=c11 -D_GNU_SOURCE -O3 -march=x86-64-v3 -fopenmp -Isrc -Iinclude \
    -I/usr/include/x86_64-linux-gnu/openblas-openmp dev/conv_bench.c src/backend/cpu/cpu_image.c \
    -o "$out" -L$L/openblas-openmp -Wl,-rpath,$L/openblas-openmp -lopenblas -lm
uptime
core=SkylakeX; grep -q avx512_bf16 /proc/cpuinfo && core=Cooperlake
OPENBLAS_CORETYPE=$core "$out"
# oneDNN's own convolutions at the same shapes (libdnnl-dev: not a build dependency)
if [ -e /usr/include/oneapi/dnnl/dnnl.hpp ]; then
    g++ -std=c++17 -O2 dev/conv_onednn.cpp -o "$out-onednn" -ldnnl
    for threads in 1 2; do echo "($threads threads)"; OMP_NUM_THREADS=$threads "$out-onednn"; done
fi
uptime
