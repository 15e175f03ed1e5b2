#!/usr/bin/env bash
# run_fuzz.sh FUZZER CORPUS WORK SECONDS: runs one libFuzzer target for a
# bounded time on a copy of its committed corpus (so the committed one is not
# changed), failing on any crash, sanitizer report, leak, hang (10 s per
# input) or allocation above 2 GB. A failing input is left in WORK as
# crash-*, leak-*, timeout-* or oom-*: add it to the corpus once fixed.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 seconds=$4
rm -rf "$work"
mkdir -p "$work/corpus"
if [ -d "$corpus" ]; then cp -r "$corpus/." "$work/corpus/"; fi
# One thread: the harness is what is being tested, not the thread pool.
export OMP_NUM_THREADS=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
          -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" 2>"$work/log" \
  || { tail -n 60 "$work/log"; echo "run_fuzz.sh: $(basename "$fuzzer") failed; inputs in $work" >&2; exit 1; }
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$work/log" | tail -n 3
