#!/usr/bin/env bash
# coverage.sh: how much of axon the suite runs. Builds a --coverage Debug
# copy (CUDA off) in build-coverage/, zeroes its counters, runs its CTest
# suite (-j2) and prints, per folder of src/ and for tools/axon, the lines
# and branches run against the targets of docs/testing.md ("Coverage"),
# each marked met or unmet. Run on demand, not in CI.
#
# usage: bash scripts/coverage.sh [CTEST ARGS...]   (e.g. -R 'cli|profile')
#        bash scripts/coverage.sh --report          (the table of the counters
#                                                    already there: no build, no run)
#   AXON_COVERAGE_DIR    the build folder (default: build-coverage)
#   AXON_COVERAGE_JOBS   build jobs (default: 2; ctest always runs -j2)
#   AXON_COVERAGE_ADD    gcovr JSON files (space-separated) whose counts are added:
#                        code another CPU runs (docs/testing.md: the AVX512_BF16
#                        kernel's counts from a lent machine, dev/gpu_run.sh covbf16)
#
# gcovr comes from Debian (`bash scripts/apt_install.sh coverage gcovr`);
# without it the script says so and stops before building anything.
# Exit status: that of the suite (a failing suite's counts are suspect; the
# table is printed either way), 2 for a bad call or a missing gcovr.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${AXON_COVERAGE_DIR:-build-coverage}
jobs=${AXON_COVERAGE_JOBS:-2}

if ! command -v gcovr > /dev/null; then
    echo "coverage: gcovr is not installed; install it with" >&2
    echo "  bash scripts/apt_install.sh coverage gcovr" >&2
    exit 2
fi

report_only=0
if [ "${1:-}" = "--report" ]; then
    report_only=1
    shift
    [ $# -eq 0 ] || { echo "coverage: --report takes no other argument" >&2; exit 2; }
    [ -d "$build" ] || { echo "coverage: no $build/ to report on; run without --report first" >&2; exit 2; }
fi

suite_status=0
mkdir -p "$build"
logs=$build/coverage-logs
mkdir -p "$logs"
if [ "$report_only" -eq 0 ]; then
    # Debug: no inlining or folded branches, so a line counted is a line of
    # the source. The plugins (MODULE) and libaxon (SHARED) link libgcov too.
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DAXON_CUDA=OFF -DAXON_WERROR=ON \
        -DAXON_TEST_PIP=OFF -DCMAKE_C_FLAGS=--coverage \
        -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
        -DCMAKE_MODULE_LINKER_FLAGS=--coverage > "$logs/configure.log" 2>&1 \
        || { echo "coverage: cmake failed (see $logs/configure.log)" >&2; exit 1; }
    cmake --build "$build" -j "$jobs" > "$logs/build.log" 2>&1 \
        || { echo "coverage: the build failed (see $logs/build.log)" >&2; exit 1; }
    # Counters of an earlier run would add to this one's.
    find "$build" -name '*.gcda' -delete
    ctest --test-dir "$build" -j2 --output-on-failure "$@" > "$logs/ctest.log" 2>&1
    suite_status=$?
    grep -E '^[0-9]+% tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Not Run' "$logs/ctest.log"
    [ "$suite_status" -eq 0 ] || echo "coverage: the suite failed (see $logs/ctest.log); its counts are of a failing run"
fi

# Per-file counts from gcovr, summed per folder. gcov runs once per object
# file; a source compiled into several targets (clock.c into each plugin)
# is merged by gcovr.
summary=$build/coverage-summary.json
here=$build/coverage-here.json
gcovr --root "$root" --filter "$root/src/" --filter "$root/tools/axon/" \
      --exclude "$root/src/backend/cuda/" -j "$jobs" \
      --json "$here" "$build" > /dev/null 2> "$logs/gcovr.log" \
    || { echo "coverage: gcovr failed (see $logs/gcovr.log)" >&2; exit 1; }
tracefiles=(--add-tracefile "$here")
for extra in ${AXON_COVERAGE_ADD:-}; do
    [ -f "$extra" ] || { echo "coverage: AXON_COVERAGE_ADD names $extra, which is not a file" >&2; exit 2; }
    tracefiles+=(--add-tracefile "$extra")
    echo "coverage: adding the counts of $extra"
done
gcovr --root "$root" "${tracefiles[@]}" --json-summary "$summary" > /dev/null 2>> "$logs/gcovr.log" \
    || { echo "coverage: gcovr failed to merge (see $logs/gcovr.log)" >&2; exit 1; }

python3 - "$summary" <<'EOF'
import json, sys
# folder, label, lines %, branches % (the targets of issue 32)
folders = [
    ("src/core/", "src/core", 92, 80),
    ("src/optim/", "src/optim", 92, 80),
    ("src/data/", "src/data", 92, 80),
    ("src/io/", "src/io", 92, 80),
    ("src/base/", "src/base", 92, 80),
    ("src/backend/cpu/", "src/backend/cpu", 92, 80),
    ("src/backend/opencl/", "src/backend/opencl (host)", 92, 80),
    ("src/backend/", "src/backend (registry)", 92, 80),
    ("src/prep/", "src/prep", 92, 80),
    ("src/stats/", "src/stats", 92, 80),
    ("src/parallel/", "src/parallel", 92, 80),
    ("src/perf/", "src/perf", 92, 80),
    ("tools/axon/", "tools/axon", 85, 75),
]
files = json.load(open(sys.argv[1]))["files"]
sums = {label: [0, 0, 0, 0] for _, label, _, _ in folders}
for f in files:
    # the longest folder that holds the file (src/backend/ is what the others leave)
    owner = max((p for p, _, _, _ in folders if f["filename"].startswith(p)), key=len, default=None)
    if owner is None:
        continue
    label = next(l for p, l, _, _ in folders if p == owner)
    s = sums[label]
    s[0] += f["line_covered"]; s[1] += f["line_total"]
    s[2] += f["branch_covered"]; s[3] += f["branch_total"]

def pct(a, b):
    return 100.0 * a / b if b else 100.0

print("%-26s %15s %7s %17s %7s  %s" % ("folder", "lines", "%", "branches", "%", "target (lines/branches)"))
total = [0, 0, 0, 0]
unmet = 0
for _, label, line_target, branch_target in folders:
    s = sums[label]
    if s[1] == 0:
        print("%-26s %s" % (label, "not built (no counters)"))
        continue
    total = [a + b for a, b in zip(total, s)]
    lp, bp = pct(s[0], s[1]), pct(s[2], s[3])
    met = lp >= line_target and bp >= branch_target
    unmet += not met
    print("%-26s %7d/%-7d %6.1f %8d/%-8d %6.1f  %d/%d %s" % (
        label, s[0], s[1], lp, s[2], s[3], bp, line_target, branch_target,
        "met" if met else "UNMET"))
print("%-26s %7d/%-7d %6.1f %8d/%-8d %6.1f" % (
    "all", total[0], total[1], pct(total[0], total[1]), total[2], total[3], pct(total[2], total[3])))
print("coverage: %d folder(s) below target" % unmet)
EOF
exit "$suite_status"
