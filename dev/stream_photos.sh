#!/usr/bin/env bash
# stream_photos.sh AXON WORK [N] [VAL]: issue 20's end-to-end run. N photographs
# (default 20000) in five labelled folders and VAL (default 2000) flat with an
# ILSVRC-style ground-truth file (dev/stream_photos.py), `axon prep` of both at
# 64 x 64, then `axon train` on the batches streamed (random 56 x 56 crops,
# mirroring, the mean image subtracted; the centre crop of the validation set
# as its test set) and, for comparison, loaded whole. Prints each training's
# peak resident size (GNU time's maximum RSS) beside the batches' size on disk.
set -eu
axon=$1
work=$2
count=${3:-20000}
val_count=${4:-2000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
[ -d "$work/photos" ] || /usr/bin/python3 "$here/stream_photos.py" "$work/photos" "$count"
[ -d "$work/val" ] || /usr/bin/python3 "$here/stream_photos.py" "$work/val" "$val_count" val
rm -rf "$work/train_batches" "$work/val_batches"
"$axon" prep --input "$work/photos" --out "$work/train_batches" --size 64 --batch 1024 \
    --labels "$work/labels.txt" --quiet
"$axon" prep --input "$work/val" --out "$work/val_batches" --size 64 --batch 1024 \
    --labels "$work/labels.txt" --ground-truth "$work/ground_truth.txt" --quiet
disk=$(du -cb "$work"/train_batches/batch_*.npy | tail -1 | cut -f1)
echo "batches on disk: $disk bytes ($(ls "$work"/train_batches/batch_?????.npy | wc -l) files)"

run() { # run NAME axon-train-options...
    local name=$1
    shift
    /usr/bin/time -f "%M" -o "$work/$name.rss" "$axon" train --data "batches:$work/train_batches" \
        --layers 256:relu,5:softmax --batch 128 --epochs 3 --lr 0.01 --seed 1 "$@" \
        >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; exit 1; }
    local rss_kib
    rss_kib=$(cat "$work/$name.rss")
    echo "$name: peak RSS $((rss_kib / 1024)) MiB = $(awk -v r="$rss_kib" -v d="$disk" \
        'BEGIN { printf "%.3f", r * 1024 / d }') x the batches on disk; $(grep '^epoch 3' "$work/$name.out")"
}
run streamed --test "batches:$work/val_batches" --crop 56 --mirror --subtract-mean
run streamed_plain --test "batches:$work/val_batches"
run whole --test "batches:$work/val_batches" --stream off
