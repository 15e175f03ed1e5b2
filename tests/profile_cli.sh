#!/bin/bash
# profile_cli.sh: `axon train --profile --profile-json` and `axon info --peak
# [--json]` checked for structure and sanity, never for speed (no verdict
# depends on how fast or busy the machine is):
# - the printed table has one row per operation of the JSON, its shares add
#   up to 100 % (each printed to 0.1 %), the GEMM share line is the sum of
#   the GEMM rows; in the JSON the shares add up to 1, every operation was
#   called, exactly the operations named GEMM are marked gemm, and the run's
#   GFLOP/s, the peak and the GEMM rate are positive and finite;
# - a convolutional network's profile (images written here as .npy with the
#   standard library): its convolutions' passes are rows of their own
#   (forward, weight gradient; input gradient but for the first layer),
#   marked gemm, with a rate and a share of the peak; pooling rows are not
#   GEMMs and do no FLOPs; the shares still add up to 100 %; the convolution
#   share is the sum of the convolution rows and its rates are positive and
#   below the hardware's ceiling (FLOP counts gone wrong would pass it);
# - info --peak --json: every figure positive and finite, float64's peak half
#   of float32's, float32's lanes x 2 x pipes x clock x cores, no float32
#   rate (float64's doubled) above it by more than 10 % (LeNet's
#   convolution rates where no pass runs Winograd's fewer products:
#   conv_lenet_winograd), the LeNet convolution rates below the ceiling;
#   the text form has its theoretical,
#   FMA-loop, four GEMM-rate lines and the convolution-rate line.
# - the convolutional network's profile: no rate in it above the peak by
#   more than 10 % (the peak's pipes raised by what the run reached).
# JSON is read with Python's standard library only (no NumPy).
#
# usage: profile_cli.sh AXON WORKDIR DATA.csv
set -u
axon=$1
work=$2
data=$3
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIPPED: profile_cli needs $python (its json module) to read the reports"; exit 77; }
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "profile_cli: FAIL: $*" >&2; exit 1; }

"$axon" train --data "$data" --layers 6:tanh,3:softmax --epochs 3 --batch 8 --seed 3 \
    --profile --profile-json profile.json > train.out 2>&1 || { cat train.out; fail "axon train --profile failed"; }
grep -q "^profile (" train.out || fail "no profile table in the output"
# The table's rows: from the header line to the GEMMs line.
awk '/^  operation /{on=1; next} /^  GEMMs:/{on=0} on' train.out > table.txt
[ -s table.txt ] || fail "the profile table has no rows"
"$python" - profile.json table.txt train.out <<'EOF' || fail "the profile report"
import json, math, re, sys
report = json.load(open(sys.argv[1]))
rows = open(sys.argv[2]).read().splitlines()
text = open(sys.argv[3]).read()
ops = report["operations"]
problems = []
if len(rows) != len(ops):
    problems.append("%d table rows, %d operations in the JSON" % (len(rows), len(ops)))
printed = [float(re.search(r"([0-9.]+)%", row).group(1)) for row in rows]
if abs(sum(printed) - 100.0) > 0.05 * len(printed) + 1e-9:
    problems.append("the printed shares add up to %.2f %%" % sum(printed))
shares = sum(op["share"] for op in ops)
if abs(shares - 1.0) > 1e-6 * len(ops):
    problems.append("the JSON shares add up to %.8f" % shares)
gemm = sum(op["share"] for op in ops if op["gemm"])
if abs(gemm - report["gemm_share"]) > 1e-6 * len(ops):
    problems.append("gemm_share %.6f, the GEMM operations' shares %.6f" % (report["gemm_share"], gemm))
line = re.search(r"GEMMs: ([0-9.]+)% of the time", text)
if not line or abs(float(line.group(1)) - 100.0 * report["gemm_share"]) > 0.051:
    problems.append("the GEMMs line does not give gemm_share")
for op in ops:
    if op["calls"] < 1 or not op["name"] or op["gemm"] != ("GEMM" in op["name"]):
        problems.append("operation %r" % op)
    if not (op["total_seconds"] >= 0 and op["share"] >= 0):
        problems.append("operation %r" % op)
for key in ("achieved_gflops", "peak_gflops", "gemm_rate_gflops"):
    if not (math.isfinite(report[key]) and report[key] > 0):
        problems.append("%s is %r" % (key, report[key]))
