#!/usr/bin/env bash
# prep_cli.sh: `axon prep` from the command line, and the loop it closes:
# photographs in (python-matplotlib-data's grace_hopper.jpg and logo2.png,
# six copies of each as two labels, plus a truncated JPEG and a README),
# batches out, `axon train --data batches:DIR` and `axon eval` on them.
# Checks the summary's counts, the warning naming the bad file, the resume
# of a rerun (and its removal of stale temporaries, and only those), the
# refusal of other settings into the same folder, the exit statuses of usage
# and runtime errors, and that the model learns the two labels; tars that
# cannot be listed (compressed, not a tar, nested too deep) and files a
# folder walk ignores (dot files, a FIFO).
# Usage: prep_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
photos=/usr/share/matplotlib/mpl-data/sample_data
if [ ! -f "$photos/grace_hopper.jpg" ] || [ ! -f "$photos/logo2.png" ]; then
    echo "skipped: $photos is missing; apt-get install python-matplotlib-data"
    exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() { # expect STATUS DESCRIPTION -- command...
    local want=$1 what=$2; shift 3
    "$@" >"$work/stdout" 2>"$work/stderr"
    local got=$?
    [ "$got" -eq "$want" ] || fail "$what: exit $got, expected $want ($(cat "$work/stderr"))"
}
contains() { grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2': $(cat "$work/$1")"; }

rm -rf "$work"
mkdir -p "$work/in/photo" "$work/in/logo"
for i in 1 2 3 4 5 6; do
    cp "$photos/grace_hopper.jpg" "$work/in/photo/$i.jpg"
    cp "$photos/logo2.png" "$work/in/logo/$i.png"
done
head -c 20000 "$photos/grace_hopper.jpg" >"$work/in/photo/cut.jpg"
echo "two labels" >"$work/in/README.txt"

expect 0 "prep" -- "$axon" prep --input "$work/in" --out "$work/out" --size 32 --batch 5 --threads 2
contains stdout "12 images written, 1 skipped, 1 other files ignored; 2 labels"
contains stdout "3 batches written, 0 kept from an earlier run"
contains stderr "warning: photo/cut.jpg: damaged JPEG"

# Temporaries an interrupted run left: this program's (by name) whose
# process is gone are removed and reported; a live process's, and files of
# other names, are left alone.
dead=$(sh -c 'echo $$')
stale="batch_00001.npy.tmp.$dead batch_00000_labels.npy.tmp.$dead meta.json.tmp.$dead"
others="notes.tmp.$dead batch_1.npy.tmp.$dead mydata.npy.tmp.$dead batch_00001.npy.tmp.12ab"
for f in $stale $others plan.json.tmp.$$; do echo partial >"$work/out/$f"; done
expect 0 "prep rerun" -- "$axon" prep --input "$work/in" --out "$work/out" --size 32 --batch 5
contains stdout "0 batches written, 3 kept from an earlier run"
contains stderr "$work/out: removed 3 stale temporary files"
contains stderr "plan.json.tmp.$$: left alone: a temporary file whose process $$ is running"
for f in $stale; do [ ! -e "$work/out/$f" ] || fail "stale $f was not removed"; done
for f in $others plan.json.tmp.$$; do [ -e "$work/out/$f" ] || fail "$f was removed"; done

# Stopped at a known batch (AXON_TEST_FAULT, docs/testing.md), on any
# machine: a SIGTERM after the first batch ends the run cleanly (130) with
# the complete batches kept; a SIGKILL after the second leaves its writer's
# temporaries; each rerun finishes the set, and the batches equal those of
# the uninterrupted run byte for byte.
for fault in TERM@prep-batch:1 KILL@prep-batch:2; do
    rm -rf "$work/cut"
    status=0
    AXON_TEST_FAULT=$fault "$axon" prep --input "$work/in" --out "$work/cut" --size 32 --batch 5 \
        --threads 2 >"$work/stdout" 2>"$work/stderr" || status=$?
    case $fault in
    TERM*) [ $status -eq 130 ] || fail "$fault: exit $status, expected 130 ($(cat "$work/stderr"))"
           contains stderr "stopped by the caller; 1 complete batches are in" ;;
    KILL*) [ $status -eq 137 ] || fail "$fault: exit $status, expected 137 ($(cat "$work/stderr"))" ;;
    esac
    expect 0 "prep rerun after $fault" -- "$axon" prep --input "$work/in" --out "$work/cut" --size 32 \
        --batch 5 --threads 2
    contains stdout "12 images written, 1 skipped"
    for f in "$work"/out/batch_*.npy "$work/out/meta.json"; do
        cmp -s "$f" "$work/cut/$(basename "$f")" || fail "$fault: $(basename "$f") differs after the rerun"
    done
    leftovers=$(ls "$work/cut" | grep -c "\.tmp\.")
    [ "$leftovers" -eq 0 ] || fail "$fault: temporaries left after the rerun: $(ls "$work/cut")"
