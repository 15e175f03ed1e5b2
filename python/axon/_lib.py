"""_lib.py: finds libaxon, declares its functions and structs for ctypes, and
turns its failures into Python exceptions.

The structs below mirror include/axon.h field for field; the versioned ones
(ax_net_config, ax_train_config, ax_data_options, ax_prep_options) are filled
by the library's *_init(config, size) functions with ctypes' own sizeof, as
axon.h's "versioned structs" asks of a binding. tests/abi_layout.c prints the
C compiler's sizeof and offsetof of every struct here and test_binding.py
compares them with ctypes'.

Calls through ctypes.CDLL release the GIL, so training runs beside other
Python threads; the library's error message is per thread (axon.h
"Threads"), and ctypes calls the library on the calling thread, so the
message read after a failed call is that call's.
"""
import ctypes
import ctypes.util
import os

# NumPy before libaxon, always. Debian's OpenBLAS OpenMP and pthread builds share the
# soname libopenblas.so.0, and the loader hands a later request for that soname the object
# already loaded. Loaded first, libaxon would make its OpenMP build that object, and
# NumPy's libblas.so.3 (the pthread build's interface layer) would then run on the OpenMP
# build's threading core: a deadlock once anything sets OpenMP's thread count below
# OpenBLAS's (torch at import, threadpoolctl): `import axon; import torch` hung in a torch
# Linear, `import axon; import numpy` in a matmul after omp_set_num_threads(1). With NumPy
# loaded first, the system's pair stays whole and libaxon opens its own private copy of
# the OpenMP build (src/backend/cpu/blas.c), in both import orders.
import numpy  # noqa: F401,E402  (for its BLAS; see above)
from ctypes import (CFUNCTYPE, POINTER, Structure, Union, c_bool, c_char, c_char_p, c_double,
                    c_float, c_int, c_int32, c_int64, c_size_t, c_uint64, c_void_p)

SONAME = "libaxon.so.0"

# ax_status values (axon.h)
OK, BAD_ARGUMENT, BAD_FILE, BAD_DATA, IO_ERROR, OUT_OF_MEMORY, DIVERGED, UNSUPPORTED, \
    INTERRUPTED, DEVICE = range(10)


