#!/usr/bin/env bash
# build.sh DIR [cmake --build options...]: builds DIR, printing only the
# compiler's errors and warnings; a failed build prints its log's end and
# fails (a broken build must never leave stale binaries to be tested).
set -uo pipefail
dir=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmake --build "$dir" -j "$(nproc)" "$@" > "$log" 2>&1
status=$?
grep -E "error:|warning:" "$log"
if [ $status -ne 0 ]; then
    echo "axon: the build of $dir failed (exit status $status); the end of its log:" >&2
    tail -n 40 "$log" >&2
    exit 1
fi
