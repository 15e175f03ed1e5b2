#!/usr/bin/env bash
# dev/pool_passes.sh [THREADS [f32|f64 [ROUNDS]]]: builds dev/pool_passes.c against the
# library of build/ (cmake --build build --target axon_static first) and runs ROUNDS
# rounds (default 5) of LeNet's pooling, derivative + bias gradient and bias +
# activation passes, e.g. `dev/pool_passes.sh 1,2,3 f32`. With POOL_PASSES_BASE set
# to another libaxon.a (say main's), a second program is built against it and the
# rounds alternate the two; printed: per pass and thread count the median ms and
# GB/s of each, and the median of the per-round ratios (> 1: build/ is faster).
# The ideal figures: dev/bandwidth.c's copy column.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AXON_BUILD:-build}
out=${POOL_PASSES_BENCH:-/tmp/pool_passes}
blas=$(sed -n 's/^AXON_BLAS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
dnnl=$(sed -n 's/^AXON_ONEDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
[ -f "$dnnl" ] || dnnl=""
link() { # link LIBRARY PROGRAM
    gcc -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -Iinclude dev/pool_passes.c \
        -o "$2" "$1" $dnnl "$blas" -Wl,-rpath,"$(dirname "$blas")" \
        $(pkg-config --libs libarchive libjpeg libpng 2>/dev/null) -lz -lm -ldl
}
link "$build/libaxon.a" "$out"
base=${POOL_PASSES_BASE:-}
[ -z "$base" ] || link "$base" "$out-base"
threads=${1:-1,2}
precision=${2:-f32}
rounds=${3:-5}
log=$(mktemp)
uptime
for round in $(seq "$rounds"); do
    "$out" "$threads" "$precision" | sed "s/^/new $round /" >>"$log"
    [ -z "$base" ] || "$out-base" "$threads" "$precision" | sed "s/^/base $round /" >>"$log"
done
uptime
if grep -q DIFFERENT "$log"; then echo "BITS DIFFER ACROSS THREAD COUNTS:"; grep DIFFERENT "$log"; fi
if [ -n "$base" ]; then # the outputs' hashes of the two builds, round 1
    if diff <(awk '$1 == "new" && $2 == 1 {print $4, $6, $14}' "$log") \
            <(awk '$1 == "base" && $2 == 1 {print $4, $6, $14}' "$log") >/dev/null; then
        echo "outputs: the same bits as the base build's, every pass and thread count"
    else
        echo "OUTPUTS DIFFER FROM THE BASE BUILD'S:"
        diff <(awk '$1 == "new" && $2 == 1 {print $4, $6, $14}' "$log") \
             <(awk '$1 == "base" && $2 == 1 {print $4, $6, $14}' "$log") || true
    fi
fi
# fields: who round "pass" name "threads" t "ms" ms "gbs" gbs "bits" same
awk -v rounds="$rounds" '
function median(list, n,    i, j, t, a) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    key = $4 " " $6
    if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
    ms[$1, key] = ms[$1, key] " " $8; gbs[$1, key] = gbs[$1, key] " " $10
    time[$1, key, $2] = $8
}
END {
    printf "%-34s %3s %9s %7s", "pass (best of calls, median of rounds)", "thr", "new ms", "GB/s"
    if (("base", order[1]) in ms) printf " %9s %7s %7s", "base ms", "GB/s", "ratio"
    printf "\n"
    for (k = 1; k <= keys; k++) {
        key = order[k]; split(key, part, " ")
        printf "%-34s %3d %9.4f %7.1f", part[1], part[2], median(ms["new", key]), median(gbs["new", key])
        if (("base", key) in ms) {
            ratios = ""
            for (r = 1; r <= rounds; r++) ratios = ratios " " time["base", key, r] / time["new", key, r]
            printf " %9.4f %7.1f %7.2f", median(ms["base", key]), median(gbs["base", key]), median(ratios)
        }
        printf "\n"
    }
}' "$log"
rm -f "$log"