class AxonError(Exception):
    """Base of every exception axon raises; .status is axon's status name."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class AxonValueError(AxonError, ValueError):
    """Bad arguments or data (AX_STATUS_BAD_ARGUMENT, AX_STATUS_BAD_DATA)."""


class AxonOSError(AxonError, OSError):
    """A missing, damaged or unwritable file (AX_STATUS_BAD_FILE, AX_STATUS_IO_ERROR)."""


class AxonMemoryError(AxonError, MemoryError):
    """AX_STATUS_OUT_OF_MEMORY."""


class DivergedError(AxonError, ArithmeticError):
    """Training produced NaN or Inf (AX_STATUS_DIVERGED)."""


class UnsupportedError(AxonError, NotImplementedError):
    """A combination this build or backend does not offer (AX_STATUS_UNSUPPORTED)."""


class DeviceError(AxonError, RuntimeError):
    """The device (a GPU) or its runtime failed (AX_STATUS_DEVICE)."""


class StoppedError(AxonError):
    """A run stopped on request (AX_STATUS_INTERRUPTED) other than Ctrl-C."""


_EXCEPTIONS = {
    BAD_ARGUMENT: AxonValueError, BAD_DATA: AxonValueError, BAD_FILE: AxonOSError,
    IO_ERROR: AxonOSError, OUT_OF_MEMORY: AxonMemoryError, DIVERGED: DivergedError,
    UNSUPPORTED: UnsupportedError, INTERRUPTED: StoppedError, DEVICE: DeviceError,
}


# ------------------------------------------------------------------ structs

class LayerDense(Structure):
    _fields_ = [("units", c_int64), ("activation", c_int)]


class LayerConv(Structure):
    _fields_ = [("filters", c_int64), ("kernel_height", c_int64), ("kernel_width", c_int64),
                ("stride", c_int64), ("padding", c_int64), ("activation", c_int)]


class LayerPool(Structure):
    _fields_ = [("window", c_int64), ("stride", c_int64)]


class LayerUnion(Union):
    _fields_ = [("dense", LayerDense), ("conv", LayerConv), ("pool", LayerPool)]


class LayerSpec(Structure):
    _anonymous_ = ("u",)
    _fields_ = [("kind", c_int), ("u", LayerUnion)]


class Device(Structure):
    _fields_ = [("backend", c_char * 16), ("index", c_int)]


class NetConfig(Structure):
    _fields_ = [("size", c_size_t), ("input_width", c_int64), ("layer_count", c_int),
                ("layers", POINTER(LayerSpec)), ("parsed_layers", POINTER(LayerSpec)),
                ("loss", c_int), ("init", c_int), ("init_range", c_double),
                ("precision", c_int), ("seed", c_uint64), ("device", Device),
                ("input_shape", c_int64 * 3)]


class Progress(Structure):
    _fields_ = [("epoch", c_int), ("epochs", c_int), ("batch", c_int64), ("batches", c_int64),
                ("epoch_done", c_bool), ("samples_per_second", c_double),
                ("train_loss", c_double), ("validation_loss", c_double),
                ("validation_accuracy", c_double), ("test_loss", c_double),
                ("test_accuracy", c_double), ("epoch_seconds", c_double),
                ("gflops", c_double), ("eta_seconds", c_double), ("threads", c_int),
                ("fewer_threads_seconds", c_double), ("learning_rate", c_double),
                ("data_wait_seconds", c_double)]


PROGRESS_FN = CFUNCTYPE(c_bool, POINTER(Progress), c_void_p)
# ax_predict_rows_fn: rows [first, first + count) of ax_net_predict_dataset's outputs.
PREDICT_ROWS_FN = CFUNCTYPE(c_bool, c_int64, c_int64, POINTER(c_float), c_void_p)


class TrainConfig(Structure):
    _fields_ = [("size", c_size_t), ("optimizer", c_int), ("learning_rate", c_double),
                ("momentum", c_double), ("nesterov", c_bool), ("beta1", c_double),
                ("beta2", c_double), ("epsilon", c_double), ("gtol", c_double),
                ("lbfgs_memory", c_int), ("line_search_max_evaluations", c_int),
                ("batch_size", c_int64), ("epochs", c_int), ("l2", c_double),
                ("dropout", c_double), ("early_stop", c_int), ("keep_best", c_int),
                ("seed", c_uint64), ("shuffle", c_bool), ("progress_interval", c_double),
                ("progress", PROGRESS_FN), ("progress_user", c_void_p),
                ("checkpoint_every", c_int), ("checkpoint_prefix", c_char_p),
                ("keep_checkpoints", c_int), ("checkpoint_note", c_char_p),
                ("resume", c_void_p), ("communicator", c_void_p), ("check_replicas", c_bool),
                ("adapt_threads", c_bool), ("optimizer_state", c_void_p),
                ("epsilon_before_correction", c_bool),
                ("keep_subnormals", c_bool), ("l1", c_double), ("weight_decay", c_double),
                ("clip_norm", c_double), ("clip_value", c_double),
                ("dropout_layers", c_double * 64),  # AX_MAX_LAYERS
                ("lr_schedule", c_int), ("lr_gamma", c_double), ("lr_step_every", c_int),
                ("lr_min", c_double), ("lr_patience", c_int), ("lr_power", c_double),
                ("lr_tol", c_double), ("warmup_steps", c_int64)]


class TrainSummary(Structure):
    _fields_ = [("size", c_size_t), ("epochs_run", c_int), ("best_epoch", c_int), ("seconds", c_double),
                ("gflop", c_double), ("final_train_loss", c_double),
                ("final_test_accuracy", c_double), ("evaluations", c_int64),
                ("gradient_evaluations", c_int64), ("stop_reason", c_char_p),
                ("communication_seconds", c_double), ("setup_seconds", c_double)]


class Evaluation(Structure):
    _fields_ = [("size", c_size_t), ("loss", c_double), ("accuracy", c_double), ("rows", c_int64),
                ("classes", c_int64), ("confusion", POINTER(c_int64))]


class BuildInfo(Structure):
    _fields_ = [("version", c_char_p), ("blas", c_char_p), ("blas_kernels", c_char_p),
                ("cpu_features", c_char_p), ("backends", c_char_p), ("compiler", c_char_p),
                ("openmp", c_bool), ("prep", c_bool), ("stats", c_bool)]


class CsvOptions(Structure):
    _fields_ = [("label_column", c_int64), ("header", c_bool), ("regression", c_bool),
                ("scale", c_double), ("delimiter", c_char)]


class DataOptions(Structure):
    _fields_ = [("size", c_size_t), ("part", c_int), ("csv", CsvOptions), ("scale", c_double),
                ("labels", c_char_p), ("synth_rows", c_int64), ("synth_features", c_int64),
                ("seed", c_uint64), ("name", c_char_p), ("labels_name", c_char_p),
                ("stream", c_bool), ("crop", c_int64), ("mirror", c_bool), ("mean", c_char_p),
                ("views", c_int), ("lighting", c_double), ("unlabeled", c_bool)]


class PrepOptions(Structure):
    _fields_ = [("size", c_size_t), ("input", c_char_p), ("output", c_char_p),
                ("labels_file", c_char_p), ("image_size", c_int64), ("batch_size", c_int64),
                ("seed", c_uint64), ("grey", c_bool), ("threads", c_int),
                ("progress_interval", c_double), ("ground_truth", c_char_p),
                ("format", c_int), ("jpeg_quality", c_int), ("from_cuda_convnet2", c_bool)]


class PrepProgress(Structure):
    _fields_ = [("images_done", c_int64), ("images_total", c_int64), ("batches_done", c_int64),
                ("batches_total", c_int64), ("images_skipped", c_int64),
                ("images_per_second", c_double), ("eta_seconds", c_double),
                ("seconds", c_double)]


PREP_PROGRESS_FN = CFUNCTYPE(c_bool, POINTER(PrepProgress), c_void_p)


class PrepSummary(Structure):
    _fields_ = [("size", c_size_t), ("images_found", c_int64), ("images_written", c_int64),
                ("images_skipped", c_int64), ("files_ignored", c_int64),
                ("batches_written", c_int64), ("batches_reused", c_int64), ("labels", c_int64),
                ("seconds", c_double), ("seconds_enumerate", c_double),
                ("seconds_read", c_double), ("seconds_decode", c_double),
                ("seconds_resize", c_double), ("seconds_write", c_double),
                ("warning_count", c_int64), ("warnings_kept", c_int64),
                ("warnings", POINTER(c_char_p)), ("links_skipped", c_int64)]


class Regularization(Structure):
    _fields_ = [("size", c_size_t), ("l2", c_double), ("dropout", c_double), ("dropout_key", c_uint64),
                ("dropout_first_row", c_int64), ("l1", c_double),
                ("dropout_layers", c_void_p)]


# Every struct the layout test compares with the C compiler's (tests/abi_layout.c).
STRUCTS = {
    "ax_layer_spec": LayerSpec, "ax_device": Device, "ax_net_config": NetConfig,
    "ax_progress": Progress, "ax_train_config": TrainConfig, "ax_train_summary": TrainSummary,
    "ax_evaluation": Evaluation, "ax_build_info": BuildInfo, "ax_csv_options": CsvOptions,
    "ax_data_options": DataOptions, "ax_prep_options": PrepOptions,
    "ax_prep_progress": PrepProgress, "ax_prep_summary": PrepSummary,
    "ax_regularization": Regularization,
}

# ------------------------------------------------------------ finding the library


def _candidates():
    """(place, why) pairs in the order they are tried."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("AXON_LIBRARY")
    if env:
        path = os.path.join(env, SONAME) if os.path.isdir(env) else env
        yield path, "$AXON_LIBRARY"
        return  # an explicit choice is not second-guessed
    prefix = os.environ.get("AXON_PREFIX")
    if prefix:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            yield os.path.join(prefix, libdir, SONAME), "$AXON_PREFIX"
    # Inside the package, where `pip install .` puts it (setup.py)
    yield os.path.join(here, SONAME), "the package's folder (pip install .)"
    # The source tree's build folder: python/axon/ -> ../../build
    source = os.path.dirname(os.path.dirname(here))
    yield os.path.join(source, "build", SONAME), "the build tree"
    # Installed beside the package: PREFIX/lib/python3/dist-packages/axon -> PREFIX/lib
    yield os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), SONAME), \
        "the prefix the package is installed in"
    yield SONAME, "the dynamic loader's path (LD_LIBRARY_PATH, ldconfig)"


