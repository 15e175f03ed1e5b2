#!/usr/bin/env bash
# valgrind.sh: runs the release build's test executables under valgrind
# memcheck (every invalid read or write, use of uninitialised memory, and
# every leak, definite or possible, fails) and reports each one's result.
# Not the shell-driven CLI tests (they would measure bash), not
# test_convergence (minutes natively, hours under valgrind), not the CUDA
# test (the driver is opaque to valgrind). tests/valgrind.supp silences only
# OpenMP's and OpenBLAS's own thread-pool allocations, which live until exit.
# Usage: bash scripts/valgrind.sh [BUILD_DIR (default build)] [TEST_NAME...]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
command -v valgrind >/dev/null || { echo "valgrind.sh: install valgrind (apt-get install valgrind)" >&2; exit 1; }
[ -d "$build/tests" ] || { echo "valgrind.sh: no $build/tests; build first (bash scripts/setup.sh)" >&2; exit 1; }
if [ $# -gt 0 ]; then names=("$@"); else
  names=()
  for t in "$build"/tests/test_*; do
    name=$(basename "$t")
    case $name in test_convergence|test_cuda_parity) continue ;; esac
    [ -x "$t" ] && names+=("$name")
  done
fi
mkdir -p "$build/valgrind"
logs=$(cd "$build/valgrind" && pwd)
suppressions=$PWD/tests/valgrind.supp
# Two threads: the parallel paths run (and are checked) without valgrind's
# serialised threads making each test take minutes.
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
# libjpeg-turbo's SIMD colour conversion and upsampling compute whole vectors
# over row padding libjpeg never initialises; memcheck cannot see that those
# lanes are discarded and reports the decoded pixels as uninitialised. Its
# plain C code path (same pixels) is what valgrind can check.
export JSIMD_FORCENONE=1
failed=0
start=$SECONDS
for name in "${names[@]}"; do
  t0=$SECONDS
  (cd "$build/tests" && valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible \
       --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes \
       --suppressions="$suppressions" --log-file="$logs/$name.log" \
       "./$name" >"$logs/$name.out" 2>&1)
  rc=$?
  case $rc in
    0) result="ok" ;;
    77) result="skipped" ;;
    99) result="VALGRIND ERRORS (see $logs/$name.log)"; failed=1 ;;
    *) result="FAILED rc=$rc (see $logs/$name.out)"; failed=1
       # A check that fails only here, with memcheck silent, is a numerical
       # difference: valgrind's CPU has no AVX-512, so other code paths run.
       grep -q "ERROR SUMMARY: 0 errors" "$logs/$name.log" && result="$result, memcheck clean" ;;
  esac
  printf '%-24s %-8s %4ds\n' "$name" "$result" $((SECONDS - t0))
done
echo "valgrind.sh: ${#names[@]} tests in $((SECONDS - start)) s: $([ $failed = 0 ] && echo clean || echo FAILURES)"
exit $failed
