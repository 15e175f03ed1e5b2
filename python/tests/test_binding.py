"""test_binding.py: the ctypes binding (python/axon) against the library.

Proves: ctypes' struct layouts equal the C compiler's (tests/abi_layout.c);
arrays of the library's types reach it without a copy and others are
converted (non-contiguous, read-only, float64, int64 give the same weights as
the library's own .npy loader); training on arrays equals training on the
same data opened by spec bit for bit; every bad input is a Python exception
with axon's message (ValueError for arguments and data, OSError for files);
progress callbacks, stopping, exceptions inside callbacks; the GIL is released
while training; Ctrl-C raises KeyboardInterrupt after the current step with
a usable network; save/load round trips; axon.OptimizerState carries SGD's and
Adam's state across Net.train calls and pickles; the statistics against float64
NumPy; closed objects raise ValueError and closing one while training runs is
refused; a network on the OpenCL device (PoCL) trains as on the CPU.
"""
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import axon
from axon import _lib


def blobs(rows=300, features=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3, size=(classes, features))
    y = rng.integers(0, classes, rows)
    X = centres[y] + rng.normal(size=(rows, features))
    return X.astype(np.float32), y.astype(np.int32)


def test_struct_layouts_match_the_c_compiler():
    program = os.environ.get("AXON_ABI_LAYOUT")
    if not program:
        pytest.skip("AXON_ABI_LAYOUT (tests/abi_layout, built by CMake) not given")
    seen = {}
    for line in subprocess.run([program], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        struct, field, value = line.split()
        seen[(struct, field)] = int(value)
    for name, cls in _lib.STRUCTS.items():
        assert seen[(name, "sizeof")] == __import__("ctypes").sizeof(cls), name
        for field, *_ in cls._fields_:
            if cls is _lib.LayerSpec and field == "u":  # each kind's fields in the union
                for kind, struct in (("dense", _lib.LayerDense), ("conv", _lib.LayerConv),
                                     ("pool", _lib.LayerPool)):
                    for member, *_ in struct._fields_:
                        assert (seen[(name, f"{kind}.{member}")] ==
                                cls.u.offset + getattr(struct, member).offset), f"{kind}.{member}"
                continue
            assert seen[(name, field)] == getattr(cls, field).offset, f"{name}.{field}"


def test_library_arrays_are_not_copied_others_are_converted():
    X, y = blobs()
    data = axon.Dataset.from_arrays(X, y)
    assert data._keep[0] is X and data._keep[1] is y  # the caller's arrays themselves
    assert data.rows == 300 and data.features == 5 and data.classes == 3
    X_back, y_back = data.arrays()
    assert np.array_equal(X_back, X) and np.array_equal(y_back, y)
    X64 = X.astype(np.float64)
    converted = axon.Dataset.from_arrays(X64, y.astype(np.int64))
    assert converted._keep[0] is not X64 and converted._keep[0].dtype == np.float32
    targets = axon.Dataset.from_arrays(X, X[:, 0].copy())
    assert targets.targets == 1 and targets.classes == 0


def _trained_parameters(X, y, **options):
    net = axon.Net(X.shape[1], "8:tanh,3:softmax", seed=3)
    net.train(X, y, optimizer="adam", lr=0.01, batch=32, epochs=3, **options)
    return net.parameters


def test_layouts_and_dtypes_train_identically(tmp_path):
    X, y = blobs()
    reference = _trained_parameters(X, y)
    wide = np.zeros((X.shape[0], 2 * X.shape[1]), dtype=np.float32)
    wide[:, ::2] = X
    readonly = X.copy()
    readonly.setflags(write=False)
    fortran = np.asfortranarray(X)
    for variant in (wide[:, ::2], readonly, fortran, X.astype(np.float64)):
        assert np.array_equal(_trained_parameters(variant, y), reference)
    assert np.array_equal(_trained_parameters(X, y.astype(np.int64)), reference)
    # The same rows through the library's own .npy loader (a data spec).
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    opened = axon.Dataset.open(tmp_path / "x.npy", labels=tmp_path / "y.npy")
    net = axon.Net(X.shape[1], "8:tanh,3:softmax", seed=3)
    net.train(opened, optimizer="adam", lr=0.01, batch=32, epochs=3)
    assert np.array_equal(net.parameters, reference)


@pytest.mark.parametrize("X, error, text", [
    (np.array([["a", "b"]]), TypeError, "real numbers"),
    (np.ones((3, 2), dtype=np.complex64), TypeError, "real numbers"),
    (np.ones(3, dtype=np.float32), ValueError, "must be 2-D"),
    (np.ones((0, 5), dtype=np.float32), ValueError, "empty"),
    (np.ones((3, 0), dtype=np.float32), ValueError, "empty"),
])
def test_bad_features(X, error, text):
    with pytest.raises(error, match=text):
        axon.Dataset.from_arrays(X, np.zeros(len(X), np.int32))


def test_bad_values_and_labels_name_the_place():
    X, y = blobs(rows=10)
    X[4, 2] = np.nan
    with pytest.raises(ValueError, match="row 5, feature 3 is NaN"):
        axon.Dataset.from_arrays(X, y)
    X, y = blobs(rows=10)
    y[7] = -2
    with pytest.raises(ValueError, match="row 8 has label -2"):
        axon.Dataset.from_arrays(X, y)
    with pytest.raises(ValueError, match="10 rows but y has 9"):
        axon.Dataset.from_arrays(X, y[:9])
    net = axon.Net(5, "4:relu,3:softmax")
    X, y = blobs(rows=10)
    y[2] = 3
    with pytest.raises(ValueError, match="row 3 has label 3 .labels 0 to 2."):
        net.train(X, y, epochs=1)
    with pytest.raises(ValueError, match="6 features per row but the network's input width is 5"):
        net.predict(np.ones((2, 6), np.float32))
    bad = np.ones((2, 5), np.float32)
    bad[1, 4] = np.inf
    with pytest.raises(ValueError, match="row 2, column 5"):
        net.predict(bad)


def test_precision_names_are_the_librarys():
    # ax_precision_name's spelling, every precision's, in both directions
    from axon import _lib
    assert _lib.PRECISION_NAMES == {0: "f32", 1: "f64", 2: "bf16"}
    for name in ("f32", "f64", "bf16"):
        assert axon.Net(5, "3:softmax", precision=name).precision == name


def test_bad_arguments_carry_axons_message():
    with pytest.raises(ValueError, match="layers"):
        axon.Net(5, "4:relu,3:softmaxx")
    with pytest.raises(ValueError, match="sgdd"):
        axon.Net(5, "3:softmax").train(*blobs(rows=10), optimizer="sgdd")
    with pytest.raises(ValueError, match="precision"):
        axon.Net(5, "3:softmax", precision="f16")
    with pytest.raises(ValueError):
        axon.Net(5, "3:softmax").train(*blobs(rows=10), epochs=0)
    with pytest.raises(axon.AxonValueError) as raised:
        axon.Net(0, "3:softmax")
    assert raised.value.status == "bad argument" and "input width 0" in str(raised.value)


def test_files_raise_oserror(tmp_path):
    with pytest.raises(OSError, match="no_such_model"):
        axon.load(tmp_path / "no_such_model.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a model at all")
    with pytest.raises(OSError, match="junk.safetensors"):
        axon.load(tmp_path / "junk.safetensors")
    net = axon.Net(5, "3:softmax")
    with pytest.raises(OSError, match="no_such_folder"):
        net.save(tmp_path / "no_such_folder" / "m.safetensors")
    with pytest.raises(OSError):
        axon.Dataset.open(tmp_path / "missing.csv")


def test_save_load_round_trip(tmp_path):
    X, y = blobs()
    net = axon.Net(5, [(8, "tanh"), (3, "softmax")])
    net.train(X, y, optimizer="adam", lr=0.01, epochs=2)
    net.save(tmp_path / "m.safetensors")
    loaded = axon.load(tmp_path / "m.safetensors")
    assert loaded.layout == net.layout == "5-8:tanh-3:softmax"
    assert np.array_equal(loaded.parameters, net.parameters.astype(np.float32).astype(np.float64))
    assert np.array_equal(loaded.predict(X), net.predict(X))
    double = axon.load(tmp_path / "m.safetensors", precision="f64")
    assert double.precision == "f64"


def test_predict_equals_numpy_forward_pass():
    X, y = blobs()
    net = axon.Net(5, "8:tanh,6:relu,3:softmax", seed=5, precision="f64")
    net.train(X, y, epochs=2, batch=16)
    a = X.astype(np.float64)
    for i, (W, b) in enumerate(net.get_weights()):
        a = a @ W.T + b
        a = np.tanh(a) if i == 0 else np.maximum(a, 0) if i == 1 else a
    p = np.exp(a - a.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(net.predict(X), p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.activations(X, 0), np.tanh(X @ net.get_weights()[0][0].T +
                                                              net.get_weights()[0][1]), atol=1e-5)
    evaluation = net.evaluate(X, y)
    assert evaluation["rows"] == 300 and evaluation["confusion"].sum() == 300
    assert evaluation["accuracy"] == pytest.approx(np.mean(p.argmax(1) == y))
    assert evaluation["loss"] == pytest.approx(-np.mean(np.log(p[np.arange(300), y])), rel=1e-5)
    weights = net.get_weights()
    other = axon.Net(5, "8:tanh,6:relu,3:softmax", seed=9, precision="f64")
    other.set_weights(weights)
    assert np.array_equal(other.parameters, net.parameters)
    with pytest.raises(ValueError, match="layer 2"):
        other.set_weights([weights[0], (weights[1][0].T, weights[1][1]), weights[2]])


def test_layer_kinds_activations_and_shapes_of_a_conv_net():
    # Issue 25: layer_activations read the dense member of every kind and gave
    # ['unknown', 'tanh', 'relu', 'tanh', 'softmax'] for this network. Made as a C
    # program would, then wrapped (test_conv.py makes conv networks with Net itself).
    config = _lib.net_config()
    _lib.check(lib_parse_layers("conv:8x5x5/p2:relu,maxpool:2,conv:8x3x3/s2,avgpool:2,10:softmax",
                                config))
    config.input_width = 28 * 28
    config.input_shape[:] = (28, 28, 1)
    handle = ctypes.c_void_p()
    try:
        _lib.check(_lib.lib.ax_net_create(ctypes.byref(config), ctypes.byref(handle)))
    finally:
        _lib.lib.ax_net_config_release(ctypes.byref(config))
    net = axon.Net._from_handle(handle)
    assert net.layer_kinds == ["conv", "maxpool", "conv", "avgpool", "dense"]
    assert net.layer_activations == ["relu", "none", "relu", "none", "softmax"]
    assert net.layer_shapes == [(28, 28, 8), (14, 14, 8), (6, 6, 8), (3, 3, 8), (1, 1, 10)]
    assert net.layer_widths == [6272, 1568, 288, 72, 10]
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        net._layer_enum(_lib.lib.ax_net_layer_kind, 5)


def lib_parse_layers(text, config):
    return _lib.lib.ax_layers_parse(text.encode(), ctypes.byref(config))


def test_progress_callback_history_and_stopping():
    X, y = blobs()
    calls = []
    summary = axon.Net(5, "3:softmax").train(X, y, epochs=4, batch=10,
                                             progress=calls.append, progress_interval=0)
    epochs = [c for c in calls if c["epoch_done"]]
    assert [c["epoch"] for c in epochs] == [1, 2, 3, 4] == [h["epoch"] for h in summary["history"]]
    assert len(calls) > len(epochs)  # within-epoch calls too (interval 0)
    assert summary["epochs_run"] == 4 and summary["final_train_loss"] == epochs[-1]["train_loss"]
    with pytest.raises(axon.StoppedError, match="interrupted after epoch 2"):
        axon.Net(5, "3:softmax").train(X, y, epochs=9,
                                       progress=lambda p: not (p["epoch_done"] and p["epoch"] == 2))

    def broken(p):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        axon.Net(5, "3:softmax").train(X, y, epochs=2, progress=broken)


def test_library_calls_release_the_gil():
    """Another thread runs Python while one library call (a predict of 20,000 rows, no
    callbacks) is in progress: a timestamp it takes lies inside the call, which it could not
    take if the call held the GIL. Tried up to 100 calls, so that a busy machine that does
    not schedule the other thread during one call cannot fail it."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20000, 64)).astype(np.float32)
    net = axon.Net(64, "256:relu,256:relu,2:softmax", precision="f64")
    done = threading.Event()
    ticks = []

    def count():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.0005)

    counter = threading.Thread(target=count)
    counter.start()
    inside = False
    try:
        for _ in range(100):
            start = time.monotonic()
            net.predict(X)
            end = time.monotonic()
            if any(start < t < end for t in ticks[-200:]):
                inside = True
                break
    finally:
        done.set()
        counter.join()
    assert inside, "no other thread ran during 100 library calls: the GIL was held"


CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import axon
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(2000, 32)).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int32)
net = axon.Net(32, "64:relu,2:softmax")
initial = net.parameters
seen = []
def progress(p):
    if not seen:
        print("training", flush=True)
    seen.append(p)
try:
    net.train(X, y, epochs=1000000, batch=16, progress=progress, progress_interval=0)
    print("not interrupted")
except KeyboardInterrupt as e:
    out = net.predict(X[:5])
    moved = not np.array_equal(net.parameters, initial)  # at least one step's weights
    net.train(X, y, epochs=1, batch=16)  # and the network trains on
    print("KeyboardInterrupt:", e, "| finite:", bool(np.isfinite(out).all()),
          "| trained:", moved, flush=True)
"""


def test_ctrl_c_raises_keyboardinterrupt_after_the_step():
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    child = subprocess.Popen([sys.executable, "-c", CHILD, python_dir], stdout=subprocess.PIPE,
                             text=True)
    try:
        # Training has started (its first progress call) and runs for 10^6 epochs: the
        # signal comes during training however fast or busy the machine is.
        assert child.stdout.readline().strip() == "training"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert "KeyboardInterrupt: axon: training interrupted " in out, out
    assert "finite: True" in out and "trained: True" in out, out
    assert child.returncode == 0


def test_optimizer_state_carries_adam_and_sgd_across_calls():
    """Two Net.train calls of one epoch with an axon.OptimizerState equal one call of two
    epochs, bit for bit (no shuffling); its arrays round-trip through describe, arrays,
    assign and pickle; what does not fit is a ValueError naming it, CG refuses it."""
    import pickle
    X, y = blobs()
    for options in (dict(optimizer="adam", lr=0.01), dict(optimizer="sgd", lr=0.05,
                                                         momentum=0.9, nesterov=True)):
        common = dict(batch=64, shuffle=False, **options)
        straight, carried = axon.Net(5, "8:tanh,3:softmax"), axon.Net(5, "8:tanh,3:softmax")
        straight.train(X, y, epochs=3, **common)
        state = axon.OptimizerState()
        assert state.describe() is None and state.arrays() == [] and state.steps == 0
        carried.train(X, y, epochs=1, optimizer_state=state, **common)
        state = pickle.loads(pickle.dumps(state))  # its arrays travel in the pickle
        carried.train(X, y, epochs=1, optimizer_state=state, **common)
        copy = axon.OptimizerState()
        info = state.describe()
        assert info["optimizer"] == options["optimizer"] and info["steps"] == 10
        assert info["parameters"] == carried.parameter_count and info["precision"] == "f32"
        copy.assign(info["optimizer"], info["precision"], info["parameters"], info["steps"],
                    state.arrays())
        carried.train(X, y, epochs=1, optimizer_state=copy, **common)
        assert np.array_equal(straight.parameters, carried.parameters), options
    with pytest.raises(ValueError, match="the optimizer state was left by sgd; this run "
                                         "trains with adam"):
        carried.train(X, y, optimizer="adam", epochs=1, optimizer_state=copy)
    with pytest.raises(ValueError, match="the optimizer state is for 75 parameters; this "
                                         "network has 39"):
        axon.Net(5, "4:tanh,3:softmax").train(X, y, optimizer="sgd", momentum=0.9,
                                               epochs=1, optimizer_state=copy)
    with pytest.raises(NotImplementedError, match="cg cannot carry an optimizer state"):
        carried.train(X, y, optimizer="cg", batch=0, epochs=1, optimizer_state=copy)
    with pytest.raises(TypeError, match="must be an axon.OptimizerState"):
        carried.train(X, y, epochs=1, optimizer_state="state")
    with pytest.raises(ValueError, match="finite and >= 0"):
        axon.OptimizerState().assign("adam", "f32", 3, 1, [np.zeros(3), -np.ones(3)])
    with pytest.raises(ValueError, match="hold \\[2\\] values; it is for 3 parameters"):
        axon.OptimizerState().assign("sgd", "f32", 3, 1, [np.zeros(2)])


@pytest.mark.skipif(not axon.build_info()["stats"], reason="built with AXON_STATS=OFF")
def test_stats_against_float64_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 7))
    y = rng.normal(size=(50, 7))
    softmax = lambda a: np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)  # noqa: E731
    P, Q = softmax(x.astype(np.float32).astype(np.float64)), softmax(y.astype(np.float32).astype(np.float64))
    entropy, mi = axon.stats.entropy_mi(x, y)
    assert entropy == pytest.approx(-np.mean((P ** 2).sum(1)), rel=1e-6)
    assert mi == pytest.approx(np.mean((P ** 2).sum(1) * (Q ** 2).sum(1)), rel=1e-6)
    fx, fy, fz = (rng.normal(size=(40, 4)).astype(np.float32) for _ in range(3))
    reference = np.einsum("ri,rj,rk->ijk", *(a.astype(np.float64) for a in (fx, fy, fz))) / 40
    np.testing.assert_allclose(axon.stats.tensor_mean(fx, fy, fz), reference, rtol=1e-4, atol=1e-6)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"x \[row 3, column 1\] is NaN"):
        axon.stats.entropy_mi(bad, y)
    with pytest.raises(ValueError, match="same shape"):
        axon.stats.entropy_mi(x, y[:, :3])
    with pytest.raises(TypeError):
        axon.stats.tensor_mean(np.array([["a"]]), fy, fz)


