#!/usr/bin/env bash
# valgrind.sh: runs the release build's test executables under valgrind
# memcheck (every invalid read or write, use of uninitialised memory, and
# every leak, definite or possible, fails) and reports each one's result.
# Not the shell-driven CLI tests (they would measure bash), not
# test_convergence (minutes natively, hours under valgrind), not the CUDA
# test (the driver is opaque to valgrind). tests/valgrind.supp silences only
# OpenMP's and OpenBLAS's own thread-pool allocations, which live until exit.
# Tests run two at a time (VALGRIND_JOBS, default the number of cores):
# valgrind runs a process's threads one at a time, so a second process is
# what uses a second core. Each test gets at most VALGRIND_TIMEOUT seconds
# (default 900), so a test too slow for valgrind fails rather than hangs.
# scripts/test.sh runs the fast ones (its fourth stage); all of them take
# about half an hour, test_cg most of it.
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
    case $name in test_convergence|test_backend_ops) continue ;; esac
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
jobs=${VALGRIND_JOBS:-$(nproc)}
limit=${VALGRIND_TIMEOUT:-900}
# One test: its line of the report goes to $logs/$name.result.
run_one() {
  local name=$1 t0=$SECONDS rc result
  (cd "$build/tests" && timeout "$limit" valgrind --error-exitcode=99 --leak-check=full \
       --show-leak-kinds=definite,indirect,possible \
       --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes \
       --suppressions="$suppressions" --log-file="$logs/$name.log" \
       "./$name" >"$logs/$name.out" 2>&1)
  rc=$?
  case $rc in
    0) result="ok" ;;
    77) result="skipped" ;;
    99) result="VALGRIND ERRORS (see $logs/$name.log)" ;;
    124) result="TIMED OUT after ${limit}s (see $logs/$name.out)" ;;
    *) result="FAILED rc=$rc (see $logs/$name.out)"
       # A check that fails only here, with memcheck silent, is a numerical
       # difference: valgrind's CPU has no AVX-512, so other code paths run.
       grep -q "ERROR SUMMARY: 0 errors" "$logs/$name.log" && result="$result, memcheck clean" ;;
  esac
  printf '%-24s %-8s %4ds\n' "$name" "$result" $((SECONDS - t0)) >"$logs/$name.result"
  cat "$logs/$name.result"
}
start=$SECONDS
for name in "${names[@]}"; do
  rm -f "$logs/$name.result"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_one "$name" &
done
wait
failed=0
for name in "${names[@]}"; do
  grep -qE "^$name +(ok|skipped) " "$logs/$name.result" 2>/dev/null || failed=1
done
echo "valgrind.sh: ${#names[@]} tests in $((SECONDS - start)) s ($jobs at a time): $([ $failed = 0 ] && echo clean || echo FAILURES)"
exit $failed
