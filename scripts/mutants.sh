#!/usr/bin/env bash
# mutants.sh: applies each mutant of tests/mutants.txt alone to a scratch
# copy of the repository, rebuilds there and runs only the tests listed for
# it; prints "caught" (one of them failed), "SURVIVED" (all passed) or
# "no build" (the mutant does not compile: it proves nothing) per mutant and
# a summary. Run on demand, not in CI (docs/testing.md, "Mutants").
#
# usage: bash scripts/mutants.sh [ID ...]     (every mutant without IDs)
#   AXON_MUTANTS_DIR   the scratch folder (default: a new /tmp/axon-mutants-XXXXXX,
#                      kept for a rerun: give it again to reuse its build)
#   AXON_MUTANTS_JOBS  build jobs (default: nproc)
#
# The copy is HEAD's tree (git archive; refreshed file by file on a rerun),
# so uncommitted edits are not in it.
# Its build is a release build without CUDA, OpenCL and MPI (the mutants are
# of CPU code); the tests first run unmutated, and a test that fails there
# makes every mutant listing it unjudged.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
list=$root/tests/mutants.txt
jobs=${AXON_MUTANTS_JOBS:-$(nproc)}
scratch=${AXON_MUTANTS_DIR:-}
if [ -z "$scratch" ]; then
    scratch=$(mktemp -d /tmp/axon-mutants-XXXXXX)
fi
mkdir -p "$scratch"
echo "mutants: scratch copy in $scratch (HEAD $(git rev-parse --short HEAD))"
# HEAD's files into the copy; on a rerun only the files that changed are
# copied (so that they, and only they, are newer than the build's objects).
rm -rf "$scratch/.head"
mkdir -p "$scratch/.head"
git archive HEAD | tar -x -C "$scratch/.head"
(cd "$scratch/.head" && find . -type f) | while read -r f; do
    if ! cmp -s "$scratch/.head/$f" "$scratch/$f"; then
        mkdir -p "$(dirname "$scratch/$f")"
        cp "$scratch/.head/$f" "$scratch/$f"
    fi
done
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -DAXON_CUDA=OFF \
    -DAXON_OPENCL=OFF -DAXON_MPI=OFF -DAXON_SHARED_DIR="$root/../shared" >/dev/null

# The mutants to run: ID, file, line, from, to, tests (tab-separated).
table=$scratch/mutants.tsv
python3 - "$list" "$@" > "$table" <<'EOF'
import sys
wanted = set(sys.argv[2:])
for number, line in enumerate(open(sys.argv[1]), 1):
    if not line.strip() or line.startswith("#"):
        continue
    fields = [f.strip() for f in line.rstrip("\n").split(" ;; ")]
    if len(fields) != 5 or ":" not in fields[1]:
        sys.exit("mutants.txt:%d: not ID ;; FILE:LINE ;; FROM ;; TO ;; TESTS" % number)
    ident, where, before, after, tests = fields
    path, at = where.rsplit(":", 1)
    if not wanted or ident in wanted:
        print("\t".join([ident, path, at, before, after, tests]))
EOF
[ -s "$table" ] || { echo "mutants: none selected" >&2; exit 2; }

# Applies one mutant: FILE LINE FROM TO; prints the line it changed.
apply_mutant() {
    python3 - "$scratch/$1" "$2" "$3" "$4" <<'EOF'
import sys
path, line, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = open(path).read().split("\n")
candidates = [i for i in range(max(0, line - 41), min(len(lines), line + 40)) if before in lines[i]]
candidates.sort(key=lambda i: abs(i + 1 - line))
if not candidates:
    # moved further: the one line of the file that holds it, if only one does
    anywhere = [i for i in range(len(lines)) if before in lines[i]]
    if len(anywhere) == 1:
        candidates = anywhere
        print("mutants: %s:%d: found at line %d: update tests/mutants.txt" % (path, line, anywhere[0] + 1),
              file=sys.stderr)
if not candidates or lines[candidates[0]].count(before) != 1:
    sys.exit("mutants: %s:%d: %r not found near that line" % (path, line, before))
i = candidates[0]
lines[i] = lines[i].replace(before, after)
open(path, "w").write("\n".join(lines))
print(i + 1)
EOF
}