done

expect 1 "prep, other settings" -- "$axon" prep --input "$work/in" --out "$work/out" --size 16 --batch 5
contains stderr "another input or other settings"
expect 2 "prep without --out" -- "$axon" prep --input "$work/in"
contains stderr "--input and --out are required"
expect 1 "prep, missing input" -- "$axon" prep --input "$work/nothing" --out "$work/out2"
contains stderr "nothing: No such file or directory"

expect 0 "train on batches (streamed)" -- "$axon" train --data "batches:$work/out" --layers 32:relu,2:softmax --lr 0.01 \
    --epochs 5 --batch 4 --out "$work/model.safetensors"
contains stdout "12 rows, 3072 features, 2 classes"
expect 0 "eval on batches" -- "$axon" eval --model "$work/model.safetensors" --data "batches:$work/out"
contains stdout "accuracy  100.00%  (12 of 12 rows)"
expect 1 "train on a folder without meta.json" -- "$axon" train --data "batches:$work/in" \
    --layers 2:softmax --epochs 1
contains stderr "meta.json"

# Streamed with cuda-convnet2's augmentation (random 28 x 28 crops, mirrored,
# less the mean image); eval takes the centre crop.
expect 0 "train streamed, augmented" -- "$axon" train --data "batches:$work/out" \
    --layers 32:relu,2:softmax --lr 0.01 --epochs 5 --batch 4 --crop 28 --mirror --subtract-mean \
    --out "$work/crop.safetensors"
contains stdout "12 rows, 2352 features, 2 classes"
expect 0 "eval centre crop" -- "$axon" eval --model "$work/crop.safetensors" \
    --data "batches:$work/out" --crop 28 --subtract-mean
contains stdout "12 rows, 2352 features"
expect 2 "crop without batches" -- "$axon" train --data synth:linear --crop 4
contains stderr "--crop"
expect 2 "crop unstreamed" -- "$axon" train --data "batches:$work/out" --layers 2:softmax \
    --crop 28 --stream off
contains stderr "--stream off"
expect 1 "crop with a full batch" -- "$axon" train --data "batches:$work/out" --layers 2:softmax \
    --crop 28 --optimizer lbfgs
contains stderr "need the set streamed"
# A validation set as ILSVRC gives it: images flat, named in an order that is not
# their labels', and a ground-truth file of 1-based label numbers in file-name order
# (here the --labels order of the training folders: logo=1, photo=2).
mkdir -p "$work/val"
printf 'logo\nphoto\n' >"$work/val_names.txt"
: >"$work/val_truth.txt"
for i in 1 2 3 4 5 6; do
    if [ $((i % 3)) -eq 0 ]; then
        cp "$photos/logo2.png" "$work/val/ILSVRC2012_val_0000000$i.png"; echo 1 >>"$work/val_truth.txt"
    else
        cp "$photos/grace_hopper.jpg" "$work/val/ILSVRC2012_val_0000000$i.JPEG"; echo 2 >>"$work/val_truth.txt"
    fi
done
expect 0 "prep a validation set" -- "$axon" prep --input "$work/val" --out "$work/val_out" --size 32 \
    --batch 4 --ground-truth "$work/val_truth.txt" --labels "$work/val_names.txt"
contains stdout "6 images written, 0 skipped, 0 other files ignored; 2 labels"
expect 0 "eval on the validation set" -- "$axon" eval --model "$work/model.safetensors" \
    --data "batches:$work/val_out"
contains stdout "accuracy  100.00%  (6 of 6 rows)"
expect 0 "eval the validation set as trained" -- "$axon" eval --model "$work/crop.safetensors" \
    --data "batches:$work/val_out" --crop 28 --mean "$work/out/mean.npy"
contains stdout "6 rows, 2352 features, 2 classes"
expect 2 "two mean images" -- "$axon" eval --model "$work/crop.safetensors" \
    --data "batches:$work/val_out" --mean "$work/out/mean.npy" --subtract-mean
contains stderr "give one"
expect 1 "a mean image that is not one" -- "$axon" eval --model "$work/model.safetensors" \
    --data "batches:$work/val_out" --mean "$work/val_truth.txt"
contains stderr "val_truth.txt"
# The same as a tar whose members are stored out of name order.
(cd "$work/val" && tar cf "$work/val.tar" $(ls | sort -r))
expect 0 "prep a validation tar" -- "$axon" prep --input "$work/val.tar" --out "$work/val_tar_out" \
    --size 32 --batch 4 --ground-truth "$work/val_truth.txt" --labels "$work/val_names.txt"
