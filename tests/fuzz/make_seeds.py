#!/usr/bin/python3
"""make_seeds.py AXON: writes the seed corpora of fuzz_checkpoint and
fuzz_options into tests/fuzz/corpus/ (the other targets' seeds come from
scripts/fuzz_corpus.py).

checkpoint/: real checkpoints from short `axon train --checkpoint-every 1`
runs on tiny synth:linear data (SGD float32, Adam float64 with dropout,
early stopping with its best weights; one of them made into a stop inside
an epoch, with the epoch's shuffled order), then variants of them that the reader
must refuse: truncated, a lying header length, edited metadata (format,
missing sections, wrong types, out-of-range counters, a zero random state,
a layout of 2^48 weights the file does not hold), wrong tensor shapes, a NaN
weight, an order that is not a permutation.

options/: argument vectors (NUL-separated words) as `axon train` gets
them: real command lines and the usual mistakes."""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def split(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def join(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def edit(blob, section, **changes):
    """The checkpoint with fields of one metadata section replaced (None deletes)."""
    header, data = split(blob)
    meta = header["__metadata__"]
    if section is None:
        for key, value in changes.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
    else:
        fields = json.loads(meta[section])
        for key, value in changes.items():
            if value is None:
                fields.pop(key, None)
            else:
                fields[key] = value
        meta[section] = json.dumps(fields, separators=(",", ":"))
    return join(header, data)


def tensor_edit(blob, name, **changes):
    header, data = split(blob)
    header[name].update(changes)
    return join(header, data)


def train(axon, work, prefix, *options):
    subprocess.run([axon, "train", "--threads", "1", "--quiet", "--checkpoint", prefix, *options],
                   cwd=work, check=True)


def mid_epoch(blob, rows):
    """The checkpoint as a stop inside its next epoch writes it: batch > 0
    and the epoch's shuffled order as an F64 tensor "order" (a SIGTERM lands
    inside an epoch only when epochs last longer than the progress interval,
    0.2 s, which takes a data set too big for a seed)."""
    header, data = split(blob)
    data += b"\0" * (-len(data) % 8)
    order = [(7 * i + 3) % rows for i in range(rows)]  # a permutation: 7 and rows coprime
    header["order"] = {"dtype": "F64", "shape": [rows],
                       "data_offsets": [len(data), len(data) + 8 * rows]}
    data += struct.pack("<%dd" % rows, *order)
    blob = join(header, data)
    return edit(blob, "state", batch=2, loss_sum=float(1.5).hex())


def checkpoint_seeds(axon):
    seeds = {}
    with tempfile.TemporaryDirectory() as work:
        synth = ["--data", "synth:linear", "--rows", "40", "--features", "3"]
        train(axon, work, "sgd", *synth, "--layers", "4:relu,1", "--epochs", "2", "--batch", "8",
              "--checkpoint-every", "1")
        train(axon, work, "adam", *synth, "--layers", "3:tanh,1", "--optimizer", "adam",
              "--epochs", "3", "--batch", "16", "--checkpoint-every", "1", "--precision", "f64",
              "--dropout", "0.1")
        train(axon, work, "early", "--data", "synth:linear", "--rows", "50", "--features", "2",
              "--layers", "2:sigmoid,1", "--epochs", "4", "--batch", "10", "--lr", "0.01",
              "--val-split", "0.2", "--early-stop", "2", "--checkpoint-every", "2", "--nesterov",
              "--l2", "0.001")
        train(axon, work, "cg", *synth, "--layers", "3:tanh,1", "--optimizer", "cg", "--batch", "0",
              "--epochs", "3", "--checkpoint-every", "1")
        train(axon, work, "lbfgs", *synth, "--layers", "4:relu,1", "--optimizer", "lbfgs",
              "--lbfgs-memory", "2", "--batch", "0", "--epochs", "4", "--checkpoint-every", "4",
              "--precision", "f64")
        read = lambda name: open(os.path.join(work, name), "rb").read()
        cg = read("cg.epoch-000002.safetensors")
        lbfgs = read("lbfgs.epoch-000004.safetensors")
        sgd = read("sgd.epoch-000001.safetensors")
        adam = read("adam.epoch-000003.safetensors")
        early = read("early.epoch-000004.safetensors")
    term = mid_epoch(sgd, 40)
    seeds.update(sgd_epoch1=sgd, adam_f64_epoch3=adam, early_stop_epoch4=early,
                 sgd_mid_epoch2=term)
    header_length = struct.unpack("<Q", sgd[:8])[0]
    seeds["truncated_header"] = sgd[:8 + header_length // 2]
    seeds["truncated_data"] = sgd[:-10]
    seeds["header_length_lies"] = struct.pack("<Q", header_length + 4096) + sgd[8:]
    seeds["not_checkpoint"] = edit(sgd, None, format="axon-model-1")
    seeds["no_state"] = edit(sgd, None, state=None)
    seeds["state_not_json"] = edit(sgd, None, state="{\"epoch\":")
    seeds["net_not_object"] = edit(sgd, None, net="[1,2]")
    seeds["epoch_string"] = edit(sgd, "state", epoch="1")
    seeds["epoch_negative"] = edit(sgd, "state", epoch=-1)
    seeds["batch_past_end"] = edit(term, "state", epoch=1000000)
    seeds["rng_zero"] = edit(sgd, "state", rng0="0" * 16, rng1="0" * 16, rng2="0" * 16,
                             rng3="0" * 16)
    seeds["seed_short_hex"] = edit(sgd, "net", seed="1")
    seeds["loss_sum_text"] = edit(sgd, "state", loss_sum="lots")
    seeds["precision_f16"] = edit(sgd, "net", precision="f16")
    seeds["layers_bad"] = edit(sgd, "net", layers="4:relu,1:softmax,")
    seeds["crash-layout-2e48"] = edit(sgd, "net", input_width=16777216, layers="16777216:relu,1")
    seeds["input_width_huge"] = edit(sgd, "net", input_width=2 ** 62)
    seeds["optimizer_unknown"] = edit(sgd, "train", optimizer="rmsprop")
    seeds["parameters_shape"] = tensor_edit(sgd, "parameters", shape=[20])
    seeds["early_stop_no_best"] = edit(edit(sgd, "train", early_stop=2), "state", best_epoch=1)
    header, data = split(sgd)
    begin = header["parameters"]["data_offsets"][0]
    nan = struct.pack("<f", float("nan"))
    seeds["parameter_nan"] = join(header, data[:begin] + nan + data[begin + 4:])
    header, data = split(term)
    begin = header["order"]["data_offsets"][0]
    seeds["order_repeats"] = join(header, data[:begin + 8] + data[begin:begin + 8] + data[begin + 16:])
    seeds["order_fraction"] = join(header, data[:begin] + struct.pack("<d", 0.5) + data[begin + 8:])
    seeds["order_missing"] = edit(sgd, "state", batch=3)
    # CG and L-BFGS: their own arrays ("optimizer.g", ...), scalars and the
    # line-search cache; a state of another optimizer; counts out of range.
    seeds.update(cg_epoch2=cg, lbfgs_f64_epoch4=lbfgs)
    seeds["cg_state_in_adam"] = edit(cg, "train", optimizer="adam")
    seeds["cg_line_searches_missing"] = edit(cg, "state", line_searches=None)
    seeds["cg_not_started"] = edit(cg, "state", optimizer_scalars={"started": "0x0p+0"})
    seeds["lbfgs_pairs_high"] = edit(lbfgs, "state", optimizer_scalars=dict(
        json.loads(split(lbfgs)[0]["__metadata__"]["state"])["optimizer_scalars"], pairs="0x1.8p+1"))
    seeds["lbfgs_rho_shape"] = tensor_edit(lbfgs, "optimizer.rho", shape=[1])
    seeds["keep_best_bad"] = edit(sgd, "train", keep_best="sometimes")
    return seeds


def options_seeds():
    vectors = {
        "train_fmnist": ["--data", "fashion-mnist", "--layers", "128:relu,128:relu,10:softmax",
                         "--epochs", "5", "--out", "fmnist.safetensors"],
        "train_csv": ["--data", "iris.csv", "--header", "--label-column", "last", "--delimiter",
                      "tab", "--scale", "1/255", "--batch", "full"],
        "train_synth": ["--data", "synth:linear", "--rows", "40000", "--features", "40", "--batch",
                        "32", "--lr", "0.002", "--seed", "3", "--threads", "1", "--quiet"],
        "equals_forms": ["--lr=1e-3", "--nesterov=false", "--momentum=0.95", "--precision=f64",
                         "--device=cuda:1", "--quiet=yes"],
        "help": ["--data", "x", "--help"],
        "missing_value": ["--data"],
        "unknown_near": ["--epoch", "3"],
        "unknown_short": ["-lr", "0.1"],
        "bare_word": ["fashion-mnist"],
        "bad_number": ["--lr", "0.1x"],
        "bad_flag": ["--quiet=maybe"],
        "huge_int": ["--epochs", "99999999999999999999999"],
        "ratio_zero": ["--scale", "1/0"],
        "empty_value": ["--out", "", "--data", ""],
        "device_bad": ["--device", "cuda:99999"],
        "keyword": ["--batch", "full", "--threads", "auto", "--label-column", "last"],
        "exponent_int": ["--rows", "1e6", "--features", "2.5"],
        "precision_bad": ["--precision", "f16"],
        "delimiter_digit": ["--delimiter", "5"],
        "double_dash_value": ["--data", "--out"],
        "equals_empty_name": ["--=3"],
    }
    return {name: b"\0".join(word.encode() for word in words) for name, words in vectors.items()}


def write(folder, seeds):
    os.makedirs(folder, exist_ok=True)
    for name, blob in seeds.items():
        with open(os.path.join(folder, name), "wb") as out:
            out.write(blob)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py AXON")
    write(os.path.join(HERE, "corpus", "checkpoint"), checkpoint_seeds(os.path.abspath(sys.argv[1])))
    write(os.path.join(HERE, "corpus", "options"), options_seeds())