def _load():
    tried = []
    for path, why in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"  {path} ({why}): no such file")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as error:
            tried.append(f"  {path} ({why}): {error}")
    raise ImportError(
        "axon: cannot find libaxon (" + SONAME + "). Looked in:\n" + "\n".join(tried) +
        "\nBuild it (bash scripts/setup.sh), or set AXON_LIBRARY to the library file or its "
        "folder, or AXON_PREFIX to the prefix `cmake --install` used.")


def _best_openblas_core():
    """The OpenBLAS core that fits this CPU (tools/axon/blas_env.c's best_core)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                          if line.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= set(flags):
        return "Haswell"
    return None


def _loaded(name):
    try:
        with open("/proc/self/maps") as maps:
            return any(name in line for line in maps)
    except OSError:
        return False


def _others_running():
    """Tasks of other processes running now, or -1 where that cannot be told: the least
    of three looks a millisecond apart at /proc/stat's procs_running less this process's
    own running threads, as ax_others_running() counts them (src/perf/cpu_load.c), which
    cannot be called before libaxon (and with it libgomp) is loaded."""
    import time
    try:
        with open("/proc/stat") as stat:
            cpus = sum(1 for line in stat if line.startswith("cpu") and line[3].isdigit())
        if cpus != len(os.sched_getaffinity(0)):
            return -1
        least = -1
        for look in range(3):
            if look:
                time.sleep(0.001)
            with open("/proc/stat") as stat:
                running = next(int(line.split()[1]) for line in stat
                               if line.startswith("procs_running "))
            own = 0
            for task in os.listdir("/proc/self/task"):
                try:
                    with open(f"/proc/self/task/{task}/stat") as stat:
                        own += stat.read().rpartition(")")[2].split()[0] == "R"
                except OSError:
                    pass
            others = max(running - own, 0)
            least = others if least < 0 else min(least, others)
        return least
    except (OSError, StopIteration, ValueError, IndexError):
        return -1


_AVX512_CORES = ("skylakex", "cooperlake", "sapphirerapids")

# The OPENBLAS_CORETYPE the environment set and the package did not use (as `axon info`
# reports the command's: AXON_IGNORED_OPENBLAS_CORETYPE), or None.
ignored_openblas_coretype = None


def _load_tuned():
    """Loads libaxon in the environment the axon command gives itself
    (tools/axon/blas_env.c), set only for the load and only where the user set nothing:
    - OPENBLAS_CORETYPE = the core fitting the CPU: Debian 12's OpenBLAS 0.3.21 does not
      know newer Intel CPUs and falls back to Prescott's SSE3 kernels (this machine: the
      Fashion-MNIST MLP 784-128-128-10 took 2x the axon command's time). A value naming a
      core without AVX-512 on a CPU with it (OPENBLAS_CORETYPE=Haswell, preset on some
      machines) is replaced as the command replaces it, unless AXON_KEEP_OPENBLAS_CORETYPE
      is set: GEMMs at AVX2's rate run at about half AVX-512's;
    - GOMP_SPINCOUNT: libgomp's threads spin 300,000 rounds before they sleep, and
      on a shared machine a spinning thread takes the time slice its partner needs (in
      this process: 5 epochs of that MLP took 95 s spinning at load 4, 3-7 s with 1000);
      10000 where no other process runs at import, 1000 where one does (the axon
      command's choice; load that comes later is the thread governor's).
    Both are read once, when OpenBLAS and libgomp are loaded. OpenBLAS: where NumPy loaded
    its pthread build first, libaxon opens the OpenMP build itself, now, with these
    settings (src/backend/cpu/blas.c). libgomp: one per process, so where scikit-learn
    loaded it first its spin count stays libgomp's own; where axon would have chosen 1000,
    ax_openmp_spin_briefly makes libgomp spin 100 rounds instead (docs/python.md; loading
    libaxon with its own libgomp through dlmopen was tried and crashed scikit-learn's
    checks in OpenSSL: two C libraries in one process)."""
    global ignored_openblas_coretype
    import warnings
    added = {}
    preset = os.environ.get("OPENBLAS_CORETYPE")
    if not os.environ.get("AXON_KEEP_OPENBLAS_CORETYPE"):
        core = _best_openblas_core()
        if core and not preset:
            added["OPENBLAS_CORETYPE"] = core
        elif core in ("SkylakeX", "Cooperlake") and preset and \
                preset.lower() not in _AVX512_CORES:
            added["OPENBLAS_CORETYPE"] = core
            ignored_openblas_coretype = preset
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        added["GOMP_SPINCOUNT"] = "10000" if _others_running() == 0 else "1000"
    gomp_before = _loaded("libgomp")
    saved = {name: os.environ.get(name) for name in added}
    os.environ.update(added)
    try:
        loaded = _load()
    finally:
        for name, value in saved.items():  # not passed on to child processes
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    if gomp_before and added.get("GOMP_SPINCOUNT") == "1000":
        # libgomp runs with its own 300,000 rounds where axon would have chosen 1000 (another
        # process runs): ax_openmp_spin_briefly holds an idle OpenMP team so that libgomp
        # spins 100 rounds (src/perf/openmp_spin.c). On an idle machine libgomp's own count
        # is as fast as axon's 10000, as it measured, and is left.
        loaded[0].ax_openmp_spin_briefly.restype = c_int
        if loaded[0].ax_openmp_spin_briefly() != OK:
            warnings.warn("axon was imported after a library that started OpenMP, whose "
                          "threads spin while they wait, and could not shorten the spinning: "
                          "training on a held thread count can be slower on a busy machine; "
                          "set GOMP_SPINCOUNT=1000 in the environment.", RuntimeWarning,
                          stacklevel=3)
    return loaded


lib, path = _load_tuned()


def _declare(name, restype, *argtypes):
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)


_P = c_void_p  # opaque objects (ax_net *, ax_dataset *)
_declare("ax_error_message", c_char_p)
_declare("ax_status_name", c_char_p, c_int)
_declare("ax_set_threads", c_int, c_int)
_declare("ax_threads", c_int)
_declare("ax_build_info_get", BuildInfo)
_declare("ax_activation_parse", c_int, c_char_p, POINTER(c_int))
_declare("ax_loss_parse", c_int, c_char_p, POINTER(c_int))
_declare("ax_init_parse", c_int, c_char_p, POINTER(c_int))
_declare("ax_optimizer_parse", c_int, c_char_p, POINTER(c_int))
_declare("ax_activation_name", c_char_p, c_int)
_declare("ax_loss_name", c_char_p, c_int)
_declare("ax_precision_name", c_char_p, c_int)
_declare("ax_optimizer_name", c_char_p, c_int)
_declare("ax_optimizer_default_learning_rate", c_double, c_int)
_declare("ax_optimizer_is_full_batch", c_bool, c_int)
_declare("ax_device_parse", c_int, c_char_p, POINTER(Device))
_declare("ax_device_count", c_int, c_char_p)
_declare("ax_dataset_wrap", c_int, c_int64, c_int64, c_int64, c_int64, POINTER(c_float),
         POINTER(c_int32), POINTER(c_float), c_char_p, POINTER(_P))
_declare("ax_dataset_wrap_csr", c_int, c_int64, c_int64, c_int64, c_int64, POINTER(c_int64),
         POINTER(c_int32), POINTER(c_float), POINTER(c_int32), POINTER(c_float), c_char_p,
         POINTER(_P))
_declare("ax_dataset_is_sparse", c_bool, _P)
_declare("ax_dataset_open", c_int, c_char_p, POINTER(DataOptions), POINTER(_P))
_declare("ax_dataset_spec_has_test_part", c_bool, c_char_p)
_declare("ax_dataset_free", None, _P)
_declare("ax_dataset_rows", c_int64, _P)
_declare("ax_dataset_features", c_int64, _P)
_declare("ax_dataset_classes", c_int64, _P)
_declare("ax_dataset_targets", c_int64, _P)
_declare("ax_dataset_source", c_char_p, _P)
_declare("ax_dataset_image_shape", c_bool, _P, POINTER(c_int64))
_declare("ax_dataset_set_image_shape", c_int, _P, POINTER(c_int64))
_declare("ax_dataset_features_data", POINTER(c_float), _P)
_declare("ax_dataset_labels_data", POINTER(c_int32), _P)
_declare("ax_dataset_targets_data", POINTER(c_float), _P)
_declare("ax_dataset_split", c_int, _P, c_double, c_uint64, POINTER(_P), POINTER(_P))
_declare("ax_data_options_init", None, POINTER(DataOptions), c_size_t)
_declare("ax_net_config_init", None, POINTER(NetConfig), c_size_t)
_declare("ax_train_config_init", None, POINTER(TrainConfig), c_size_t)
_declare("ax_prep_options_init", None, POINTER(PrepOptions), c_size_t)
_declare("ax_train_summary_init", None, POINTER(TrainSummary), c_size_t)
_declare("ax_evaluation_init", None, POINTER(Evaluation), c_size_t)
_declare("ax_prep_summary_init", None, POINTER(PrepSummary), c_size_t)
_declare("ax_regularization_init", None, POINTER(Regularization), c_size_t)
_declare("ax_lr_schedule_parse", c_int, c_char_p, POINTER(TrainConfig))
_declare("ax_train_phase_parse", c_int, c_char_p, POINTER(TrainConfig))
_declare("ax_layers_parse", c_int, c_char_p, POINTER(NetConfig))
_declare("ax_net_config_release", None, POINTER(NetConfig))
_declare("ax_layers_format", None, POINTER(NetConfig), c_char_p, c_size_t)
_declare("ax_net_create", c_int, POINTER(NetConfig), POINTER(_P))
_declare("ax_net_free", None, _P)
_declare("ax_net_config_get", POINTER(NetConfig), _P)
_declare("ax_net_layer_width", c_int64, _P, c_int)
_declare("ax_net_layer_kind", c_int, _P, c_int, POINTER(c_int))
_declare("ax_net_layer_activation", c_int, _P, c_int, POINTER(c_int))
_declare("ax_net_layer_output_shape", c_int, _P, c_int, POINTER(c_int64))
_declare("ax_layer_kind_name", c_char_p, c_int)
_declare("ax_net_parameter_count", c_int64, _P)
_declare("ax_net_parameters_get", None, _P, POINTER(c_double))
_declare("ax_net_parameters_set", None, _P, POINTER(c_double))
_declare("ax_net_save", c_int, _P, c_char_p)
_declare("ax_net_export_onnx", c_int, _P, c_char_p)
_declare("ax_net_load", c_int, c_char_p, c_int, POINTER(_P))
_declare("ax_net_predict", c_int, _P, POINTER(c_float), c_int64, POINTER(c_float))
_declare("ax_net_predict_dataset", c_int, _P, _P, PREDICT_ROWS_FN, c_void_p)
_declare("ax_net_evaluate", c_int, _P, _P, POINTER(Evaluation))
_declare("ax_evaluation_free", None, POINTER(Evaluation))
_declare("ax_net_activations", c_int, _P, _P, c_int, POINTER(c_float))
_declare("ax_train", c_int, _P, _P, _P, _P, POINTER(TrainConfig), POINTER(TrainSummary))
_declare("ax_optimizer_state_create", c_int, POINTER(_P))
_declare("ax_optimizer_state_free", None, _P)
_declare("ax_optimizer_state_describe", c_bool, _P, POINTER(c_int), POINTER(c_int),
         POINTER(c_int64), POINTER(c_int), POINTER(c_int64))
_declare("ax_optimizer_state_copy_array", c_int, _P, c_int, POINTER(c_double))
_declare("ax_optimizer_state_assign", c_int, _P, c_int, c_int, c_int64, c_int, c_int64,
         POINTER(POINTER(c_double)))
_declare("ax_stats_entropy_mi", c_int, POINTER(c_float), POINTER(c_float), c_int64, c_int64,
         POINTER(c_double), POINTER(c_double))
_declare("ax_stats_tensor_mean", c_int, POINTER(c_float), POINTER(c_float), POINTER(c_float),
         c_int64, c_int64, POINTER(c_float))
_declare("ax_prep_run", c_int, POINTER(PrepOptions), PREP_PROGRESS_FN, c_void_p,
         POINTER(PrepSummary))
_declare("ax_prep_summary_free", None, POINTER(PrepSummary))


def error_message():
    return lib.ax_error_message().decode("utf-8", "replace")


def check(status, context=None):
    """Raises the exception for a failed status with axon's message."""
    if status == OK:
        return
    message = error_message()
    if context:
        message = f"{context}: {message}"
    name = lib.ax_status_name(status).decode()
    raise _EXCEPTIONS.get(status, AxonError)(message or name, name)


