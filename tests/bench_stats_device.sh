#!/bin/bash
# bench_stats_device.sh: axon bench tensor-mean and entropy-mi against a
# device (--device opencl: PoCL in CI), checked for structure and sanity, with
# no verdict on speed:
#  - sizes given out of order come back ascending, one table line each, with
#    the CPU, whole-call and kernel times positive, the table's CPU and GPU
#    ms those of the CSV's rows (1 sample: the mean is the sample), and the
#    speedup columns CPU ms / GPU ms and CPU ms / kernel ms;
#  - the two crossover lines say what the CSV's times say (the smallest size
#    from which the device is faster at every larger size, or none);
#  - --csv: the header, then per size and sample the rows axon, axon-opencl
#    and axon-opencl-kernels, samples/s = rows / seconds, tensor-mean's
#    GFLOP/s its 2 N D^3 FLOPs per second (docs/stats.md), entropy-mi's none.
# First, on the CPU, --sizes is refused (exit 2, naming --sizes) when a size
# is 0, missing between or after commas, not a number, or one of 33.
# The device part is skipped, saying so, without an OpenCL device.
#
# usage: bench_stats_device.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "bench_stats_device: FAIL: $*" >&2; exit 1; }

sizes33=$(seq -s, 1 33)
for bad in 0 8,,16 8, abc "$sizes33"; do
    "$axon" bench tensor-mean --sizes "$bad" --repeat 1 --min-time 0 > out.txt 2> err.txt
    status=$?
    [ "$status" = 2 ] || fail "--sizes '$bad': exit status $status, not 2"
    grep -q -- "--sizes" err.txt || fail "--sizes '$bad': the message does not name --sizes: $(cat err.txt)"
    [ ! -s out.txt ] || fail "--sizes '$bad': a table was printed"
done
echo "--sizes: bad lists refused"

if ! "$axon" info | grep -q '^  opencl:0 '; then
    echo "SKIPPED (device part): no OpenCL device in axon info"
    exit 0
fi

for workload in tensor-mean entropy-mi; do
    d=8
    "$axon" bench "$workload" --device opencl --sizes 64,16 --d $d --repeat 1 --min-time 0.001 \
        --threads 2 --csv "$workload.csv" > "$workload.log" 2>&1 ||
        { cat "$workload.log"; fail "axon bench $workload --device opencl"; }
    grep -q "^axon bench $workload: D = $d, CPU (2 thread(s)) and device opencl:0 (" "$workload.log" ||
        { cat "$workload.log"; fail "$workload: the heading does not name D, the CPU's threads and opencl:0"; }
    # the table's lines: size, CPU ms, GPU ms, kernel ms, copy in, copy out, speedup, kernels
    awk '/^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+x$/' "$workload.log" > table.txt
    [ "$(cut -c1-10 table.txt | tr -d ' ' | tr '\n' ,)" = "16,64," ] ||
        { cat "$workload.log"; fail "$workload: the table's sizes are not 16, 64 (ascending)"; }
    [ "$(head -n 1 "$workload.csv")" = "system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,test_accuracy,gflops,samples_per_second" ] ||
        fail "$workload: no header line in the CSV"
    [ "$(tail -n +2 "$workload.csv" | cut -d, -f3 | tr '\n' ' ')" = "axon axon-opencl axon-opencl-kernels axon axon-opencl axon-opencl-kernels " ] ||
        { cat "$workload.csv"; fail "$workload: the CSV's rows are not axon, axon-opencl, axon-opencl-kernels per size"; }
    # CSV rows against the formulas, then against the table and the crossover lines
    tail -n +2 "$workload.csv" | awk -F, -v w="$workload" -v d=$d '
        function abs(x) { return x < 0 ? -x : x }
        NF != 14 || $2 != w || $4 != "f32" || $7 != d || $8 != 1 || !($10 > 0) {
            print w ": a row not of this run: " $0; bad = 1 }
        abs($14 * $10 - $6) > 1e-3 * $6 { print w ": samples/s x seconds is not " $6 ": " $0; bad = 1 }
        w == "tensor-mean" && abs($13 * 1e9 * $10 / (2 * $6 * d * d * d) - 1) > 1e-4 {
            print w ": GFLOP/s is not 2 N D^3 / seconds: " $0; bad = 1 }
        w == "entropy-mi" && $13 != "" { print w ": a GFLOP/s for entropy-mi: " $0; bad = 1 }
        END { exit bad }' || fail "$workload: CSV rows"
    awk -v w="$workload" '
        function abs(x) { return x < 0 ? -x : x }
        FNR == 1 { file++ }
        file == 1 && FNR > 1 { split($0, f, ","); t[f[6], f[3]] = f[10] }
        file == 2 { n++; size[n] = $1; cpu_ms[n] = $2; gpu_ms[n] = $3; kernel_ms[n] = $4; up[n] = $7; ku[n] = $8 }
        file == 3 && /^crossover, with the copies:/ { copies = $0 }
        file == 3 && /^crossover, kernels alone/ { kernels = $0 }
        END {
            for (i = 1; i <= n; i++) {
                s = size[i]; cpu = t[s, "axon"]; gpu = t[s, "axon-opencl"]; kern = t[s, "axon-opencl-kernels"]
                if (!(cpu > 0 && gpu > 0 && kern > 0)) { print w ": no CSV times of size " s; bad = 1; continue }
                if (abs(cpu_ms[i] - 1e3 * cpu) > 6e-5 || abs(gpu_ms[i] - 1e3 * gpu) > 6e-5 ||
                    abs(kernel_ms[i] - 1e3 * kern) > 6e-5) { print w ": size " s ": table ms are not the CSV seconds"; bad = 1 }
                sub(/x$/, "", up[i]); sub(/x$/, "", ku[i])
                if (abs(up[i] - cpu / gpu) > 0.0051 || abs(ku[i] - cpu / kern) > 0.0051) {
                    print w ": size " s ": speedups " up[i] ", " ku[i] " are not " cpu / gpu ", " cpu / kern; bad = 1 }
            }
            # the crossover: from the largest size down while the device is faster
            for (k = 0; k < 2; k++) {
                from = -1
                for (i = n; i >= 1; i--) {
                    s = size[i]; dev = k ? t[s, "axon-opencl-kernels"] : t[s, "axon-opencl"]
                    if (!(dev < t[s, "axon"])) break
                    from = s
                }
                line = k ? kernels : copies
                if (from < 0) want = "the CPU is faster at the largest size swept"
                else if (from == size[1]) want = "the GPU is faster at every size swept"
                else want = "the GPU is faster from"
                named = from < 0 || index(line, " = " from " on") || index(line, " = " from ")")
                if (index(line, want) == 0 || !named) {
                    print w ": crossover line \"" line "\", expected \"" want "\" (from " from ")"; bad = 1 }
            }
            exit bad
        }' "$workload.csv" table.txt "$workload.log" || { cat "$workload.log" "$workload.csv"; fail "$workload: table against the CSV"; }
    echo "$workload --device opencl: table, crossover and CSV agree"
done
echo "bench_stats_device: OK"
