#!/usr/bin/env bash
# blas_compare.sh: builds axon against each BLAS (OpenBLAS OpenMP and pthread
# builds, BLIS) and times the training workloads of axon bench b1a (the
# Fashion-MNIST MLP 784-128-128-10, batch 128) and b2 (TMVA's synthetic
# regression, 5 x 256 tanh, batch 1024), REPEAT times each,
# alternating, with OPENBLAS_CORETYPE unset. Prints seconds per epoch and
# GFLOP/s. Run it on an idle machine: two threads stall when a core is busy.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-2}
for blas in openblas openblas-pthread blis; do
  cmake -S . -B "build-$blas" -DCMAKE_BUILD_TYPE=Release -DAXON_BLAS=$blas >/dev/null
  cmake --build "build-$blas" -j 2 --target axon >/dev/null
done
b1="--data fashion-mnist --layers 128:relu,128:relu,10:softmax --epochs 2 --batch 128"
b2="--data synth:linear --layers 256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1:identity --batch 1024 --epochs 1 --lr 0.001"
for i in $(seq "$REPEAT"); do
  for blas in openblas openblas-pthread blis; do
    # BLIS 0.9 does not know this CPU's family: 0 selects its skx (AVX-512) kernels.
    for w in b1 b2; do
      line=$(env -u OPENBLAS_CORETYPE BLIS_ARCH_TYPE=0 "build-$blas/axon" train ${!w} --threads "$THREADS" 2>&1 | grep '^epoch' | tail -1)
      echo "$blas $w $line"
    done
  done
done
