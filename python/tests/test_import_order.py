"""Issue 29: axon's BLAS and speed do not depend on whether NumPy, SciPy or scikit-learn
was imported first. Each case runs in a fresh process (what was loaded before axon is
the point), with OPENBLAS_CORETYPE, OMP_WAIT_POLICY and the like removed from its
environment and GOMP_SPINCOUNT=10000 in it unless the case says otherwise: libgomp's
spin count is read when libgomp is loaded, which scikit-learn does first in one order;
where axon's choice would be 1000 (a busy machine) the package makes libgomp spin 100
rounds instead (src/perf/openmp_spin.c, docs/python.md)."""
import json
import os
import subprocess
import sys

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
order = sys.argv[1]
sys.path.insert(0, sys.argv[2])
if order == "sklearn-first":
    import numpy as np
    import sklearn.neural_network
    # scikit-learn at work first (NumPy's BLAS pool and libgomp's started), as a
    # notebook or GridSearchCV would have it
    rng = np.random.default_rng(0)
    sklearn.neural_network.MLPClassifier((32,), max_iter=2).fit(
        rng.random((500, 64)), rng.integers(0, 3, 500))
    import axon.sklearn
else:
    import axon.sklearn
    import numpy as np
    import sklearn.neural_network
result = {"info": axon.build_info()}
maps = open("/proc/self/maps").read()
result["openblas_files"] = sorted({line.split()[-1] for line in maps.splitlines()
                                   if "libopenblas" in line})
if len(sys.argv) > 3:
    rows, epochs = int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(1)
    centres = rng.random((10, 784), dtype=np.float32)
    y = rng.integers(0, 10, rows)
    X = (centres[y] + 0.5 * rng.random((rows, 784), dtype=np.float32)).astype(np.float32)
    clf = axon.sklearn.MLPClassifier(hidden_layer_sizes=(128, 128), solver="adam",
                                     batch_size=128, max_iter=epochs, tol=0,
                                     n_iter_no_change=epochs + 1, random_state=0,
                                     n_threads=(int(sys.argv[5]) or None) if len(sys.argv) > 5 else 2)
    import warnings
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    clf.fit(X, y)
    result["seconds"] = time.perf_counter() - start
print(json.dumps(result))
"""


def run(order, *args, env=None, strict=True):
    """The child's JSON; strict: its RuntimeWarnings are errors."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OPENBLAS_CORETYPE", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY",
                                "OMP_NUM_THREADS", "AXON_OWN_NAMESPACE",
                                "AXON_KEEP_OPENBLAS_CORETYPE")}
    environment["GOMP_SPINCOUNT"] = "10000"
    environment.update(env or {})
    environment = {k: v for k, v in environment.items() if v is not None}
    warnings = ["-W", "error::RuntimeWarning"] if strict else []
    done = subprocess.run([sys.executable, *warnings, "-c", CHILD, order,
                           PYTHON_DIR, *map(str, args)], env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def openblas_is_openmp_and_ours(result):
    return "OpenMP threads" in result["info"]["blas"]


@pytest.mark.parametrize("order", ["axon-first", "sklearn-first"])
def test_axon_runs_the_openmp_openblas_in_either_order(order):
    """libaxon on the OpenMP OpenBLAS with the kernels fitting the CPU, whatever NumPy
    loaded first (Debian's NumPy: the pthread build, whose soname libaxon's need took
    before src/backend/cpu/blas.c opened the OpenMP build itself)."""
    result = run(order)
    info = result["info"]
    if not info["blas"].startswith("OpenBLAS"):
        pytest.skip(f"built with {info['blas']}")
    assert openblas_is_openmp_and_ours(result), info["blas"]
    assert info["blas_kernels"] == run("axon-first")["info"]["blas_kernels"]
    # The package loads NumPy before libaxon in both orders, so where NumPy's BLAS is
    # the pthread build libaxon runs on its own copy of the OpenMP build in both.
    pthread_loaded = any("openblas-pthread" in name for name in result["openblas_files"])
    assert ("own copy" in info["blas"]) == pthread_loaded, (info["blas"], result)


LIVENESS = r"""
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import axon
import numpy
# What torch does at import on a machine it counts one physical core on, and
# threadpoolctl's limits: OpenMP's thread count below OpenBLAS's.
ctypes.CDLL("libgomp.so.1").omp_set_num_threads(1)
a = numpy.ones((512, 512), numpy.float32)
print((a @ a)[0, 0])
"""


def test_numpy_after_axon_survives_a_lowered_openmp_thread_count():
    """`import axon` first used to make libaxon's OpenMP OpenBLAS the process's
    libopenblas.so.0, under NumPy's pthread interface layer (libblas.so.3): a matmul then
    waited forever for an OpenMP thread that was never started once the OpenMP thread
    count was lowered (a torch Linear after `import axon; import torch` hung so). The
    timeout is a hang's bound, not a speed verdict: the product takes milliseconds."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    try:
        done = subprocess.run([sys.executable, "-c", LIVENESS, PYTHON_DIR], env=environment,
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("a NumPy matmul after `import axon` and omp_set_num_threads(1) hung")
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) == 512.0


SPINNER = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass\n"


def test_imported_after_scikit_learn_on_a_busy_machine_libgomp_spins_briefly():
    """libgomp came first with its own spin count (300,000 rounds) and another process
    runs: axon holds an idle OpenMP team (the thread "axon-omp-spin") so that libgomp spins
    100 rounds, where axon imported first would have set 1000; no warning."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    check = CHILD.replace('print(json.dumps(result))', """
result["threads"] = []
for task in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{task}/comm") as comm:
        result["threads"].append(comm.read().strip())
print(json.dumps(result))""")
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", check,
                               "sklearn-first", PYTHON_DIR], env=environment,
                              capture_output=True, text=True, timeout=600)
    finally:
        spinner.kill()
        spinner.wait()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "axon-omp-spin" in result["threads"], result["threads"]


def _avx512():
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split() for line in cpuinfo if line.startswith("flags")), [])
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags)


@pytest.mark.skipif(not _avx512(), reason="the CPU has no AVX-512")
@pytest.mark.parametrize("order", ["axon-first", "sklearn-first"])
def test_a_preset_pre_avx512_coretype_is_replaced_as_the_command_does(order):
    result = run(order, env={"OPENBLAS_CORETYPE": "Haswell"})
    info = result["info"]
    if not info["blas"].startswith("OpenBLAS"):
        pytest.skip(f"built with {info['blas']}")
    assert info["blas_kernels"] in ("SkylakeX", "Cooperlake"), info
    assert info["ignored_openblas_coretype"] == "Haswell"
    kept = run(order, env={"OPENBLAS_CORETYPE": "Haswell", "AXON_KEEP_OPENBLAS_CORETYPE": "1"})
    assert kept["info"]["blas_kernels"] == "Haswell"
    assert kept["info"]["ignored_openblas_coretype"] is None
