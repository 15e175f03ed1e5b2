"""axon.prep: the image-to-batch pipeline (docs/prep.md) from Python."""
import ctypes

from . import _lib
from ._lib import lib


def prep(input, output, *, size=256, batch=1024, seed=1, grey=False, labels=None,
         threads=None, progress=None, progress_interval=0.25):
    """Images under `input` (folder, .tar, tar of tars) to shuffled .npy batches in
    `output`, as `axon prep`. progress(dict) is called every progress_interval seconds;
    returning False stops after the batches complete (axon.StoppedError). Returns the
    summary as a dict (warnings: the first ones, "file: why")."""
    options = _lib.prep_options()
    keep = [_lib.encode(str(input)), _lib.encode(str(output)),
            _lib.encode(str(labels)) if labels is not None else None]
    options.input, options.output, options.labels_file = keep
    options.image_size = int(size)
    options.batch_size = int(batch)
    options.seed = int(seed)
    options.grey = bool(grey)
    options.threads = int(threads or 0)
    options.progress_interval = progress_interval
    error = []

    def call(progress_p, _):
        try:
            p = progress_p.contents
            return progress({name: getattr(p, name) for name, _ in _lib.PrepProgress._fields_}) \
                is not False
        except BaseException as e:  # noqa: B902: never through the C frames
            error.append(e)
            return False

    callback = _lib.PREP_PROGRESS_FN(call) if progress else _lib.PREP_PROGRESS_FN()
    summary = _lib.prep_summary()
    try:
        status = lib.ax_prep_run(ctypes.byref(options), callback, None, ctypes.byref(summary))
        if error:
            raise error[0]
        _lib.check(status)
        result = {name: getattr(summary, name) for name, _ in _lib.PrepSummary._fields_
                  if name not in ("size", "warnings")}
        result["warnings"] = [summary.warnings[i].decode("utf-8", "replace")
                              for i in range(summary.warnings_kept)]
        return result
    finally:
        lib.ax_prep_summary_free(ctypes.byref(summary))
