#!/usr/bin/env bash
# plot_faults.sh: `axon plot` when gnuplot misbehaves, and its option
# refusals, with stand-in gnuplot programs first on PATH (no gnuplot needed).
#
#   bash tests/plot_faults.sh /path/to/axon WORKDIR
#
# Each stand-in is a small shell script doing one thing wrong (or right):
# exiting 3 with a message, killed by a signal, drawing nothing, drawing a
# 7-byte file, drawing a GIF, not executable. For each, axon plot exits 1
# with its exact message (gnuplot's own last words after it), leaves an
# existing --out as it was and no temporary folder behind. A stand-in that
# draws a fake PNG shows what axon does with a picture: --out holds its
# bytes exactly, the script gnuplot was given names the picture and the
# title (the metrics file's name by default; a quote doubled as gnuplot
# wants), carries every value exactly (1/3 in the 16 digits that give it
# back, as Python's repr), asks for whole-epoch tics only up to 20 epochs.
# Then TMPDIR too long, missing or
# empty; --out and --script in a missing folder; the metrics file given
# twice or not at all; --size in each wrong form; a file of nulls only.
# Prints each check; exits 1 if any failed.
set -u

. "$(dirname "$0")/cli_check.sh"
cli_check_begin plot_faults.sh "$@"

# check NAME STATUS TEXT... -- COMMAND: refuse_keeping_picture (cli_check.sh), the
# temporaries looked for under tmp.
plot_temporaries="tmp/axon-plot.*"
check() { refuse_keeping_picture "$@"; }

mkdir -p tmp
export TMPDIR="$PWD/tmp"
printf '%s\n' '{"epoch":1,"train_loss":0.5,"val_loss":null,"test_loss":0.4,"test_accuracy":0.8}' \
    '{"epoch":2,"train_loss":0.33333333333333331,"val_loss":null,"test_loss":0.3,"test_accuracy":0.9}' \
    > good.jsonl

# A stand-in gnuplot in its own folder: bin-NAME/gnuplot running BODY, with
# $1 the script axon wrote and $out the picture that script asks for.
stand_in() {
    mkdir -p "bin-$1"
    printf '#!/usr/bin/env bash\nout=$(sed -n "s/^set output '"'"'\\(.*\\)'"'"'$/\\1/p" "$1")\n%s\n' "$2" \
        > "bin-$1/gnuplot"
    chmod +x "bin-$1/gnuplot"
}
stand_in fails 'echo "plot.gp line 9: undefined variable: x" >&2; printf "no newline at the end" >&2; exit 3'
stand_in killed 'echo "about to be killed" >&2; kill -KILL $$'
stand_in silent 'exit 0'
stand_in short 'printf "\211PNG\r\n\032" > "$out"' # 7 bytes: the signature cut short
stand_in gif 'printf "GIF89a, a picture of another kind" > "$out"'
stand_in good 'cp "$1" "$OLDPWD_SCRIPT"; printf "\211PNG\r\n\032\nfake picture body" > "$out"'
mkdir -p bin-noexec
printf '#!/bin/sh\nexit 0\n' > bin-noexec/gnuplot
chmod -x bin-noexec/gnuplot
export OLDPWD_SCRIPT="$PWD/given.gp"
with() { local bin=$1; shift; PATH="$PWD/bin-$bin:$PATH" "$@"; }

# ------------------------------------------------ gnuplot misbehaving
check "gnuplot exits 3: its status and its last words" 1 \
    "axon: gnuplot failed (exit status 3); it said:" "plot.gp line 9: undefined variable: x" \
    "no newline at the end" -- with fails "$AXON" plot good.jsonl --out keep.png
check "gnuplot killed by a signal" 1 "axon: gnuplot was killed by signal 9; it said:" \
    "about to be killed" -- with killed "$AXON" plot good.jsonl --out keep.png
check "gnuplot draws nothing" 1 "axon: gnuplot wrote no picture (is its pngcairo terminal there?" \
    -- with silent "$AXON" plot good.jsonl --out keep.png
check "gnuplot draws 7 bytes (the PNG signature cut short)" 1 "axon: gnuplot wrote no picture" -- \
    with short "$AXON" plot good.jsonl --out keep.png
check "gnuplot draws a GIF" 1 "is not a whole PNG" -- with gif "$AXON" plot good.jsonl --out keep.png
check "gnuplot not executable" 1 "axon: cannot run gnuplot: Permission denied" -- \
    env PATH="$PWD/bin-noexec" "$AXON" plot good.jsonl --out keep.png

# ------------------------------------------------ what axon does with a picture
png_bytes() { printf '\211PNG\r\n\032\nfake picture body'; }
run with good "$AXON" plot good.jsonl --out drawn.png --script copy.gp
if [ "$rc" -ne 0 ]; then
    fail "the stand-in's picture: exit $rc: $(head -c 300 err.txt)"