# Build targets: the command line and every test executable named (a test
# of a script needs only axon).
targets_of() {
    local t out=(axon)
    for t in $1; do
        [[ $t == test_* ]] && out+=("$t")
    done
    echo "${out[@]}"
}
# a test's executable names its CTest tests too when registered in parts or
# modes (test_conv_weight_gradient_entries, test_tiny_gemm_generic)
regex_of() { echo "^($(echo "$1" | tr ' ' '|'))(_[a-z0-9_]+)?\$"; }

# The unmutated tests first.
all_tests=$(cut -f6 "$table" | tr ' ' '\n' | sort -u | tr '\n' ' ')
echo "mutants: building and running the unmutated tests: $all_tests"
# shellcheck disable=SC2046
cmake --build "$scratch/build" -j "$jobs" --target $(targets_of "$all_tests") >"$scratch/build.log" 2>&1 ||
    { tail -30 "$scratch/build.log"; echo "mutants: the unmutated copy does not build" >&2; exit 1; }
baseline_failed=""
if ! ctest --test-dir "$scratch/build" -R "$(regex_of "$all_tests")" -j "$jobs" >"$scratch/baseline.log" 2>&1; then
    baseline_failed=$(sed -n 's/^[[:space:]]*[0-9]* - \([A-Za-z0-9_]*\) (Failed.*/\1/p' "$scratch/baseline.log" | tr '\n' ' ')
    echo "mutants: failing without any mutant (their mutants are not judged): $baseline_failed"
fi

caught=0 survived=0 unbuilt=0 unjudged=0
results=$scratch/results.txt
: > "$results"
while IFS=$'\t' read -r id file line before after tests; do
    start=$(date +%s)
    cp "$scratch/$file" "$scratch/mutant.orig"
    verdict=""
    if ! at=$(apply_mutant "$file" "$line" "$before" "$after"); then
        verdict="not applied"
        at=$line
    fi
    for t in $tests; do
        [[ " $baseline_failed " == *" $t "* ]] && verdict="unjudged ($t fails unmutated)"
    done
    failed=""
    if [ -z "$verdict" ]; then
        # shellcheck disable=SC2046
        if ! cmake --build "$scratch/build" -j "$jobs" --target $(targets_of "$tests") >"$scratch/build.log" 2>&1; then
            verdict="no build"
        elif ctest --test-dir "$scratch/build" -R "$(regex_of "$tests")" -j "$jobs" >"$scratch/test.log" 2>&1; then
            verdict="SURVIVED"
        else
            failed=$(sed -n 's/^[[:space:]]*[0-9]* - \([A-Za-z0-9_]*\) (.*/\1/p' "$scratch/test.log" | tr '\n' ' ')
            verdict="caught"
        fi
    fi
    cp "$scratch/mutant.orig" "$scratch/$file"
    case $verdict in
        caught) caught=$((caught + 1)) ;;
        SURVIVED) survived=$((survived + 1)) ;;
        "no build") unbuilt=$((unbuilt + 1)) ;;
        *) unjudged=$((unjudged + 1)) ;;
    esac
    printf '%-4s %-44s %-9s %4ds  %s\n' "$id" "$file:$at" "$verdict" "$(($(date +%s) - start))" \
        "${failed:-$tests}" | tee -a "$results"
done < "$table"
# Leave the copy built as HEAD is.
# shellcheck disable=SC2046
cmake --build "$scratch/build" -j "$jobs" --target $(targets_of "$all_tests") >"$scratch/build.log" 2>&1 || true
echo "mutants: $caught caught, $survived survived, $unbuilt did not build, $unjudged not judged" \
    "(of $(wc -l < "$table")); results in $results"
[ "$survived" -eq 0 ] && [ "$unbuilt" -eq 0 ] && [ "$unjudged" -eq 0 ]