if report["batch"] != 8:
    problems.append("batch %r" % report["batch"])
for p in problems:
    print("profile_cli:", p, file=sys.stderr)
print("profile: %d operations, shares add up to 100 %%" % len(ops))
sys.exit(1 if problems else 0)
EOF

# A small convolutional network on 8x8x1 images.
"$python" - <<'EOF' || fail "writing the images"
import struct
def save(path, dtype, shape, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), {"<f4": "f", "<i8": "q"}[dtype]), *values))
n = 64
labels = [i % 3 for i in range(n)]
pixels = [((i * 37 + j * 11) % 17) / 17.0 + (1.0 if j // 8 in (2 * labels[i], 2 * labels[i] + 1) else 0.0)
          for i in range(n) for j in range(64)]
save("images.npy", "<f4", (n, 8, 8, 1), pixels)
save("labels.npy", "<i8", (n,), labels)
EOF
"$axon" train --data images.npy --labels labels.npy --layers conv:4x3x3:relu,maxpool:2,conv:6x2x2:relu,8:relu,3:softmax \
    --epochs 2 --batch 16 --seed 3 --profile --profile-json conv_profile.json > conv_train.out 2>&1 ||
    { cat conv_train.out; fail "axon train --profile of a convolutional network failed"; }
awk '/^  operation /{on=1; next} /^  GEMMs:/{on=0} on' conv_train.out > conv_table.txt
"$python" - conv_profile.json conv_table.txt conv_train.out <<'EOF' || fail "the convolutional profile report"
import json, math, os, re, sys
report = json.load(open(sys.argv[1]))
rows = open(sys.argv[2]).read().splitlines()
text = open(sys.argv[3]).read()
ops = {op["name"]: op for op in report["operations"]}
problems = []
if len(rows) != len(ops):
    problems.append("%d table rows, %d operations in the JSON" % (len(rows), len(ops)))
printed = [float(re.search(r"([0-9.]+)%", row).group(1)) for row in rows]
if abs(sum(printed) - 100.0) > 0.05 * len(printed) + 1e-9:
    problems.append("the printed shares add up to %.2f %%" % sum(printed))
expected = ["layer 1 conv forward", "layer 1 conv weight gradient",
            "layer 3 conv forward", "layer 3 conv weight gradient",
            "layer 3 conv input gradient"]
for name in expected:
    op = ops.get(name)
    if not op or not op["gemm"] or not op["gflop"] > 0:
        problems.append("no GEMM row %r with FLOPs" % name)
if "layer 1 conv input gradient" in ops:
    problems.append("the first layer's input gradient was computed")
for name in ("layer 2 pooling forward", "layer 2 pooling backward"):
    op = ops.get(name)
    if not op or op["gemm"] or op["gflop"] != 0:
        problems.append("pooling row %r: %r" % (name, op))
conv = [op for name, op in ops.items() if " conv " in name]
if abs(sum(op["share"] for op in conv) - report["conv_share"]) > 1e-6 * len(ops):
    problems.append("conv_share is not the sum of the convolution rows")
# lanes x 2 x 2 pipes x 6 GHz x cores: no CPU's float32 rate reaches it
ceiling = 16 * 2 * 2 * 6.0 * os.cpu_count()
for key in ("conv_rate_gflops", "conv_forward_gflops", "conv_weight_gradient_gflops",
            "conv_input_gradient_gflops", "achieved_gflops", "peak_gflops"):
    if not (math.isfinite(report[key]) and 0 < report[key] < ceiling):
        problems.append("%s is %r (ceiling %g)" % (key, report[key], ceiling))
# no rate of the report above the peak by more than ax_peak_at_least's
# slack: a peak measured in a slow moment is raised by what the run reached
rates = [op["gflop"] / op["total_seconds"] for op in ops.values() if op["gflop"] > 0 and op["total_seconds"] > 0]
rates += [report[k] for k in ("conv_rate_gflops", "conv_forward_gflops", "conv_weight_gradient_gflops",
                              "conv_input_gradient_gflops", "gemm_rate_gflops")]
if max(rates) > 1.1 * report["peak_gflops"] * (1 + 1e-6):
    problems.append("a rate of %g above the peak %g and its 10 %% slack" % (max(rates), report["peak_gflops"]))
for row in rows:
    if " conv " in row and not re.search(r"[0-9.]+%\s+[0-9.]+\s+[0-9.]+%$", row):
        problems.append("convolution row without a rate and a share of the peak: %r" % row)
if not re.search(r"convolutions: [0-9.]+% of the time, [0-9.]+ GFLOP/s while in them", text):
    problems.append("no convolutions line")
for p in problems:
    print("profile_cli:", p, file=sys.stderr)
print("conv profile: %d operations, convolution rows and rates in place" % len(ops))
sys.exit(1 if problems else 0)
EOF

"$axon" info --peak --json > info.json 2>info.err || { cat info.err; fail "axon info --peak --json failed"; }
"$python" - info.json <<'EOF' || fail "axon info --peak --json"
import json, math, sys
lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
peak = [d for d in lines if "peak_f32_gflops" in d]
if len(peak) != 1:
    sys.exit("profile_cli: no peak object in axon info --peak --json")
p = peak[0]
raised = p.pop("pipes_from_products", None)
winograd = p.pop("conv_lenet_winograd", None)
problems = [k for k, v in p.items() if isinstance(v, bool) or
            not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0)]
