#!/usr/bin/env bash
# prep_mpi.sh: `mpirun -np P axon prep` (issue 7). On a corpus of real
# photographs (python-matplotlib-data's grace_hopper.jpg re-cut by
# python3-pil into distinct crops when available, else copies, logo2.png,
# plus a truncated JPEG) it checks that:
# - 1 thread, 2 threads, 2 MPI processes (1 and 2 threads each) and 3
#   processes give byte-identical batch files, meta.json and mean.npy;
# - only rank 0 prints the summary, and its progress line counts the images
#   of every rank (15 of 15 although it made only some of the batches);
# - a rerun under mpirun keeps the complete batches and remakes a deleted one
#   identical;
# - a rank that fails (its input missing; a write refused by the file-size
#   limit, the full-disk path; a rename refused) takes the job down with a
#   message naming the rank, within a timeout (never a hang).
# Usage: prep_mpi.sh AXON WORKDIR MPI_ENABLED(ON|OFF)
# Exits 77 (skipped) when axon was built without MPI or mpirun is missing.
set -u
axon=$1
work=$2
mpi=${3:-OFF}
photos=/usr/share/matplotlib/mpl-data/sample_data
if [ "$mpi" != "ON" ]; then
    echo "skipped: axon was built without MPI (AXON_MPI=OFF or Open MPI not found)"
    exit 77
fi
if ! command -v mpirun >/dev/null; then
    echo "skipped: mpirun is not installed (apt-get install openmpi-bin)"
    exit 77
fi
if [ ! -f "$photos/grace_hopper.jpg" ] || [ ! -f "$photos/logo2.png" ]; then
    echo "skipped: $photos is missing; apt-get install python-matplotlib-data"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's own allocations outlive MPI_Finalize (in plugins it has unloaded,
