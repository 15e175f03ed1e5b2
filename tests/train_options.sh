#!/bin/bash
# train_options.sh: axon train's options that combine, checked by what they do
# (small synth:linear runs of 2,000 rows):
#  - a :dropP suffix in --layers is the same run as --dropout's per-layer list
#    (the same model file, byte for byte), and the optimizer line names it;
#  - the optimizer line names l1, value and norm clipping, the lr schedule and
#    the warmup given, and the epoch lines show step:1:0.5's rates;
#  - --keep-best validation keeps the epoch of the lowest val_loss of the
#    --metrics file (not the last one), and says which;
#  - refused with exit status 2 and a message naming the options: --dropout
#    with :dropP suffixes, a :drop rate of 1.5, --warmup and --clip-norm with
#    a line-search optimizer, plateau and --keep-best validation without
#    --val-split; notes (exit 0) for --weight-decay with sgd and --init-range
#    without --init uniform.
#
# usage: train_options.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "train_options: FAIL: $*" >&2; exit 1; }
small=(--data synth:linear --rows 2000 --features 6 --loss mse --threads 1 --seed 5)
sgd=(--batch 100)

echo ":dropP in --layers against --dropout's list"
"$axon" train "${small[@]}" "${sgd[@]}" --layers 8:tanh:drop0.25,1 --epochs 2 --out suffix.safetensors > suffix.log 2>&1 ||
    { cat suffix.log; fail "train with :drop0.25"; }
"$axon" train "${small[@]}" "${sgd[@]}" --layers 8:tanh,1 --dropout 0,0.25 --epochs 2 --out list.safetensors > list.log 2>&1 ||
    { cat list.log; fail "train with --dropout 0,0.25"; }
grep -q "^  optimizer .*, dropout per layer 0,0.25" suffix.log || { cat suffix.log; fail "the optimizer line does not name the dropout of :drop0.25"; }
cmp -s suffix.safetensors list.safetensors || fail ":drop0.25 and --dropout 0,0.25 give different models"
"$axon" train "${small[@]}" "${sgd[@]}" --layers 8:tanh,1 --epochs 2 --out none.safetensors > none.log 2>&1 ||
    { cat none.log; fail "train without dropout"; }
! cmp -s suffix.safetensors none.safetensors || fail "the model with dropout 0.25 is the one without dropout"

echo "the optimizer line and the lr schedule"
"$axon" train "${small[@]}" "${sgd[@]}" --layers 8:tanh,1 --epochs 3 --l1 0.001 --clip-value 0.5 --clip-norm 2 \
    --warmup 3 --lr-schedule step:1:0.5 --lr 0.05 > sched.log 2>&1 || { cat sched.log; fail "train with the schedule"; }
for words in "l1 0.001" "gradients clipped to +-0.5" "gradient norm clipped to 2" "lr schedule step:1:0.5" "warmup 3 steps"; do
    grep -q "^  optimizer .*$words" sched.log || { cat sched.log; fail "the optimizer line lacks '$words'"; }
done
[ "$(grep -o '^epoch [0-9]/3  loss [0-9.e-]*  lr [0-9.e-]*' sched.log | awk '{print $NF}' | tr '\n' ' ')" = "0.05 0.025 0.0125 " ] ||
    { cat sched.log; fail "step:1:0.5 from 0.05: the epochs' rates are not 0.05 0.025 0.0125"; }

echo "--keep-best validation"
"$axon" train "${small[@]}" "${sgd[@]}" --layers 8:tanh,1 --epochs 8 --lr 0.5 --val-split 0.25 --keep-best validation \
    --metrics metrics.jsonl --out best.safetensors > best.log 2>&1 || { cat best.log; fail "train --keep-best validation"; }
best=$(grep -o '"epoch":[0-9]*,"train_loss":[^,]*,"val_loss":[^,]*' metrics.jsonl |
    awk -F'[:,]' 'NR == 1 || $6 + 0 < low { low = $6 + 0; epoch = $2 } END { print epoch }')
[ -n "$best" ] || { cat metrics.jsonl; fail "no val_loss in the metrics file"; }
grep -q "^kept the weights of epoch $best (lowest validation loss)" best.log ||
    { cat best.log metrics.jsonl; fail "--keep-best does not say it kept epoch $best, the lowest val_loss"; }
# (here epoch 7 of 8: a "keep the last" would fail; another CPU's rounding may move it)
[ "$best" != 8 ] || echo "note: the lowest val_loss is the last epoch's on this machine"

refuse() { # WHAT WORDS -- ARGS...
    local what=$1 words=$2
    shift 3
    "$axon" train "${small[@]}" --epochs 1 "$@" > refused.out 2> refused.err
    local status=$?
    [ "$status" = 2 ] || { cat refused.err; fail "$what: exit status $status, not 2"; }
    grep -qF -- "$words" refused.err || { cat refused.err; fail "$what: the message does not say '$words'"; }
    [ ! -e refused.safetensors ] || fail "$what: a model was written"
}
echo "refusals"
refuse "--dropout with :drop" "give the dropout in --dropout or as :dropP suffixes in --layers" -- \
    "${sgd[@]}" --layers 8:tanh:drop0.25,1 --dropout 0.1 --out refused.safetensors
refuse "a :drop rate of 1.5" ":drop takes a probability in [0, 1)" -- --layers 8:tanh:drop1.5,1 --out refused.safetensors
refuse "--warmup with cg" "--lr-schedule and --warmup apply to sgd, adam and adamw: cg" -- \
    --layers 8:tanh,1 --optimizer cg --warmup 3 --out refused.safetensors
refuse "--clip-norm with lbfgs" "--clip-norm and --clip-value apply to sgd, adam and adamw: lbfgs" -- \
    --layers 8:tanh,1 --optimizer lbfgs --clip-norm 1 --out refused.safetensors
refuse "plateau without --val-split" "--lr-schedule plateau watches the validation loss: add --val-split" -- \
    "${sgd[@]}" --layers 8:tanh,1 --lr-schedule plateau:2:0.5 --out refused.safetensors
refuse "--keep-best validation without --val-split" "--keep-best validation needs a validation set" -- \
    "${sgd[@]}" --layers 8:tanh,1 --keep-best validation --out refused.safetensors

note() { # WORDS -- ARGS...
    local words=$1
    shift 2
    "$axon" train "${small[@]}" "${sgd[@]}" --epochs 1 --layers 8:tanh,1 "$@" > noted.out 2> noted.err ||
        { cat noted.err; fail "'$*' was refused; a note was expected"; }
    grep -qF -- "$words" noted.err || { cat noted.err; fail "'$*': no note '$words'"; }
}
echo "notes"
note "note: --weight-decay applies to adamw only (for sgd, --l2 is the penalty)" -- --weight-decay 0.01
note "note: --init-range applies to --init uniform only" -- --init-range 0.1
echo "train_options: OK"
