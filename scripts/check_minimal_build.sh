#!/usr/bin/env bash
# check_minimal_build.sh AXON: checks an axon built with AXON_PREP=OFF and
# AXON_STATS=OFF (scripts/test.sh's minimal build): it links no libarchive,
# libjpeg or libpng, `axon info` (text and --json) says prep and stats are
# not built, and `axon prep` refuses with exit status 1, naming the CMake
# option. A second or so; names what failed.
set -uo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: bash scripts/check_minimal_build.sh /path/to/axon (built with AXON_PREP=OFF AXON_STATS=OFF)" >&2
    exit 2
fi
axon=$1
problems=0
fail() { echo "check_minimal_build: $*" >&2; problems=$((problems + 1)); }

linked=$(ldd "$axon" | grep -E 'libarchive|libjpeg|libpng')
[ -z "$linked" ] || fail "$axon links an image library: $linked"
info=$("$axon" info) || fail "axon info failed"
grep -q '^  prep          no' <<< "$info" || fail "axon info does not say that prep is not built"
grep -q '^  stats         no' <<< "$info" || fail "axon info does not say that stats are not built"
json=$("$axon" info --json) || fail "axon info --json failed"
grep -q '"prep":false,"stats":false' <<< "$json" || fail "axon info --json: no \"prep\":false,\"stats\":false"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$axon" prep --input "$work" --out "$work/batches" > /dev/null 2> "$work/err"
status=$?
[ "$status" -eq 1 ] || fail "axon prep exited with $status, not 1"
grep -qF -- "-DAXON_PREP=ON" "$work/err" || fail "axon prep's refusal does not name -DAXON_PREP=ON: $(cat "$work/err")"
[ ! -e "$work/batches" ] || fail "axon prep made its output folder"

if [ "$problems" -eq 0 ]; then
    echo "check_minimal_build: no image libraries linked; info and prep's refusal say what is left out: ok"
fi
[ "$problems" -eq 0 ]