def test_train_with_cli_options_and_validation_split(tmp_path):
    X, y = blobs(rows=400)
    net, summary = axon.train((X, y), layers="16:relu,3:softmax", optimizer="adam", lr=0.01,
                              epochs=30, val_split=0.25, early_stop=3, batch=32,
                              out=tmp_path / "m.safetensors")
    assert summary["epochs_run"] <= 30
    assert not np.isnan(summary["history"][0]["validation_loss"])
    assert axon.load(tmp_path / "m.safetensors").layout == "5-16:relu-3:softmax"
    assert net.evaluate(X, y)["accuracy"] > 0.9
    reg, _ = axon.train(X, X[:, :2] * 2, epochs=3, batch=32)
    assert reg.layout == "5-2:identity"
    with pytest.raises(OSError, match="no_such"):
        axon.train(str(tmp_path / "no_such.csv"))


@pytest.mark.skipif(not os.path.isdir(os.environ.get("AXON_DATASETS", "/usr/share/datasets")
                                      + "/fashion-mnist"),
                    reason="no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
def test_train_on_a_data_set_name_uses_its_test_part():
    net, summary = axon.train("fashion-mnist", layers="10:softmax", optimizer="adam", epochs=1,
                              batch=256)
    assert net.layer_activations == ["softmax"] and net.input_width == 784
    assert 0.7 < summary["final_test_accuracy"] <= 1  # evaluated on the t10k files
    assert summary["history"][0]["test_accuracy"] == summary["final_test_accuracy"]


def _png(path, pixels):
    """A minimal RGB PNG (8 bits, no filter) of pixels (h, w, 3) uint8, by zlib alone."""
    import struct
    import zlib

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    h, w, _ = pixels.shape
    raw = b"".join(b"\0" + pixels[r].tobytes() for r in range(h))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.mark.skipif(not axon.build_info()["prep"], reason="built without AXON_PREP")
def test_prep_makes_batches_the_loader_reads(tmp_path):
    rng = np.random.default_rng(3)
    for label in ("cats", "dogs"):
        (tmp_path / "in" / label).mkdir(parents=True)
        for i in range(3):
            _png(tmp_path / "in" / label / f"{i}.png", rng.integers(0, 256, (8, 8, 3), np.uint8))
    (tmp_path / "in" / "dogs" / "broken.png").write_bytes(b"\x89PNG not really")
    calls = []
    summary = axon.prep(tmp_path / "in", tmp_path / "out", size=4, batch=4, seed=2,
                        progress=calls.append, progress_interval=0)
    assert summary["images_found"] == 7 and summary["images_written"] == 6
    assert summary["images_skipped"] == 1 and summary["labels"] == 2
    assert any("broken.png" in w for w in summary["warnings"])
    data = axon.Dataset.open(f"batches:{tmp_path / 'out'}")
    assert (data.rows, data.features, data.classes) == (6, 4 * 4 * 3, 2)
    with pytest.raises(OSError):
        axon.prep(tmp_path / "missing", tmp_path / "out2")


def test_one_network_from_several_threads():
    """A network is used by one thread at a time (axon.h): Net's lock makes concurrent
    predictions from Python threads wait their turn, each getting the right outputs."""
    X, y = blobs(rows=2000)
    net = axon.Net(5, "64:relu,64:relu,3:softmax")
    net.train(X, y, epochs=1)
    expected = net.predict(X)
    errors = []

    def predict_many():
        for _ in range(20):
            if not np.array_equal(net.predict(X), expected):
                errors.append("different outputs")

    threads = [threading.Thread(target=predict_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_missing_library_says_where_it_looked(tmp_path):
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    env = dict(os.environ, AXON_LIBRARY=str(tmp_path / "nowhere" / "libaxon.so.0"))
    run = subprocess.run([sys.executable, "-c", "import axon"], cwd=python_dir, env=env,
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "ImportError: axon: cannot find libaxon (libaxon.so.0). Looked in:" in run.stderr
    assert f"{tmp_path}/nowhere/libaxon.so.0 ($AXON_LIBRARY): no such file" in run.stderr
    assert "AXON_PREFIX" in run.stderr  # and how to point at one


def _run_child(code):
    """Runs code in a child Python with axon importable: (returncode, stdout + stderr).
    For the cases that segfaulted before objects kept their handles from close(), so
    that a crash fails this test alone, not the whole run."""
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    run = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {python_dir!r})\n"
                          + code], capture_output=True, text=True, timeout=300)
    return run.returncode, run.stdout + run.stderr


CLOSED_DATASET = r"""
import axon
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(100, 4)).astype(np.float32)
data = axon.Dataset.from_arrays(X, (X[:, 0] > 0).astype(np.int32))
net = axon.Net(4, "3:relu,2:softmax")
data.close()
data.close()  # a second close does nothing
print(repr(data))
for name, use in [("rows", lambda: data.rows), ("features", lambda: data.features),
                  ("classes", lambda: data.classes), ("targets", lambda: data.targets),
                  ("arrays", data.arrays), ("train", lambda: net.train(data, epochs=1)),
                  ("evaluate", lambda: net.evaluate(data)),
                  ("validation", lambda: net.train(X, np.zeros(100, np.int32), validation=data))]:
    try:
        use()
        print(name, "did not raise")
    except ValueError as error:
        print(name, "ValueError:", error)
net.close()
try:
    net.predict(X)
except ValueError as error:
    print("predict ValueError:", error)
print(repr(net))
"""


def test_closed_objects_raise_valueerror():
    """A closed Dataset (and Net) raises ValueError on every use; on f404a17 .rows,
    .arrays() and Net.train(data) read freed memory (a segfault)."""
    code, out = _run_child(CLOSED_DATASET)
    assert code == 0, f"exit {code}: {out}"
    lines = out.splitlines()
    assert lines[0] == "<axon.Dataset 'X' (closed)>"
    for name in ("rows", "features", "classes", "targets", "arrays", "train", "evaluate",
                 "validation"):
        assert f"{name} ValueError: axon: this data set has been closed" in lines, out
    assert "predict ValueError: axon: this network has been closed" in lines, out
    assert lines[-1] == "<axon.Net (closed)>"


CLOSE_WHILE_TRAINING = r"""
import threading
import axon
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 6)).astype(np.float32)
y = (X[:, 0] + X[:, 1] > 0).astype(np.int32)

def trained(progress=None):
    net = axon.Net(6, "8:tanh,2:softmax", seed=5)
    data = axon.Dataset.from_arrays(X, y)
    state = axon.OptimizerState()
    summary = net.train(data, optimizer="adam", batch=32, epochs=3, optimizer_state=state,
                        progress=progress and progress(net, data, state), progress_interval=0)
    return net, data, state, summary

def closer(net, data, state):
    outcomes = []
    def close_each():
        for name, thing in (("net", net), ("data", data), ("state", state)):
            try:
                thing.close()
                outcomes.append(f"{name} closed")
            except RuntimeError as error:
                outcomes.append(f"{name} RuntimeError: {error}")
    def progress(info):
        if outcomes:
            return
        # The run is in its first step: another thread closes each object and is
        # refused, then this callback, on the training thread, is refused too.
        other = threading.Thread(target=close_each)
        other.start()
        other.join()
        close_each()
    closer.outcomes = outcomes
    return progress

reference, _, _, _ = trained()
net, data, state, summary = trained(closer)
for line in closer.outcomes:
    print(line)
print("epochs run:", summary["epochs_run"])
print("same weights:", bool(np.array_equal(net.parameters, reference.parameters)))
print("predicts:", bool(np.isfinite(net.predict(X)).all()))
for thing in (net, data, state):
    thing.close()
print("closed after training:", net.closed, data.closed)
"""


def test_closing_while_training_is_refused():
    """net.close(), data.close() and state.close() while training runs raise
    RuntimeError, from another thread and from the run's own progress callback, and
    the run goes on to the weights of an undisturbed run; after it they close. The
    closes come from inside the first progress call (the other thread is joined
    there), so they land during training on any machine. On f404a17 they freed the
    network and data under the running ax_train (a segfault)."""
    code, out = _run_child(CLOSE_WHILE_TRAINING)
    assert code == 0, f"exit {code}: {out}"
    lines = out.splitlines()
    refusals = [line for line in lines if "RuntimeError: axon: cannot close this" in line]
    assert len(refusals) == 6, out  # 3 objects, from 2 threads
    assert [line.split()[0] for line in refusals] == ["net", "data", "state"] * 2, out
    assert "epochs run: 3" in lines and "same weights: True" in lines, out
    assert "predicts: True" in lines and "closed after training: True True" in lines, out


def _train_on(device, precision, X, y):
    net = axon.Net(X.shape[1], "8:tanh,3:softmax", precision=precision, seed=3, device=device)
    summary = net.train(X, y, optimizer="sgd", lr=0.05, momentum=0.9, batch=32, epochs=3)
    return net.parameters, summary["final_train_loss"], net.predict(X)


def test_opencl_device_trains_as_the_cpu():
    """A network on the OpenCL device from Python (PoCL in CI) ends within rounding of
    the same run on the CPU. First the plugin must load into the libaxon ctypes opened
    privately, device or not: on f404a17 it failed ("undefined symbol:
    ax_fail_context"). float64 within 1e-9 relative (as tests/test_opencl_runs.c: the
    operations are the CPU's up to summation order); float32 within 1e-4, where 3
    epochs of float32 rounding came to 2e-7 on PoCL, 3e-16 in float64."""
    if "opencl" not in axon.build_info()["backends"].split():
        pytest.skip("this build has no OpenCL backend (cmake -DAXON_OPENCL=ON; "
                    "docs/opencl.md)")
    with pytest.raises(axon.UnsupportedError, match="no OpenCL device 99"):
        axon.Net(5, "3:softmax", device="opencl:99")
    if axon.device_count("opencl") == 0:
        pytest.skip("no OpenCL device on this machine (no platform or ICD: apt-get install "
                    "pocl-opencl-icd runs OpenCL on the CPU)")
    X, y = blobs()
    for precision, tolerance in (("f64", 1e-9), ("f32", 1e-4)):
        try:
            on_device = _train_on("opencl", precision, X, y)
        except axon.UnsupportedError as error:
            if precision == "f64" and "float64" in str(error):
                continue  # a device without cl_khr_fp64: float32 alone
            raise
        on_cpu = _train_on("cpu", precision, X, y)
        for name, device, cpu in zip(("parameters", "loss", "predictions"), on_device, on_cpu):
            assert np.allclose(device, cpu, rtol=tolerance, atol=tolerance), \
                f"{precision} {name}: largest difference {np.max(np.abs(device - cpu))}"


def test_phases_equal_calls_with_the_state_carried():
    """Net.train(phases=[...]) equals Net.train calls in a row with the options each phase
    names and an axon.OptimizerState carried while the optimizer stays (a new one for adam),
    bit for bit; the history names each epoch's phase; a bad key is a ValueError naming it."""
    X, y = blobs()
    phases = ["lr=0.05,momentum=0.9,epochs=2", "lr=0.02,batch=32,epochs=2,l2=1e-4",
              "optimizer=adam,lr=0.01,epochs=1", "lr=0.005,epochs=2"]
    phased, chained = axon.Net(5, "8:tanh,3:softmax"), axon.Net(5, "8:tanh,3:softmax")
    result = phased.train(X, y, batch=64, phases=phases)
    sgd, adam = axon.OptimizerState(), axon.OptimizerState()
    chained.train(X, y, lr=0.05, momentum=0.9, batch=64, epochs=2, optimizer_state=sgd)
    chained.train(X, y, lr=0.02, momentum=0.9, batch=32, epochs=2, l2=1e-4,
                  optimizer_state=sgd)
    chained.train(X, y, optimizer="adam", lr=0.01, batch=32, epochs=1, l2=1e-4,
                  optimizer_state=adam)
    chained.train(X, y, optimizer="adam", lr=0.005, batch=32, epochs=2, l2=1e-4,
                  optimizer_state=adam)
    assert np.array_equal(phased.parameters, chained.parameters)
    assert [epoch["phase"] for epoch in result["history"]] == [1, 1, 2, 2, 3, 4, 4]
    assert len(result["phases"]) == 4 and result["epochs_run"] == 2
    with pytest.raises(ValueError, match="unknown key 'speed'"):
        phased.train(X, y, phases=["lr=0.1,speed=2"])
    with pytest.raises(TypeError, match="leave out optimizer_state"):
        phased.train(X, y, phases=["epochs=1"], optimizer_state=axon.OptimizerState())
