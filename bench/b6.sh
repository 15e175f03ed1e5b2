#!/bin/bash
# b6.sh: benchmark B6 (docs/prep.md, "Benchmark B6"): `axon prep` against
# bench/peers/b6_pillow.py (Python + Pillow multiprocessing doing the same
# work, with Image.draft's JPEG DCT scaling) on the same photographs, run
# alternately round by round so machine noise falls on both alike.
#
# Corpus (made once in WORK/corpus, deterministic): real photographs shipped
# by Debian, python3-scipy's face.dat (1024 x 768, a raccoon) and
# python-matplotlib-data's grace_hopper.jpg (512 x 600), cut into crops with
# shorter sides of 300 to 768 pixels and re-encoded as JPEG at qualities 75 to
# 95 (4:2:0, as cameras and ImageNet), in 10 label folders.
#
# For each round, each of 1 and 2 workers (threads for axon, processes for
# Pillow), and 2 MPI ranks x 1 thread for axon (when built with MPI), it runs
# the command once into a fresh folder and prints wall seconds, images/s,
# CPU seconds (user + sys, children included) and images per CPU-second (the
# "per core" figure, honest even where a Python main process adds a core),
# then the median per configuration and the axon / Pillow ratios.
#
# usage: bench/b6.sh [--axon PATH] [--images N] [--size S] [--batch K]
#                    [--rounds R] [--work DIR]
#   defaults: build/axon, 1200 images, S = 256, K = 256, 3 rounds, /tmp/axon_b6
set -u
cd "$(dirname "$0")/.."
axon=build/axon images=1200 size=256 batch=256 rounds=3 work=/tmp/axon_b6
while [ $# -gt 0 ]; do
    case $1 in
    --axon) axon=$2; shift ;;
    --images) images=$2; shift ;;
    --size) size=$2; shift ;;
    --batch) batch=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --work) work=$2; shift ;;
    *) echo "usage: $0 [--axon PATH] [--images N] [--size S] [--batch K] [--rounds R] [--work DIR]" >&2
       exit 2 ;;
    esac
    shift
done
python=/usr/bin/python3
[ -x "$axon" ] || { echo "b6.sh: no axon binary at $axon (build it, or give --axon PATH)" >&2; exit 2; }
bash bench/setup_peers.sh # NumPy, SciPy, PyTorch, Pillow from Debian, if missing
face=/usr/lib/python3/dist-packages/scipy/misc/face.dat
hopper=/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg
for f in "$face" "$hopper"; do
    [ -f "$f" ] || { echo "b6.sh: $f is missing (apt-get install python3-scipy python-matplotlib-data)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

corpus=$work/corpus_${images}
if [ ! -f "$corpus/.complete" ]; then
    rm -rf "$corpus"
    mkdir -p "$corpus"
    "$python" - "$face" "$hopper" "$corpus" "$images" <<'EOF' || exit 1
import bz2, random, sys
import numpy as np
from PIL import Image
face_path, hopper_path, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
face = Image.fromarray(np.frombuffer(bz2.decompress(open(face_path, "rb").read()),
                                     np.uint8).reshape(768, 1024, 3))
hopper = Image.open(hopper_path).convert("RGB")
rng = random.Random(6)
for i in range(count):
    photo = face if i % 3 else hopper
    w, h = photo.size
    short = rng.randint(300, min(w, h))
    long = min(int(short * rng.uniform(1.2, 1.5)), max(w, h))
    cw, ch = (long, short) if w >= h else (short, long)
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    crop = photo.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
    label = f"{out}/class{i % 10:02d}"
    if i < 10:
        import os; os.makedirs(label, exist_ok=True)
    crop.save(f"{label}/{i:05d}.jpg", quality=rng.randint(75, 95))
EOF
    touch "$corpus/.complete"
fi
echo "b6: corpus $corpus: $images JPEGs, $(du -sh "$corpus" | cut -f1); S = $size, K = $batch"
echo "b6: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"

configs="axon:1 pillow:1 axon:2 pillow:2"
mpi=0
if command -v mpirun >/dev/null && ldd "$axon" | grep -q libmpi; then
    configs="$configs axon-mpi:2"
    mpi=1
fi
results=$work/results.txt
: >"$results"
TIMEFORMAT="%R %U %S"
run() { # run CONFIG ROUND: one timed run, appends "config wall cpu" to results
    local config=$1 out=$work/out
    local system=${config%%:*} n=${config##*:}
    rm -rf "$out"
    local cmd
    case $system in
    axon) cmd=("$axon" prep --input "$corpus" --out "$out" --size "$size" --batch "$batch"
               --threads "$n" --quiet) ;;
    axon-mpi) cmd=(mpirun --oversubscribe -np "$n" "$axon" prep --input "$corpus" --out "$out"
                   --size "$size" --batch "$batch" --threads 1 --quiet) ;;
    pillow) cmd=("$python" bench/peers/b6_pillow.py --input "$corpus" --out "$out"
                 --size "$size" --batch "$batch" --processes "$n" --profile) ;;
    esac
    local times
    times=$( { time "${cmd[@]}" >"$work/stdout" 2>"$work/stderr"; } 2>&1 ) ||
        { echo "b6: $config failed: $(cat "$work/stderr")" >&2; exit 1; }
    read -r wall user sys <<<"$times"
    local cpu
    cpu=$(echo "$user + $sys" | bc -l)
    echo "$config $wall $cpu" >>"$results"
    local written
    written=$(grep -o '[0-9]* images written' "$work/stdout" | head -1 | cut -d' ' -f1)
    [ "$written" = "$images" ] || { echo "b6: $config wrote $written of $images images" >&2; exit 1; }
    printf "  %-11s wall %6.2f s  %6.1f images/s  cpu %6.2f s  %6.1f images/cpu-s\n" "$config" \
        "$wall" "$(echo "$images / $wall" | bc -l)" "$cpu" "$(echo "$images / $cpu" | bc -l)"
    grep -h "thread-seconds\|worker-seconds" "$work/stdout" | sed 's/^/      /'
}
for round in $(seq 1 "$rounds"); do
    echo "round $round"
    for config in $configs; do run "$config" "$round"; done
done

echo
echo "B6 medians over $rounds rounds ($images images, S = $size, K = $batch):"
printf "| system | workers | images/s | images/s per worker | images per CPU-second |\n"
printf "| --- | --- | --- | --- | --- |\n"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
declare -A rate per_cpu
for config in $configs; do
    n=${config##*:}
    rate[$config]=$(awk -v c="$config" -v n="$images" '$1 == c {print n / $2}' "$results" | median)
    per_cpu[$config]=$(awk -v c="$config" -v n="$images" '$1 == c {print n / $3}' "$results" | median)
    printf "| %s | %s | %.1f | %.1f | %.1f |\n" "${config%%:*}" "$n" "${rate[$config]}" \
        "$(echo "${rate[$config]} / $n" | bc -l)" "${per_cpu[$config]}"
done
echo
for n in 1 2; do
    printf "ratio axon / Pillow, %d worker(s): %.2fx images/s, %.2fx images per CPU-second\n" "$n" \
        "$(echo "${rate[axon:$n]} / ${rate[pillow:$n]}" | bc -l)" \
        "$(echo "${per_cpu[axon:$n]} / ${per_cpu[pillow:$n]}" | bc -l)"
done
if [ $mpi = 1 ]; then
    printf "ratio axon 2 MPI ranks / Pillow 2 processes: %.2fx images/s\n" \
        "$(echo "${rate[axon-mpi:2]} / ${rate[pillow:2]}" | bc -l)"
fi
rm -rf "$work/out"