# so no suppression can name them): LeakSanitizer is off for the ranks of a
# sanitizer build, its other checks stay on; the one-process runs here and in
# prep_cli.sh and test_prep keep leak checking for prep itself.
mpirun="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --oversubscribe"
limit=120 # seconds; a hang fails the test instead of blocking CTest
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() { # expect STATUS DESCRIPTION -- command...
    local want=$1 what=$2; shift 3
    timeout -k 5 "$limit" "$@" >"$work/stdout" 2>"$work/stderr"
    local got=$?
    [ "$got" -ne 124 ] && [ "$got" -ne 137 ] || fail "$what: still running after $limit s"
    if [ "$want" = nonzero ]; then
        [ "$got" -ne 0 ] || fail "$what: exit 0, expected a failure"
    else
        [ "$got" -eq "$want" ] || fail "$what: exit $got, expected $want ($(cat "$work/stderr"))"
    fi
}
contains() { grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2': $(cat "$work/$1")"; }
same_output() { # same_output DIR_A DIR_B WHAT
    local a=$1 b=$2
    [ "$(cd "$a" && ls)" = "$(cd "$b" && ls)" ] || fail "$3: other files: $(ls "$a") vs $(ls "$b")"
    for f in "$a"/*; do
        cmp -s "$f" "$b/$(basename "$f")" || fail "$3: $(basename "$f") differs"
    done
}

rm -rf "$work"
mkdir -p "$work/in/photo" "$work/in/logo" "$work/in/crop"
for i in 1 2 3 4 5; do
    cp "$photos/grace_hopper.jpg" "$work/in/photo/$i.jpg"
    cp "$photos/logo2.png" "$work/in/logo/$i.png"
done
# Distinct images, so that a batch in the wrong order cannot look right.
if /usr/bin/python3 -c "import PIL" 2>/dev/null; then
    /usr/bin/python3 - "$photos/grace_hopper.jpg" "$work/in/crop" <<'EOF'
import sys
from PIL import Image
photo = Image.open(sys.argv[1]).convert("RGB")
for i in range(4):
    box = (13 * i, 17 * i, 13 * i + 300 + 20 * i, 17 * i + 280 + 30 * i)
    photo.crop(box).save(f"{sys.argv[2]}/{i}.jpg", quality=70 + 7 * i)
EOF
else
    for i in 0 1 2 3; do cp "$photos/grace_hopper.jpg" "$work/in/crop/$i.jpg"; done
fi
head -c 20000 "$photos/grace_hopper.jpg" >"$work/in/photo/cut.jpg"
common=(--input "$work/in" --size 32 --batch 3 --seed 7)

expect 0 "1 thread" -- "$axon" prep "${common[@]}" --out "$work/t1" --threads 1
contains stdout "14 images written, 1 skipped"
expect 0 "2 threads" -- "$axon" prep "${common[@]}" --out "$work/t2" --threads 2
same_output "$work/t1" "$work/t2" "2 threads"

expect 0 "2 processes" -- $mpirun -np 2 "$axon" prep "${common[@]}" --out "$work/p2" --threads 1
same_output "$work/t1" "$work/p2" "2 processes"
contains stdout "14 images written, 1 skipped, 0 other files ignored; 3 labels"
contains stdout "5 batches written, 0 kept from an earlier run"
contains stdout "with 2 processes x 1 threads"
[ "$(grep -c "images written" "$work/stdout")" -eq 1 ] || fail "the summary is not printed once"
contains stderr "prep  images 15/15  batch 5/5"
contains stderr "warning: photo/cut.jpg: damaged JPEG"

expect 0 "2 processes x 2 threads" -- $mpirun -np 2 "$axon" prep "${common[@]}" --out "$work/p2t2" \
    --threads 2
same_output "$work/t1" "$work/p2t2" "2 processes x 2 threads"
expect 0 "3 processes" -- $mpirun -np 3 "$axon" prep "${common[@]}" --out "$work/p3"
same_output "$work/t1" "$work/p3" "3 processes"

# Resume under mpirun: batch 3 (rank 1's) deleted, remade identical.
rm "$work/p2/batch_00003.npy" "$work/p2/meta.json"
expect 0 "2 processes, rerun" -- $mpirun -np 2 "$axon" prep "${common[@]}" --out "$work/p2"
contains stdout "1 batches written, 4 kept from an earlier run"
same_output "$work/t1" "$work/p2" "rerun under mpirun"

# A failing rank takes the job down, naming itself.
# shellcheck disable=SC2016
expect nonzero "rank 1 without its input" -- $mpirun -np 2 sh -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then in="$0/nothing"; else in="$0/in"; fi
     exec "$1" prep --input "$in" --out "$0/f1" --size 32 --batch 3' "$work" "$axon"
contains stderr "rank 1 of 2: $work/nothing: No such file or directory"
[ ! -e "$work/f1/meta.json" ] || fail "a failed run wrote meta.json"

# The limit also binds Open MPI's own files in that process: its shared-memory
# transport's backing file then fails and the rank's message can be lost, so
# this run talks over TCP only (the loopback), which needs no files.
# shellcheck disable=SC2016
expect nonzero "rank 1 over the file size limit" -- $mpirun --mca btl self,tcp -np 2 sh -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then trap "" XFSZ; ulimit -f 8; fi
     exec "$1" prep --input "$0/in" --out "$0/f2" --size 32 --batch 3' "$work" "$axon"
contains stderr "rank 1 of 2: $work/f2/batch_00001.npy: cannot write: File too large"
[ ! -e "$work/f2/meta.json" ] || fail "a failed run wrote meta.json"
[ -z "$(find "$work/f2" -name '*.tmp.*')" ] || fail "a failed write left a temporary file"

mkdir -p "$work/f3/batch_00003.npy"
expect nonzero "rank 1 cannot write over a folder" -- $mpirun -np 2 "$axon" prep "${common[@]}" --out "$work/f3"
contains stderr "rank 1 of 2: $work/f3/batch_00003.npy: is a folder; give a file name"
[ ! -e "$work/f3/meta.json" ] || fail "a failed run wrote meta.json"

if [ "$failures" -ne 0 ]; then
    echo "prep_mpi: $failures check(s) failed"
    exit 1
fi
rm -rf "$work"
echo "prep_mpi: all checks passed"