for name, flag in (("pipes_from_products", raised), ("conv_lenet_winograd", winograd)):
    if not isinstance(flag, bool):
        problems.append("%s %r, not true or false" % (name, flag))
# Winograd's passes count a direct convolution's FLOPs, 3-6x the products
# made: their rates (and the three passes' together) may pass the peak
direct = [k for k in p if k.startswith("conv_lenet_") and not winograd]
# every float32 rate (float64's doubled) within the peak's 10 % slack
# (ax_peak_at_least): a loop run in a slow moment raises the pipes
seen = max([p[k] for k in direct] + [p[k] for k in p if k.endswith("_f32") and k.startswith("gemm_")] +
           [2 * p[k] for k in p if k.startswith("gemm_") and k.endswith("_f64")])
if seen > 1.1 * p["peak_f32_gflops"] + 0.1:
    problems.append("a rate of %g above the peak %g and its 10 %% slack" % (seen, p["peak_f32_gflops"]))
expected = p["vector_bits"] / 32 * 2 * p["fma_units"] * p["clock_ghz"] * p["cores"]
# clock_ghz is printed to 0.001 GHz, the peaks to 0.1 GFLOP/s
if abs(p["peak_f32_gflops"] - expected) > 0.05 + expected * 0.0005 / p["clock_ghz"]:
    problems.append("peak_f32_gflops %g, lanes x 2 x pipes x clock x cores %g" % (p["peak_f32_gflops"], expected))
if abs(p["peak_f64_gflops"] - p["peak_f32_gflops"] / 2) > 0.1:
    problems.append("peak_f64_gflops is not half of float32's")
import os
ceiling = 16 * 2 * 2 * 6.0 * os.cpu_count() # lanes x 2 x 2 pipes x 6 GHz x cores
# (Winograd's forward pass makes 1/6.25 of a direct one's products)
for k in ("conv_lenet_f32", "conv_lenet_forward_f32", "conv_lenet_weight_gradient_f32",
          "conv_lenet_input_gradient_f32"):
    if not p.get(k, 0) < ceiling * (1 if k in direct else 6.25):
        problems.append("%s %r, not below %g" % (k, p.get(k), ceiling))
if p["vector_bits"] not in (256, 512):
    problems.append("vector_bits %r" % p["vector_bits"])
for k in problems:
    print("profile_cli: info --peak --json:", k, file=sys.stderr)
print("info --peak: %d figures, all positive and finite" % len(p))
sys.exit(1 if problems else 0)
EOF

"$axon" info --peak > info.txt 2>&1 || { cat info.txt; fail "axon info --peak failed"; }
grep -q "^  theoretical " info.txt || fail "axon info --peak: no theoretical peak line"
grep -q "^  FMA loop " info.txt || fail "axon info --peak: no FMA loop line"
[ "$(grep -c '^  GEMM rate ' info.txt)" = 4 ] || fail "axon info --peak: not four GEMM rate lines"
grep -q "^  conv rate     LeNet" info.txt || fail "axon info --peak: no convolution rate line"
echo "profile_cli: passed"
