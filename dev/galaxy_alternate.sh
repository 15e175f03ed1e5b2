#!/usr/bin/env bash
# galaxy_alternate.sh: axon bench galaxy-cg (the galaxy classifier 1024-8-3,
# 300 full-batch CG iterations) for two
# axon builds and the NumPy + fmin_cg peer, alternating in rounds so that a
# changing load hits all of them alike (docs/notes/galaxy.md, "Measured").
# usage: dev/galaxy_alternate.sh NEW_AXON OLD_AXON [ROUNDS]
#   e.g. an old build from git archive HEAD | tar -x -C /tmp/old, built with cmake
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 NEW_AXON OLD_AXON [ROUNDS]" >&2; exit 2; }
new=$1 old=$2 rounds=${3:-3}
# Users' machines do not preset OPENBLAS_CORETYPE; this workplace sets it to Haswell,
# which keeps OpenBLAS (NumPy's BLAS, and axon's for other shapes) off its AVX-512
# kernels and made NumPy up to 1.6x slower here.
unset OPENBLAS_CORETYPE
one() { # axon threads precision -> "SECONDS s  final cost COST"
  "$1" bench galaxy-cg --threads "$2" --precision "$3" --repeat 1 2>&1 |
    sed -nE 's/.*run 1: .*\(([0-9.]+) s total\), loss ([0-9.]+).*/\1 s  final cost \2/p'
}
for round in $(seq "$rounds"); do
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
  for p in f32 f64; do
    echo "round $round after  t1 $p $(one "$new" 1 $p)"
    echo "round $round before t1 $p $(one "$old" 1 $p)"
  done
  /usr/bin/python3 bench/peers/galaxy_scipy.py --mode both --threads 1 | sed "s/^/round $round t1 /"
  echo "round $round after  t2 f32 $(one "$new" 2 f32)"
  echo "round $round before t2 f32 $(one "$old" 2 f32)"
  /usr/bin/python3 bench/peers/galaxy_scipy.py --mode both | sed "s/^/round $round t2 /"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
