#!/usr/bin/python3
"""make_torch_reference.py: writes the PyTorch reference that
tests/test_torch_reference.c holds axon's forward pass, loss, gradient and
optimizers to.

Run:  /usr/bin/python3 scripts/make_torch_reference.py [tests/data]
Needs Debian's python3-torch and python3-numpy. Deterministic: the same
torch version writes the same files.

Output, in the folder given (tests/data by default):

  torch_reference.f64   all arrays, float64 little-endian, back to back
  torch_reference.txt   the index, text, one record a line:
      axon-torch-reference 1          magic and format version (first line)
      values N                        N float64 values in the .f64 file
      case NAME key=value ...         a training run and its settings:
          precision=f64|f32  input=IN  layers=W:ACT,W:ACT,...  (ACT one of
          identity sigmoid tanh relu softmax)  loss=cross-entropy|
          binary-cross-entropy|mse  classes=C  targets=T  optimizer=sgd|adam
          lr= momentum= nesterov=0|1 beta1= beta2= epsilon= l2= batch=B
          steps=S  (floats written with repr, so they parse back exactly)
      array NAME FIELD OFFSET COUNT   values [OFFSET, OFFSET+COUNT) of case NAME
  Lines starting with '#' are comments.

Arrays of each case (P = parameter count, flat in axon's order: for each
layer W (out, in) row-major, then b (out), which is nn.Linear's layout):
  params0        (P)        initial parameters (float32-representable)
  inputs         (S*B, IN)  features (float32-representable); batch k is rows
                            [k*B, (k+1)*B): one epoch without shuffling = S steps
  labels         (S*B)      class labels, when classes > 0
  targets        (S*B, T)   float targets (float32-representable), when targets > 0
  outputs0       (B, OUT)   probabilities/values of batch 0 at params0
  loss0          (1)        loss of batch 0 at params0, l2/2 ||W||^2 included
  gradient0      (P)        its gradient
  losses         (S)        data loss (no l2) of each step's batch before its update
  objectives     (S)        the same plus l2/2 ||W||^2 of the parameters before the
                            update: the loss the step minimises
  params_steps   (S, P)     parameters after each step

Loss definitions follow include/axon.h: cross-entropy is the mean over rows;
binary cross-entropy is summed over outputs and averaged over rows (torch's
BCE-with-logits with reduction='sum' divided by the batch size); MSE is the
mean over all elements (MSELoss); L2 is l2/2 ||W||^2 over weights, not biases
(torch weight_decay on a parameter group of weights only). SGD momentum is
torch's (v = mu v + g; p -= lr v, or p -= lr (g + mu v) with Nesterov), Adam
is torch.optim.Adam with bias correction.
"""
import os
import sys

import numpy as np
import torch

ACTIVATIONS = {
    "identity": lambda z: z,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu": torch.relu,
}


def make_params(input_width, layers, seed):
    """nn.Linear's default initialisation, rounded to float32."""
    torch.manual_seed(seed)
    flat = []
    width = input_width
    for out, _ in layers:
        linear = torch.nn.Linear(width, out).to(torch.float32)
        flat.append(linear.weight.detach().reshape(-1))
        flat.append(linear.bias.detach().reshape(-1))
        width = out
    return torch.cat(flat).to(torch.float64).numpy()


def split_params(flat, input_width, layers, dtype):
    """Leaf tensors [W0, b0, W1, b1, ...] viewing a copy of flat."""
    tensors = []
    offset = 0
    width = input_width
    for out, _ in layers:
        w = torch.tensor(flat[offset:offset + out * width].reshape(out, width), dtype=dtype)
        offset += out * width
        b = torch.tensor(flat[offset:offset + out], dtype=dtype)
        offset += out
        tensors += [w.requires_grad_(), b.requires_grad_()]
        width = out
    assert offset == flat.size
    return tensors