expect 0 "eval on the validation tar" -- "$axon" eval --model "$work/model.safetensors" \
    --data "batches:$work/val_tar_out"
contains stdout "accuracy  100.00%  (6 of 6 rows)"
# Without --labels the labels are named by their numbers.
expect 0 "prep a validation set, numbers" -- "$axon" prep --input "$work/val" \
    --out "$work/val_numbers" --size 32 --ground-truth "$work/val_truth.txt"
grep -q '"labels": \["1", "2"\]' "$work/val_numbers/meta.json" || fail "labels are not named 1, 2"
head -n 5 "$work/val_truth.txt" >"$work/short_truth.txt"
expect 1 "ground truth too short" -- "$axon" prep --input "$work/val" --out "$work/val_bad" \
    --ground-truth "$work/short_truth.txt"
contains stderr "short_truth.txt: 5 labels for 6 images"
printf '1\n2\nx\n' >"$work/bad_truth.txt"
expect 1 "ground truth not numbers" -- "$axon" prep --input "$work/val" --out "$work/val_bad" \
    --ground-truth "$work/bad_truth.txt"
contains stderr "bad_truth.txt:3: 'x' is not a label number"
printf '1\n2\n3\n1\n1\n1\n' >"$work/range_truth.txt"
expect 1 "ground truth out of range" -- "$axon" prep --input "$work/val" --out "$work/val_bad" \
    --ground-truth "$work/range_truth.txt" --labels "$work/val_names.txt"
contains stderr "range_truth.txt:3: '3' is not a label number 1 .. 2"
expect 1 "ground truth for labelled folders" -- "$axon" prep --input "$work/in" \
    --out "$work/val_bad" --ground-truth "$work/val_truth.txt"
contains stderr "must lie flat"
expect 1 "ground truth missing" -- "$axon" prep --input "$work/val" --out "$work/val_bad" \
    --ground-truth "$work/nothing.txt"
contains stderr "nothing.txt: cannot open the ground-truth file"

# A streamed, augmented run resumed from its checkpoint ends with the weights of
# the run that never stopped; other augmentation is another data set to it.
streamed=(--data "batches:$work/out" --crop 28 --mirror --subtract-mean)
expect 0 "streamed run, 2 epochs" -- "$axon" train "${streamed[@]}" --layers 8:relu,2:softmax \
    --lr 0.01 --batch 4 --epochs 2 --checkpoint "$work/ck" --checkpoint-every 1
expect 0 "streamed run resumed" -- "$axon" train --resume "$work/ck.epoch-000002.safetensors" \
    "${streamed[@]}" --epochs 3 --out "$work/resumed.safetensors"
expect 0 "streamed run, 3 epochs" -- "$axon" train "${streamed[@]}" --layers 8:relu,2:softmax \
    --lr 0.01 --batch 4 --epochs 3 --out "$work/straight.safetensors"
cmp -s "$work/resumed.safetensors" "$work/straight.safetensors" ||
    fail "the resumed streamed run's weights differ from the uninterrupted run's"
expect 1 "resumed with other augmentation" -- "$axon" train --resume \
    "$work/ck.epoch-000002.safetensors" --data "batches:$work/out" --crop 28 --epochs 3
contains stderr "not its values"

# A batch file cut short: named, with its place, exit 1, the checkpoints kept.
rm -rf "$work/cut_out" && cp -r "$work/out" "$work/cut_out"
size=$(stat -c %s "$work/cut_out/batch_00001.npy")
head -c $((size - 100)) "$work/out/batch_00001.npy" >"$work/cut_out/batch_00001.npy"
expect 1 "train on a truncated batch" -- "$axon" train --data "batches:$work/cut_out" \
    --layers 2:softmax --epochs 1 --batch 4
contains stderr "batch_00001.npy"
contains stderr "batch 2 of 3"

# Links (issue 25): `cat/loop -> ..` once made prep list the tree again under
# cat, 384 images from 12, dog's labelled cat. A link into the input is not
# followed (its target has its own place and label), nor one to a folder
# holding the input; a folder outside reached by two links is listed once,
# under the first link's label; each is named in a warning and counted.
rm -rf "$work/m1" "$work/elsewhere" && mkdir -p "$work/m1/cat" "$work/m1/dog" "$work/elsewhere/bird"
for i in 1 2 3 4 5 6; do
    cp "$photos/logo2.png" "$work/m1/cat/$i.png"
    cp "$photos/logo2.png" "$work/m1/dog/$i.png"
