"""lenet_interop.py: issue 29's interop target, measured. A LeNet
(conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax)
trained briefly in axon on Fashion-MNIST, then its predictions on all 10,000
test images compared with
  - torch: axon.to_torch(net) run by PyTorch in float32 (and float64), on the
    images permuted to (N, C, H, W);
  - ONNX: net.to_onnx(...) checked by onnx's checker and run by the NumPy
    evaluator of python/tests/onnx_numpy.py (float64, from the operator
    specification), and by onnxruntime where it is installed.
Prints, for each, how many test images get another class than axon's and the
largest absolute difference of a probability. A measurement, not a test.

usage: /usr/bin/python3 bench/lenet_interop.py [--epochs 1] [--threads 2] [--save M | --model M]
"""
import argparse
import os
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "python", "tests"))
import axon  # noqa: E402  (first: docs/python.md)
import numpy as np  # noqa: E402

LENET = "conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax"


def compare(name, probabilities, reference, against="p_axon"):
    classes = int(np.sum(probabilities.argmax(1) != reference.argmax(1)))
    difference = np.abs(probabilities.astype(np.float64) - reference)
    worst = float(difference.max())
    over = int(np.sum(difference.max(1) > 1e-6))
    print(f"{name:<36} {classes:>2} of {len(reference)} classes differ, "
          f"max |p - {against}| {worst:.2e}, rows over 1e-6: {over}")
    return classes, worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", help="use this trained model instead of training")
    parser.add_argument("--save", help="save the trained model there")
    parser.add_argument("--chunk", type=int, default=500, help="rows per NumPy evaluation")
    args = parser.parse_args()
    axon.set_threads(args.threads)
    if args.model:
        net = axon.load(args.model)
        print(f"model {args.model}: {net.layout}")
    else:
        started = time.perf_counter()
        net, summary = axon.train("fashion-mnist", layers=LENET, optimizer="adam", lr=1e-3,
                                  batch=128, epochs=args.epochs, seed=1, out=args.save)
        print(f"trained {net.layout}: {args.epochs} epoch(s) of adam, batch 128, seed 1, "
              f"{time.perf_counter() - started:.0f} s, test accuracy "
              f"{summary['history'][-1]['test_accuracy']:.2%}")
    with axon.Dataset.open("fashion-mnist", part="test") as test:
        X, y = test.arrays()
    images = X.reshape(-1, 28, 28, 1)
    p_axon = net.predict(X)
    print(f"axon: accuracy {np.mean(p_axon.argmax(1) == y):.2%} on {len(y)} test images")
    results = {}

    # libaxon's OpenBLAS (the OpenMP build, docs/python.md) also serves torch's BLAS
    # calls once axon is imported first; with more than one OpenBLAS thread torch's
    # Linear of 1024x1024 never returned on the project's 2-core machine (a spin in
    # OpenBLAS's exec_blas under torch's OpenMP settings). One thread avoids it.
    axon.set_threads(1)
    import torch
    print(f"torch {torch.__version__}, numpy {np.__version__}")
    module = axon.to_torch(net)
    nchw = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    with torch.no_grad():  # in chunks: a whole-set im2col would take gigabytes
        p_torch = np.concatenate([module(nchw[i:i + args.chunk]).numpy()
                                  for i in range(0, len(nchw), args.chunk)])
        module64 = axon.to_torch(net, dtype="float64")
        p_torch64 = np.concatenate([module64(nchw[i:i + args.chunk].double()).numpy()
                                    for i in range(0, len(nchw), args.chunk)])
    results["torch f32"] = compare("torch float32 (to_torch)", p_torch, p_axon)
    results["torch f64"] = compare("torch float64 (to_torch, dtype)", p_torch64, p_axon)
    # Both sides in float64 on the same float32 weights (exact in float64): what is left
    # is the order of the sums in float64, and axon's float32 output rounding.
    saved = args.model or args.save
    if saved:
        p_axon64 = axon.load(saved, precision="f64").predict(X)
        results["f64 both"] = compare("axon f64 (load f64) vs torch f64", p_torch64, p_axon64,
                                      "p_axon64")
    # how far float32 arithmetic is from the float64 result, for scale
    compare("  axon float32 vs torch float64", p_axon, p_torch64, "p_f64")
    compare("  torch float32 vs torch float64", p_torch, p_torch64, "p_f64")
    back = axon.from_torch(axon.to_torch(net), input_shape=(28, 28, 1))
    same = all(len(a) == len(b) and all(np.array_equal(u, v) for u, v in zip(a, b))
               for a, b in zip(back.get_weights(), net.get_weights()))
    print(f"from_torch(to_torch(net)) weights bit-equal: {same}")

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "lenet.onnx")
        net.to_onnx(path)  # written by libaxon itself (src/io/onnx.c), no onnx package needed
        try:  # the checker and the NumPy evaluator need the onnx package; a GPU machine may lack it
            import onnx
            import onnx_numpy
        except ImportError:
            print("onnx: not installed (no checker, no NumPy evaluation)")
        else:
            model = onnx.load(path)
            onnx.checker.check_model(model, full_check=True)
            print(f"ONNX file {os.path.getsize(path)} bytes, onnx.checker (full) passed")
            p_onnx = np.concatenate([onnx_numpy.run(model, {"input": images[i:i + args.chunk]})[0]
                                     for i in range(0, len(images), args.chunk)])
            results["onnx numpy"] = compare("ONNX, NumPy evaluator (float64)", p_onnx, p_axon)
            if saved:
                compare("ONNX NumPy (float64) vs axon f64", p_onnx, p_axon64, "p_axon64")
        try:
            import onnxruntime
        except ImportError:
            print("onnxruntime: not installed")
        else:
            session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            p_ort = np.concatenate([session.run(["output"], {"input": images[i:i + args.chunk]})[0]
                                    for i in range(0, len(images), args.chunk)])
            results["onnxruntime"] = compare(f"onnxruntime {onnxruntime.__version__}", p_ort,
                                             p_axon)
    return 0 if all(classes == 0 for classes, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