def forward(tensors, layers, x):
    """Pre-activations of the output layer and its activated outputs."""
    a = x
    for index, (_, activation) in enumerate(layers):
        z = a @ tensors[2 * index].T + tensors[2 * index + 1]
        if index == len(layers) - 1:
            if activation == "softmax":
                return z, torch.softmax(z, dim=1)
            return z, ACTIVATIONS[activation](z)
        a = ACTIVATIONS[activation](z)
    raise AssertionError("no layers")


def data_loss(loss, z, y, labels, targets):
    if loss == "cross-entropy":
        return torch.nn.functional.cross_entropy(z, labels)
    if loss == "binary-cross-entropy":
        return torch.nn.functional.binary_cross_entropy_with_logits(
            z, targets, reduction="sum") / z.shape[0]
    return torch.nn.functional.mse_loss(y, targets)


def l2_term(tensors, l2):
    return 0.5 * l2 * sum((w * w).sum() for w in tensors[0::2])


def run_case(spec, params0, inputs, labels, targets):
    """Trains in torch and returns the arrays of the case."""
    dtype = torch.float64 if spec["precision"] == "f64" else torch.float32
    layers, batch, steps = spec["layers"], spec["batch"], spec["steps"]
    tensors = split_params(params0, spec["input"], layers, dtype)
    x_all = torch.tensor(inputs, dtype=dtype)
    labels_all = torch.tensor(labels, dtype=torch.int64) if labels is not None else None
    targets_all = torch.tensor(targets, dtype=dtype) if targets is not None else None

    def batch_of(k):
        rows = slice(k * batch, (k + 1) * batch)
        return (x_all[rows], labels_all[rows] if labels_all is not None else None,
                targets_all[rows] if targets_all is not None else None)

    out = {}
    x, lab, tgt = batch_of(0)
    z, y = forward(tensors, layers, x)
    out["outputs0"] = y.detach().to(torch.float64).numpy().reshape(-1)
    objective = data_loss(spec["loss"], z, y, lab, tgt) + l2_term(tensors, spec["l2"])
    gradients = torch.autograd.grad(objective, tensors)
    out["loss0"] = np.array([objective.item()])
    out["gradient0"] = torch.cat([g.reshape(-1) for g in gradients]).to(torch.float64).numpy()

    weights, biases = tensors[0::2], tensors[1::2]
    groups = [{"params": weights, "weight_decay": spec["l2"]},
              {"params": biases, "weight_decay": 0.0}]
    if spec["optimizer"] == "sgd":
        optimizer = torch.optim.SGD(groups, lr=spec["lr"], momentum=spec["momentum"],
                                    nesterov=bool(spec["nesterov"]))
    else:
        optimizer = torch.optim.Adam(groups, lr=spec["lr"], betas=(spec["beta1"], spec["beta2"]),
                                     eps=spec["epsilon"])
    losses, objectives, snapshots = [], [], []
    for k in range(steps):
        x, lab, tgt = batch_of(k)
        optimizer.zero_grad()
        z, y = forward(tensors, layers, x)
        loss = data_loss(spec["loss"], z, y, lab, tgt)
        loss.backward()  # weight decay is added by the optimizer
        losses.append(loss.item())
        objectives.append(loss.item() + l2_term(tensors, spec["l2"]).item())
        optimizer.step()
        snapshots.append(torch.cat([t.detach().reshape(-1) for t in tensors]).to(torch.float64))
    out["losses"] = np.array(losses)
    out["objectives"] = np.array(objectives)
    out["params_steps"] = torch.stack(snapshots).numpy().reshape(-1)
    return out