def encode(text):
    return None if text is None else os.fsencode(text)


def parse_enum(function, what, name):
    """An enum value from its axon name ("relu", "adam"), or ValueError naming the choices."""
    if isinstance(name, int):
        return name
    value = c_int()
    check(function(encode(str(name)), ctypes.byref(value)), what)
    return value.value


def _precision_names():
    """{enum value: name} as the library spells them (ax_precision_name)."""
    names = {}
    while (name := lib.ax_precision_name(len(names)).decode()) != "unknown":
        names[len(names)] = name
    return names


PRECISION_NAMES = _precision_names()


def _sized(cls, init):
    """A versioned struct filled with the library's defaults for ctypes' size of it."""
    value = cls()
    init(ctypes.byref(value), ctypes.sizeof(value))
    return value


def net_config():
    return _sized(NetConfig, lib.ax_net_config_init)


def train_config():
    return _sized(TrainConfig, lib.ax_train_config_init)


def data_options():
    return _sized(DataOptions, lib.ax_data_options_init)


def prep_options():
    return _sized(PrepOptions, lib.ax_prep_options_init)


def regularization():
    return _sized(Regularization, lib.ax_regularization_init)


# The results the library writes, sized the same way: it writes no byte past ctypes' size.
def train_summary():
    return _sized(TrainSummary, lib.ax_train_summary_init)


def evaluation():
    return _sized(Evaluation, lib.ax_evaluation_init)


def prep_summary():
    return _sized(PrepSummary, lib.ax_prep_summary_init)


def _check_openblas_kernels():
    """Warns when OpenBLAS (loaded before axon, by NumPy) runs kernels older than the CPU."""
    info = lib.ax_build_info_get()
    best = _best_openblas_core()
    kernels = (info.blas_kernels or b"").decode()
    if best and info.blas.startswith(b"OpenBLAS") and kernels.lower() in (
            "prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom",
            "barcelona", "bulldozer", "piledriver", "steamroller", "excavator", "nano"):
        import warnings
        warnings.warn(f"OpenBLAS runs {kernels} kernels on a CPU that fits {best}'s (it was "
                      "loaded before axon, e.g. by NumPy, and does not know this CPU): GEMMs "
                      f"are several times slower. Import axon before NumPy, or set "
                      f"OPENBLAS_CORETYPE={best} in the environment.", RuntimeWarning,
                      stacklevel=3)


_check_openblas_kernels()