else
    problems=""
    cmp -s drawn.png <(png_bytes) || problems="$problems --out is not the picture's bytes;"
    grep -qF "wrote drawn.png: 2 epochs, 1000x400 pixels" out.txt || problems="$problems stdout: $(cat out.txt);"
    grep -qxF "set terminal pngcairo size 1000,400 font 'sans,10'" given.gp || problems="$problems no size;"
    grep -q "^set output '.*/tmp/axon-plot\.[^/]*/plot\.png'\$" given.gp || problems="$problems no output;"
    grep -qxF "set multiplot layout 1,2 title 'good.jsonl'" given.gp || problems="$problems no default title;"
    grep -qxF "2 0.3333333333333333 ? 0.3 ? 0.9" given.gp || problems="$problems 1/3 not exact: $(grep '^2 ' given.gp);"
    grep -qxF "set xtics 1" given.gp || problems="$problems no whole-epoch tics;"
    # the --script copy is the same but for the picture's name
    diff <(grep -v '^set output' given.gp) <(grep -v '^set output' copy.gp) > /dev/null ||
        problems="$problems --script differs from what gnuplot ran;"
    grep -qxF "set output 'drawn.png'" copy.gp || problems="$problems --script does not name --out;"
    ls tmp/axon-plot.* > /dev/null 2>&1 && problems="$problems a temporary folder was left;"
    if [ -n "$problems" ]; then fail "the stand-in's picture:$problems"; else ok "the stand-in's picture, byte for byte"; fi
fi

for epoch in $(seq 1 21); do
    printf '{"epoch":%d,"train_loss":%s,"val_loss":null,"test_loss":null,"test_accuracy":null}\n' \
        "$epoch" "0.$epoch"
done > long.jsonl
run with good "$AXON" plot --metrics long.jsonl --out long.png --title "it's long"
if [ "$rc" -eq 0 ] && ! grep -qxF "set xtics 1" given.gp &&
    grep -qxF "set multiplot layout 1,1 title 'it''s long'" given.gp; then
    ok "21 epochs: no whole-epoch tics; a quote in the title doubled; no accuracy panel"
else
    fail "21 epochs: exit $rc, $(grep -E 'xtics|multiplot' given.gp | tr '\n' ' ') $(head -c 300 err.txt)"
fi

# ------------------------------------------------ the temporary folder
long_tmp=$(printf '/x%.0s' $(seq 1 2100))
check "TMPDIR too long" 1 "is too long a folder name" -- \
    env TMPDIR="$long_tmp" PATH="$PWD/bin-good:$PATH" "$AXON" plot good.jsonl --out keep.png
check "TMPDIR missing" 1 "axon: cannot make a temporary folder in $PWD/none: No such file or directory" -- \
    env TMPDIR="$PWD/none" PATH="$PWD/bin-good:$PATH" "$AXON" plot good.jsonl --out keep.png
run env TMPDIR= PATH="$PWD/bin-good:$PATH" "$AXON" plot good.jsonl --out empty_tmp.png
if [ "$rc" -eq 0 ] && grep -q "^set output '/tmp/axon-plot\.[^/]*/plot\.png'\$" given.gp &&
    cmp -s empty_tmp.png <(png_bytes); then
    ok "TMPDIR empty: /tmp"
else
    fail "TMPDIR empty: exit $rc, $(grep '^set output' given.gp) $(head -c 300 err.txt)"
fi

# ------------------------------------------------ outputs that cannot be written
check "--out in a missing folder" 1 "axon: --out nodir/out.png: the folder nodir does not exist" -- with good "$AXON" plot good.jsonl --out nodir/out.png
check "--script in a missing folder: --out left as it was" 1 \
    "axon: --script nodir/copy.gp: the folder nodir does not exist" -- \
    with good "$AXON" plot good.jsonl --out keep.png --script nodir/copy.gp

# ------------------------------------------------ the command line
check "the metrics file given twice" 2 \
    "the metrics file is given twice (good.jsonl and --metrics long.jsonl): give one" -- \
    "$AXON" plot good.jsonl --metrics long.jsonl --out keep.png
check "no metrics file" 2 "the metrics file (axon plot METRICS.jsonl) is required (see axon plot --help)" -- \
    "$AXON" plot --out keep.png
for size in 640x 640x480x 20000x600 640x50 axb; do
    check "--size $size" 2 "--size: expected WIDTHxHEIGHT in pixels, each 100 to 10000 (e.g. 1000x400), got '$size'" -- \
        "$AXON" plot good.jsonl --out keep.png --size "$size"
done
printf '%s\n' '{"epoch":1,"train_loss":null,"val_loss":null,"test_loss":null,"test_accuracy":null}' > nulls.jsonl
check "nothing to draw" 1 "axon: nulls.jsonl: no loss or accuracy to draw (null in every line)" -- \
    with good "$AXON" plot nulls.jsonl --out keep.png
run "$AXON" plot --help
if [ "$rc" -eq 0 ] && grep -qF "axon plot METRICS.jsonl --out FILE.png [options]" out.txt &&
    grep -qF -- "--size" out.txt && [ ! -s err.txt ]; then
    ok "--help"
else
    fail "--help: exit $rc"
fi

if [ "$failures" -gt 0 ]; then
    echo "plot_faults: $failures check(s) failed"
    exit 1
fi
echo "plot_faults: all checks passed"