done
cp "$photos/logo2.png" "$work/elsewhere/bird/1.png"
ln -s .. "$work/m1/cat/loop"
ln -s ../dog/1.png "$work/m1/cat/dog1.png"
ln -s "$work" "$work/m1/dog/up"
ln -s "$work/elsewhere/bird" "$work/m1/bird"
ln -s "$work/elsewhere/bird" "$work/m1/bird2"
expect 0 "prep with links" -- "$axon" prep --input "$work/m1" --out "$work/m1_out" --size 16 --batch 8
contains stdout "13 images written, 0 skipped, 0 other files ignored; 3 labels"
contains stdout "4 symbolic links not followed"
contains stderr "cat/loop: a link to the input itself inside the input"
contains stderr "cat/dog1.png: a link to dog/1.png inside the input"
contains stderr "dog/up: a link to $(realpath "$work"), which holds the input (a loop)"
contains stderr "m1/bird2: a folder listed already (reached again through a link)"
grep -qF '"counts": [1, 6, 6]' "$work/m1_out/meta.json" ||
    fail "label counts with links: $(grep counts "$work/m1_out/meta.json")"

# A tar whose last member is cut short: warned about, and counted as skipped.
rm -rf "$work/tarred" && mkdir -p "$work/tarred/cat"
for i in 1 2 3; do cp "$photos/grace_hopper.jpg" "$work/tarred/cat/$i.jpg"; done
tar -C "$work/tarred" -cf "$work/whole.tar" cat
head -c $(($(stat -c %s "$work/whole.tar") - 40000)) "$work/whole.tar" >"$work/cut.tar"
expect 0 "prep of a cut tar" -- "$axon" prep --input "$work/cut.tar" --out "$work/cut_tar_out" \
    --size 16 --batch 8
contains stderr "the member runs past the end of the tar (truncated?); skipped"
contains stdout "2 images written, 1 skipped"

# Tars axon cannot list image by image: a compressed one is refused with
# the hint to decompress it, a file named .tar that is no tar is refused
# (exit 1, no batches written); a tar inside 5 others is warned about
# and left out, the images of the shallower ones kept. In a folder, names
# starting with '.' and files that are not regular files (a FIFO) are
# counted as ignored, never opened.
gzip -c "$work/whole.tar" >"$work/whole.tar.gz" && cp "$work/whole.tar.gz" "$work/zipped.tar"
expect 1 "prep of a gzip-compressed tar" -- "$axon" prep --input "$work/zipped.tar" \
    --out "$work/zipped_out" --size 16 --batch 8
contains stderr "zipped.tar: a compressed tar (gzip) cannot be read image by image in shuffled order; decompress it first"
[ -z "$(ls "$work/zipped_out"/batch_* 2>/dev/null)" ] || fail "a compressed tar left batches"
head -c 3000 /dev/zero | tr '\0' 'x' >"$work/fake.tar"
expect 1 "prep of a file that is no tar" -- "$axon" prep --input "$work/fake.tar" \
    --out "$work/fake_out" --size 16 --batch 8
contains stderr "fake.tar: not a readable tar"
rm -rf "$work/nest" && mkdir -p "$work/nest/cat"
cp "$photos/logo2.png" "$work/nest/cat/0.png"
cp "$photos/logo2.png" "$work/nest/cat/1.png"
(cd "$work/nest" && tar cf t6.tar cat/1.png)
for depth in 5 4 3 2 1; do (cd "$work/nest" && mv "t$((depth + 1)).tar" "cat/t$((depth + 1)).tar" &&
    tar cf "t$depth.tar" cat/0.png "cat/t$((depth + 1)).tar" && rm "cat/t$((depth + 1)).tar"); done
expect 0 "prep of tars nested 6 deep" -- "$axon" prep --input "$work/nest/t1.tar" \
    --out "$work/nest_out" --size 16 --batch 8
contains stderr "cat/t6.tar: tars nested more than 4 deep are not read"
contains stdout "5 images written, 0 skipped"
rm -rf "$work/odd" && mkdir -p "$work/odd/cat" "$work/odd/dog"
cp "$photos/logo2.png" "$work/odd/cat/1.png"
cp "$photos/logo2.png" "$work/odd/dog/1.png"
cp "$photos/logo2.png" "$work/odd/dog/.hidden.png"
mkfifo "$work/odd/cat/pipe.png"
expect 0 "prep of a folder with a FIFO and a dot file" -- "$axon" prep --input "$work/odd" \
    --out "$work/odd_out" --size 16 --batch 8
contains stdout "2 images written, 0 skipped, 2 other files ignored; 2 labels"

if [ "$failures" -ne 0 ]; then
    echo "prep_cli: $failures check(s) failed"
    exit 1
fi
rm -rf "$work"
echo "prep_cli: all checks passed"