def make_data(rng, rows, input_width, classes, targets, kind):
    inputs = rng.standard_normal((rows, input_width)).astype(np.float32)
    labels = target_values = None
    if classes:
        labels = rng.integers(0, classes, rows)
    elif kind == "multilabel":
        target_values = (rng.random((rows, targets)) < 0.4).astype(np.float32)
    else:
        direction = rng.standard_normal((input_width, targets))
        target_values = (np.tanh(inputs @ direction / np.sqrt(input_width))
                         + 0.1 * rng.standard_normal((rows, targets))).astype(np.float32)
    return inputs, labels, target_values


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    rng = np.random.default_rng(20240611)

    classifier = [(16, "relu"), (16, "tanh"), (5, "softmax")]
    regressor = [(10, "sigmoid"), (1, "identity")]
    multilabel = [(9, "tanh"), (3, "sigmoid")]
    common = dict(momentum=0.0, nesterov=0, beta1=0.9, beta2=0.999, epsilon=1e-8, l2=0.0, batch=8)
    nets = {
        # (a) and (c) share their net, data and initial parameters.
        "classifier": dict(input=12, layers=classifier, loss="cross-entropy", classes=5, targets=0,
                           steps=10, kind="classes", seed=1),
        "regressor": dict(input=6, layers=regressor, loss="mse", classes=0, targets=1,
                          steps=10, kind="regression", seed=2),
        "multilabel": dict(input=7, layers=multilabel, loss="binary-cross-entropy", classes=0,
                           targets=3, steps=3, kind="multilabel", seed=3),
    }
    runs = [
        ("sgd_momentum", "classifier", dict(optimizer="sgd", lr=0.1, momentum=0.9)),
        ("nesterov_l2", "regressor", dict(optimizer="sgd", lr=0.05, momentum=0.9, nesterov=1, l2=0.01)),
        ("adam", "classifier", dict(optimizer="adam", lr=1e-2)),
        ("bce_sgd", "multilabel", dict(optimizer="sgd", lr=0.5)),
    ]
    prepared = {}
    for name, net in nets.items():
        rows = net["steps"] * common["batch"]
        params0 = make_params(net["input"], net["layers"], net["seed"])
        prepared[name] = (params0,) + make_data(rng, rows, net["input"], net["classes"],
                                                net["targets"], net["kind"])

    index = ["axon-torch-reference 1",
             "# written by scripts/make_torch_reference.py with torch " + torch.__version__]
    records, values, offset = [], [], 0
    for run_name, net_name, settings in runs:
        for precision in ("f64", "f32"):
            spec = dict(common)
            spec.update({k: v for k, v in nets[net_name].items() if k not in ("kind", "seed")})
            spec.update(settings)
            spec["precision"] = precision
            name = run_name + "_" + precision
            params0, inputs, labels, targets = prepared[net_name]
            arrays = {"params0": params0, "inputs": inputs.astype(np.float64).reshape(-1)}
            if labels is not None:
                arrays["labels"] = labels.astype(np.float64)
            if targets is not None:
                arrays["targets"] = targets.astype(np.float64).reshape(-1)
            arrays.update(run_case(spec, params0, inputs, labels, targets))
            layers = ",".join("%d:%s" % layer for layer in spec["layers"])
            keys = ["precision=" + precision, "input=%d" % spec["input"], "layers=" + layers,
                    "loss=" + spec["loss"], "classes=%d" % spec["classes"],
                    "targets=%d" % spec["targets"], "optimizer=" + spec["optimizer"]]
            keys += ["%s=%r" % (k, float(spec[k]))
                     for k in ("lr", "momentum", "beta1", "beta2", "epsilon", "l2")]
            keys += ["nesterov=%d" % spec["nesterov"], "batch=%d" % spec["batch"],
                     "steps=%d" % spec["steps"]]
            records.append("case %s %s" % (name, " ".join(keys)))
            for field, array in arrays.items():
                array = np.ascontiguousarray(array, dtype="<f8").reshape(-1)
                if not np.all(np.isfinite(array)):
                    raise SystemExit("%s/%s is not finite" % (name, field))
                records.append("array %s %s %d %d" % (name, field, offset, array.size))
                values.append(array)
                offset += array.size
    index.append("values %d" % offset)
    index += records
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "torch_reference.f64"), "wb") as f:
        f.write(np.concatenate(values).astype("<f8").tobytes())
    with open(os.path.join(folder, "torch_reference.txt"), "w") as f:
        f.write("\n".join(index) + "\n")
    print("wrote %d values (%d bytes) for %d cases to %s" %
          (offset, 8 * offset, 2 * len(runs), os.path.abspath(folder)))


if __name__ == "__main__":
    main()
