#!/bin/bash
# train_terminal.sh: axon train's live progress line, shown only where stderr
# is a terminal (a pseudo-terminal from util-linux's script here). The line
# is drawn at a known step, not after a delay: AXON_TEST_FAULT=TERM@step:50
# stops the run after batch 50 and the library reports progress at once
# (docs/testing.md, "Fault injection"), so no verdict depends on speed.
#  - on a terminal: one line "\repoch 1/2  batch 50/400  N samples/s  loss L
#    ETA T\e[K" (N positive, L the loss of a number), then "\r\e[K" clears it
#    before the interruption message, which names the same batch; exit 130;
#  - with stderr a file: the same run prints no carriage return or escape
#    sequence at all.
# Skipped (77), saying so, without script(1).
#
# usage: train_terminal.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "train_terminal: FAIL: $*" >&2; exit 1; }
command -v script > /dev/null || { echo "SKIPPED: no script(1) to give axon a terminal (apt-get install bsdutils)"; exit 77; }

run="$axon train --data synth:linear --rows 4000 --features 20 --layers 64:tanh,1 --loss mse --batch 10 --lr 0.001 --epochs 2 --threads 1 --seed 3"
AXON_TEST_FAULT=TERM@step:50 script -qfec "$run --out tty.safetensors" /dev/null > tty.txt
status=$?
[ "$status" = 130 ] || { cat -v tty.txt; fail "on a terminal: exit status $status, not 130 (stopped by SIGTERM)"; }
esc=$'\033'
cr=$'\r'
live="${cr}epoch 1/2  batch 50/400  "
grep -qF "$live" tty.txt || { cat -v tty.txt; fail "no live line for batch 50 of 400"; }
[ "$(grep -o "${cr}epoch [0-9]*/2  batch" tty.txt | wc -l)" = 1 ] || { cat -v tty.txt; fail "not exactly one live line"; }
# the line: samples/s, loss, ETA, erase to the end; then cleared before the message
line=$(grep -oE "${cr}epoch 1/2  batch 50/400  [0-9]+ samples/s  loss [0-9.e+-]+  ETA [0-9a-z]+${esc}\[K${cr}${esc}\[Kaxon: training interrupted in epoch 1 of 2, after batch 50 of 400" tty.txt)
[ -n "$line" ] || { cat -v tty.txt; fail "the live line is not 'epoch 1/2  batch 50/400  N samples/s  loss L  ETA T', erased, then cleared before the message"; }
rate=$(sed -E 's/.* ([0-9]+) samples\/s.*/\1/' <<< "$line")
[ "$rate" -gt 0 ] || fail "the live line's rate is $rate samples/s"

AXON_TEST_FAULT=TERM@step:50 $run --out file.safetensors > file.out 2> file.err
status=$?
[ "$status" = 130 ] || { cat file.err; fail "to a file: exit status $status, not 130"; }
grep -q "after batch 50 of 400" file.err || { cat file.err; fail "to a file: the message does not name batch 50"; }
! grep -q "[$cr$esc]" file.out file.err || fail "with stderr a file, axon wrote a carriage return or an escape sequence"
echo "train_terminal: OK"
