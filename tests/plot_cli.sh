#!/usr/bin/env bash
# plot_cli.sh: `axon plot METRICS.jsonl --out FILE.png` draws what axon train
# --metrics wrote.
#
#   bash tests/plot_cli.sh /path/to/axon WORKDIR
#
# Proves that the PNG is a whole, valid PNG of the size asked for (every
# chunk's CRC, the IHDR size, the pixel data inflating to height rows of the
# width, not one flat colour), read by Python's zlib and struct, not by
# gnuplot; that the data gnuplot drew (the --script copy, data inline) is the
# metrics file's every value, null as missing, for a classification run with
# validation and test sets and for a regression run (no accuracy panel); that
# the script redraws the same picture; and the refusals: a missing or
# corrupt file (its line named), no gnuplot on PATH, an output that is the
# input, each leaving an existing --out as it was. Exits 77 without gnuplot's
# pngcairo terminal or Python (after the checks that need neither).
set -u
. "$(dirname "$0")/test_python.sh"

. "$(dirname "$0")/cli_check.sh"
cli_check_begin plot_cli.sh "$@"

# refuse NAME STATUS TEXT... -- COMMAND: refuse_keeping_picture (cli_check.sh), the
# temporaries looked for under the work folder.
plot_temporaries="axon-plot.*"
refuse() { refuse_keeping_picture "$@"; }
export TMPDIR="$PWD" # the temporaries, to see that none is left

# ----------------------------------------- the refusals that need no gnuplot
cat > corrupt.jsonl <<'JSON'
{"epoch":1,"train_loss":0.5,"val_loss":null,"test_loss":0.4,"test_accuracy":0.8}
{"epoch":2,"train_loss":0.4,"val_loss":null,"test_loss":0.3,"test_accuracy":0.9}
{"epoch":3,"train_loss":0.3,"val_lo
JSON
printf '{"epoch":1,"train_loss":"low"}\n' > string.jsonl
refuse "a missing metrics file" 1 "missing.jsonl" "no such file" -- \
    "$AXON" plot missing.jsonl --out keep.png
refuse "a cut-off line, named" 1 "corrupt.jsonl: line 3" -- "$AXON" plot corrupt.jsonl --out keep.png
refuse "a loss that is not a number" 1 "string.jsonl: line 1" "train_loss" -- \
    "$AXON" plot string.jsonl --out keep.png
refuse "the output is the input" 1 "--out" "the metrics file" -- \
    "$AXON" plot keep.png --out keep.png
refuse "no --out" 2 "--out" -- "$AXON" plot corrupt.jsonl
refuse "a size out of range" 2 "--size" -- "$AXON" plot corrupt.jsonl --out keep.png --size 5x5
mkdir -p empty_path
cat > good.jsonl <<'JSON'
{"epoch":1,"train_loss":0.5,"val_loss":null,"test_loss":0.4,"test_accuracy":0.8}
JSON
refuse "no gnuplot on PATH" 1 "gnuplot" "apt-get install gnuplot-nox" -- \
    env PATH="$PWD/empty_path" "$AXON" plot good.jsonl --out keep.png

if ! command -v gnuplot > /dev/null || ! gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then
    echo "$failures failed"
    [ "$failures" -eq 0 ] || exit 1
    echo "SKIPPED: gnuplot with the pngcairo terminal is not installed (apt-get install gnuplot-nox)"
    exit 77
fi
if ! has_python zlib; then
    echo "$failures failed"
    [ "$failures" -eq 0 ] || exit 1
    echo "SKIPPED: no $PYTHON to check the PNG"
    exit 77
fi

# ------------------------------------------------------------- the drawings
# Two Gaussian blobs, 4 features, the class in column 0.
awk 'BEGIN {
    srand(7);
    for (i = 0; i < 160; i++) {
        c = i % 2; line = c;
        for (j = 0; j < 4; j++) {
            u = rand(); v = rand(); if (u < 1e-12) u = 1e-12;
            line = line "," sprintf("%.5f", 2 * c - 1 + sqrt(-2 * log(u)) * cos(6.283185307 * v));
        }
        print line;
    }
}' > blobs.csv
# checks METRICS PNG SCRIPT WIDTH HEIGHT PANELS: the picture and the data.
check() {
    "$PYTHON" - "$@" <<'PY'
import json, math, struct, sys, zlib
metrics, picture, script, width, height, panels = sys.argv[1:7]
width, height, panels = int(width), int(height), int(panels)
data = open(picture, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
at, chunks = 8, []
while at < len(data):
    length, kind = struct.unpack(">I4s", data[at:at + 8])
    body = data[at + 8:at + 8 + length]
    crc, = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
    assert zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind}"
    chunks.append((kind, body))
    at += 12 + length
assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", "IHDR first, IEND last"
w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
assert (w, h) == (width, height), f"{w}x{h}, asked {width}x{height}"
channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
assert depth == 8 and interlace == 0, (depth, interlace)
pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
row = 1 + w * channels
assert len(pixels) == h * row, f"{len(pixels)} bytes of pixels for {h} rows of {row}"
assert len(set(pixels[1::7])) > 8, "the picture is nearly one colour"

# The drawn data: the datablock of the script, against the metrics file.
keys = ["train_loss", "val_loss", "test_loss", "val_accuracy", "test_accuracy"]
text = open(script).read()
block = text.split("$metrics << EOD\n", 1)[1].split("EOD\n", 1)[0].splitlines()
assert block[0].split()[2:] == keys, block[0]
rows = [line.split() for line in block[1:]]
records = [json.loads(line) for line in open(metrics) if line.strip()]
assert len(rows) == len(records), f"{len(rows)} data lines for {len(records)} epochs"
for fields, record in zip(rows, records):
    assert int(fields[0]) == record["epoch"]
    for key, field in zip(keys, fields[1:]):
        value = record.get(key)
        drawn = None if field == "?" else float(field)
        assert drawn == value, f"epoch {record['epoch']} {key}: drew {field}, file has {value}"
drawn_columns = {int(c) for c in __import__("re").findall(r"using 1:(\d)", text)}
recorded = {i + 2 for i, key in enumerate(keys) if any(r.get(key) is not None for r in records)}
assert drawn_columns == recorded, f"curves drawn {drawn_columns}, recorded {recorded}"
assert f"layout 1,{panels}" in text, f"not {panels} panel(s)"
PY
}

