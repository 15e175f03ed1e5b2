#!/usr/bin/env bash
# output_safety.sh: nothing the user owns is destroyed by the axon command
# (issue 25, sections 2 and 4; docs/cli.md, "Output files").
#
#   bash tests/output_safety.sh /path/to/axon WORKDIR
#
# - an output that is an input (by another path, a link, a file of a data
#   folder) is refused before any work, naming both roles, and the input is
#   unchanged; so is a checkpoint that would write over --init-from's model;
# - an output in a missing folder (--checkpoint too) is refused before
#   training;
# - a link is written through (the link stays), a character device or FIFO
#   in place (it stays one), and a failed write removes nothing of the user's;
# - failures of standard output, an overflowing L2 penalty, a bad IDX label
#   and a failed metrics write are each said once, with their cause.
# The device cases use nodes made with mknod in WORKDIR (never /dev's own:
# an axon that replaced them would break the machine); where mknod is not
# allowed (not root) they are skipped and the script exits 77 after the
# rest. Prints "N passed, M failed".
set -u
if [ $# -ne 2 ]; then
    echo "usage: bash tests/output_safety.sh /path/to/axon WORKDIR" >&2
    exit 2
fi
AXON=$1
WORK=$2
case "$AXON" in /*) ;; *) AXON="$PWD/$AXON" ;; esac
rm -rf "$WORK"
mkdir -p "$WORK" && cd "$WORK" || exit 1

passed=0 failed=0 skipped=0 problems="" name="" rc=0
begin() { name=$1; problems=""; }
note() { problems="$problems    $1"$'\n'; }
run() { timeout 300 "$@" > out.txt 2> err.txt; rc=$?; }
status_is() { [ "$rc" -eq "$1" ] || note "exit status $rc, expected $1"; }
stderr_has() { grep -qF -- "$1" err.txt || note "stderr lacks '$1'"; }
stderr_lacks() { ! grep -qF -- "$1" err.txt || note "stderr has '$1'"; }
kind_is() { # PATH KIND (as stat -c %F says it)
    local kind
    kind=$(stat -c %F "$1" 2> /dev/null)
    [ "$kind" = "$2" ] || note "$1 is '${kind:-missing}', expected '$2'"
}
same_bytes() { cmp -s "$1" "$2" || note "$1 changed"; }
finish() {
    if [ -z "$problems" ]; then
        passed=$((passed + 1)); echo "ok    $name"
    else
        failed=$((failed + 1)); echo "FAIL  $name"; printf '%s' "$problems"
        sed -n '1,4s/^/    stderr: /p' err.txt
    fi
}
skip() { skipped=$((skipped + 1)); echo "skip  $1"; }

# Two blobs, label in column 0, and a model trained on them.
awk 'BEGIN { srand(7); for (i = 0; i < 200; i++) { c = i % 2;
    printf "%d,%.4f,%.4f,%.4f\n", c, c + rand(), rand() - c, rand() } }' > g.csv
cp g.csv g.orig
"$AXON" train --data g.csv --epochs 2 --quiet --out m.safetensors || { echo "cannot train"; exit 1; }
cp m.safetensors m.orig
mkdir sub
ln -s ../g.csv sub/g_link.csv

# ------------------------------------------------ an output that is an input

begin "train --out onto --data"
run "$AXON" train --data g.csv --epochs 2 --quiet --out g.csv
status_is 1; stderr_has "--out g.csv is the training data (--data g.csv)"; same_bytes g.csv g.orig
finish

begin "predict --out onto --data through another path"
run "$AXON" predict --model m.safetensors --data g.csv --out sub/../g.csv
status_is 1; stderr_has "--out sub/../g.csv is the input data"; same_bytes g.csv g.orig
finish

begin "predict --out onto --data through a link"
run "$AXON" predict --model m.safetensors --data g.csv --out sub/g_link.csv
status_is 1; stderr_has "is the input data (--data g.csv)"; same_bytes g.csv g.orig
kind_is sub/g_link.csv "symbolic link"
finish

begin "predict --out onto --model"
run "$AXON" predict --model m.safetensors --data g.csv --out m.safetensors
status_is 1; stderr_has "--out m.safetensors is the model (--model m.safetensors)"
same_bytes m.safetensors m.orig
finish

begin "train --metrics onto --data"
run "$AXON" train --data g.csv --epochs 2 --quiet --metrics g.csv
status_is 1; stderr_has "--metrics g.csv is the training data"; same_bytes g.csv g.orig
finish

begin "train --out onto --init-from"
run "$AXON" train --data g.csv --epochs 2 --quiet --init-from m.safetensors --out m.safetensors
status_is 1; stderr_has "--out m.safetensors is the model training starts from"
same_bytes m.safetensors m.orig
finish

begin "train --checkpoint that would write over --init-from"
cp m.safetensors ck.epoch-000001.safetensors
run "$AXON" train --data g.csv --epochs 2 --quiet --checkpoint-every 1 --checkpoint ck \
    --init-from ck.epoch-000001.safetensors
status_is 1; stderr_has "--checkpoint ck would write over the model training starts from"
same_bytes ck.epoch-000001.safetensors m.orig
finish

begin "train --out and --metrics one file"
run "$AXON" train --data g.csv --epochs 2 --quiet --out twice.out --metrics ./twice.out
status_is 1; stderr_has "--metrics ./twice.out is also --out"
[ -e twice.out ] && note "twice.out written"
finish

# An IDX folder, as --data DIR and as a named data set (AXON_DATASETS).
python3 - <<'PY' || exit 1
import os, struct
for folder in ("idx", "datasets/tiny"):
    os.makedirs(folder, exist_ok=True)
    for part, bad in (("train", False), ("t10k", True)):
        n = 40
        with open(f"{folder}/{part}-images-idx3-ubyte", "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 4, 4) + bytes((i * 7) % 256 for i in range(n * 16)))
        labels = [i % 10 for i in range(n)]
        if bad and folder == "idx":
            labels[3] = 200  # a corrupt label
        with open(f"{folder}/{part}-labels-idx1-ubyte", "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(labels))
PY
cp idx/train-labels-idx1-ubyte labels.orig

begin "train --out onto a file of the --data folder"
run "$AXON" train --data idx --epochs 1 --quiet --out idx/train-labels-idx1-ubyte
status_is 1; stderr_has "is a file of the training data (--data idx"
same_bytes idx/train-labels-idx1-ubyte labels.orig
finish

begin "train --out onto a file of a named data set"
cp datasets/tiny/train-labels-idx1-ubyte tiny.orig
AXON_DATASETS=$PWD/datasets run "$AXON" train --data tiny --epochs 1 --quiet \
    --out datasets/tiny/train-labels-idx1-ubyte
status_is 1; stderr_has "is a file of the training data (--data tiny"
same_bytes datasets/tiny/train-labels-idx1-ubyte tiny.orig
finish

# A build without prep or stats (scripts/test.sh's minimal one) has no such
# command to check: said, and not counted as a skip.
built() { "$AXON" info | grep -q "^  $1 *yes"; }
if ! built stats; then
    echo "not built: stats (axon info), so stats tensor-mean is not checked"
else
begin "stats tensor-mean --out onto --fx"
python3 - <<'PY' || exit 1
import struct
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open("fx.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<30f", *[(i % 7) / 7 for i in range(30)]))
PY
cp fx.npy fx.orig
run "$AXON" stats tensor-mean --fx fx.npy --fy fx.npy --fz fx.npy --out ./fx.npy
status_is 1; stderr_has "--out ./fx.npy is an input of the tensor (--fx fx.npy)"; same_bytes fx.npy fx.orig
finish
fi

if built prep; then
    begin "prep --out folder holding --labels under a name prep writes"
    mkdir -p photos batches
    printf 'cat\ndog\n' > batches/meta.json
    cp batches/meta.json meta.orig
    run "$AXON" prep --input photos --out batches --labels batches/meta.json
    status_is 1; stderr_has "--out batches would write over the label names (--labels batches/meta.json)"
    same_bytes batches/meta.json meta.orig
    finish
else
    echo "not built: prep (axon info), so prep's outputs are not checked"
fi

# ------------------------------------------------ every output's place first

begin "--checkpoint in a missing folder, refused before training"
run "$AXON" train --data g.csv --epochs 3 --checkpoint-every 2 --checkpoint nodir/ck --out lw.safetensors
status_is 1; stderr_has "--checkpoint nodir/ck"; stderr_has "the folder nodir does not exist"
grep -q "epoch 1" out.txt && note "training ran before the refusal"
finish

begin "a checkpoint failing during training names the checkpoint, not the data"
mkdir late.epoch-000002.safetensors
run "$AXON" train --data g.csv --epochs 2 --quiet --checkpoint-every 1 --checkpoint late
status_is 1; stderr_has "late.epoch-000002.safetensors"; stderr_lacks "axon: g.csv"
finish

# ------------------------------------------------ links, devices, FIFOs

begin "train --out through a link writes its target"
mkdir real
ln -s real/model.safetensors lm.safetensors
run "$AXON" train --data g.csv --epochs 2 --quiet --out lm.safetensors
status_is 0; kind_is lm.safetensors "symbolic link"; kind_is real/model.safetensors "regular file"
finish

begin "predict --out into a FIFO in place"
mkfifo fifo
timeout 300 cat fifo > from_fifo.txt &
reader=$!
run "$AXON" predict --model m.safetensors --data g.csv --out fifo
# A FIFO replaced by a file never gets a writer: the reader would wait.
[ -p fifo ] || kill "$reader" 2> /dev/null
wait "$reader"
status_is 0; kind_is fifo "fifo"
[ "$(wc -l < from_fifo.txt)" -eq 201 ] || note "the reader got $(wc -l < from_fifo.txt) lines, not 201"
finish

devices=no
if mknod mynull c 1 3 2> /dev/null && mknod myfull c 1 7 2> /dev/null; then
    devices=yes
fi
if [ "$devices" = yes ]; then
    begin "train --out onto a null device, in place"
    run "$AXON" train --data g.csv --epochs 2 --quiet --out mynull
    status_is 0; kind_is mynull "character special file"
    finish

    begin "train --out onto a full device: the cause, and the node kept"
    run "$AXON" train --data g.csv --epochs 2 --quiet --out myfull
    status_is 1; stderr_has "No space left on device"; kind_is myfull "character special file"
    finish

    begin "predict --out onto a full device: the cause, and the node kept"
    run "$AXON" predict --model m.safetensors --data g.csv --out myfull
    status_is 1; stderr_has "No space left on device"; kind_is myfull "character special file"
    finish

    begin "predict --out through a link to standard output, itself a full device"
    ln -s /proc/self/fd/1 mystdout
    timeout 300 "$AXON" predict --model m.safetensors --data g.csv --out mystdout > myfull 2> err.txt
    rc=$?
    status_is 1; stderr_has "No space left on device"; kind_is mystdout "symbolic link"
    kind_is myfull "character special file"
    finish

    begin "predict to a full standard output says why"
    timeout 300 "$AXON" predict --model m.safetensors --data g.csv > myfull 2> err.txt
    rc=$?
    status_is 1; stderr_has "standard output failed: No space left on device"
    finish

    for command in "eval --model m.safetensors --data g.csv" "info" "train --data g.csv --epochs 2"; do
        begin "axon $command > full device"
        # shellcheck disable=SC2086
        timeout 300 "$AXON" $command > myfull 2> err.txt
        rc=$?
        status_is 1; stderr_has "writing to standard output failed: No space left on device"
        finish
    done

    begin "a failed metrics write is told once"
    run "$AXON" train --data g.csv --epochs 3 --quiet --metrics myfull
    status_is 1
    [ "$(grep -c "metrics file myfull" err.txt)" -eq 1 ] || note "told $(grep -c "metrics file myfull" err.txt) times"
    finish
else
    skip "device nodes: mknod is not allowed here (needs root)"
fi

# ------------------------------------------------ messages

begin "--l2 1e308 names the penalty"
run "$AXON" train --data g.csv --epochs 2 --quiet --l2 1e308
status_is 1; stderr_has "L2 penalty"; stderr_lacks "lower learning rate"
finish

begin "a label beyond the layer names the labels file"
run "$AXON" train --data idx --test idx --epochs 1 --quiet --layers 10:softmax
status_is 1; stderr_has "idx/t10k-labels-idx1-ubyte has labels up to 200"
finish

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
exit 0