if "$AXON" train --data blobs.csv --test blobs.csv --val-split 0.25 --epochs 6 --batch 16 \
        --metrics class.jsonl --out class.safetensors --quiet > train.txt 2>&1; then
    run "$AXON" plot class.jsonl --out class.png --size 640x320 --script class.gp
    if [ "$rc" -ne 0 ]; then
        fail "plot a classification run: exit status $rc: $(cat err.txt)"
    elif check class.jsonl class.png class.gp 640 320 2 2> py.txt; then
        ok "a classification run: a valid 640x320 PNG of the file's every value, two panels"
    else
        fail "a classification run: $(tail -1 py.txt)"
    fi
    # The script alone redraws the same picture (it names class.png).
    cp class.png first.png
    if gnuplot class.gp 2> gp.txt && cmp -s first.png class.png; then
        ok "the --script copy redraws the same picture"
    else
        fail "gnuplot class.gp did not redraw class.png: $(tail -1 gp.txt)"
    fi
else
    fail "axon train for the classification run: $(tail -3 train.txt)"
fi

if "$AXON" train --data synth:linear --rows 400 --features 3 --test synth:linear --epochs 4 \
        --metrics regression.jsonl --out regression.safetensors --quiet > train.txt 2>&1; then
    run "$AXON" plot regression.jsonl --out regression.png --script regression.gp
    if [ "$rc" -ne 0 ]; then
        fail "plot a regression run: exit status $rc: $(cat err.txt)"
    elif check regression.jsonl regression.png regression.gp 1000 400 1 2> py.txt; then
        ok "a regression run: loss alone, the default 1000x400"
    else
        fail "a regression run: $(tail -1 py.txt)"
    fi
else
    fail "axon train for the regression run: $(tail -3 train.txt)"
fi

# The curve data must be checked for real: a changed value is caught.
if [ -f class.gp ]; then
    sed '0,/^1 /s/^1 \([^ ]*\)/1 9\1/' class.gp > altered.gp
    if check class.jsonl class.png altered.gp 640 320 2 2> /dev/null; then
        fail "check() accepted a script whose first train loss was altered"
    else
        ok "check() catches an altered value"
    fi
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
