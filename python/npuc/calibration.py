"""Calibration statistics gathered in shards, on a Dask cluster or in this process (docs/calibration.md, "Statistics
in shards").

The statistics an int8 translation measures on its calibration samples come in two passes over the samples: the
ranges (min, max, counts) and then the histograms over the merged ranges. Each pass runs on shards of the samples —
each shard a task that runs the translation up to its calibration (so it measures the very graph translate would) and
returns that pass's statistics as bytes — and the shards' statistics merge exactly (minima, maxima, integer counts):
the result is the same bytes for any number of shards or workers as one pass over all the samples. Give the merged
bytes to translate as calib_stats= (with the same samples in calib=, which the quantization table's SNR, bias
correction and AdaRound still read):

    stats = npuc.calibration.statistics("model.onnx", "generic-int8", {"input": x}, client=client)
    npuc.translate("m", "model.onnx", target="generic-int8", calib={"input": x}, calib_stats=stats)
"""
import os
import sys

import numpy as np

from ._npuc import Error, merge_calibration_stats, model_io


def read_samples(path, shape=None, mean=(0.0,), scale=(1.0 / 255.0,), bgr=False, what="samples"):
    """Samples stacked on axis 0, as translate's --calib NAME=PATH reads them (docs/calibration.md): a .npy file; a
    folder of .npy shards (name order, concatenated); or a folder of pictures (.png, .jpg, .jpeg, .bmp, .pgm, .ppm,
    .tga in name order; `shape` the input's, [1, C, H, W] or [1, H, W, C]: each picture decoded, resized, and
    (v - mean) * scale per channel, npuc.pictures_as_samples). A folder of both kinds, or of neither, is refused
    (npuc.Error; npuc.sample_folder lists it as translate does)."""
    from . import _error, pictures_as_samples, sample_folder
    label = what + path if what.endswith("=") else "%s %s" % (what, path)

    def load(f):
        at = label if f == path else "%s (%s)" % (label, os.path.basename(f))
        try:
            return np.load(f)
        except OSError as e:
            raise _error("%s: %s" % (at, e), "i/o error")
        except ValueError as e:
            raise _error("%s: %s" % (at, e), "invalid input")

    if not os.path.isdir(path):
        return load(path)
    try:
        shards, pictures = sample_folder(path)
    except Error as e:
        raise _error("%s: %s" % (label, e), getattr(e, "code", "invalid input"))
    if shards:
        parts = [load(str(f)) for f in shards]
        try:
            return np.concatenate(parts)
        except ValueError as e:
            raise _error("%s: the shards do not stack: %s" % (label, e), "invalid input")
    if shape is None:
        raise _error("%s: a folder of pictures needs the input's shape" % label)
    try:
        return pictures_as_samples(pictures, list(shape), list(mean), list(scale), bgr)
    except Error as e:
        raise _error("%s: %s" % (label, e), getattr(e, "code", "invalid input"))


def _shards(calib, names, n):
    total = len(calib[names[0]])
    n = max(1, min(n, total))
    bounds = [total * i // n for i in range(n + 1)]
    return [{k: v[bounds[i]:bounds[i + 1]] for k, v in calib.items()} for i in range(n)]


def _pass(model, target, shard, pass_, ranges, kwargs):
    from . import translate
    return translate("calibration", model, target=target, calib=shard, stats_pass=pass_, stats_ranges=ranges, **kwargs)


def statistics(model, target, calib, shards=None, client=None, workers=None, progress=None, **translate_kwargs):
    """The calibration statistics translate(model, target, calib=calib, **translate_kwargs) would measure, gathered in
    `shards` parts (default: one per worker) as Dask tasks on `client` (or a LocalCluster of `workers` processes made
    here; workers=0: in this process, one shard after another). calib: input name -> samples stacked on axis 0 (or one
    array for a one-input model). Returns bytes for translate's calib_stats=. A task whose worker dies is rerun by Dask
    on another; what cannot be computed fails with an error, never with partial statistics."""
    model = os.fspath(model)
    names = [i["name"] for i in model_io(model)[0]]
    if not isinstance(calib, dict):
        if len(names) != 1:
            raise Error("the model has %d inputs: calib must be a dict input name -> samples" % len(names))
        calib = {names[0]: calib}
    calib = {k: np.ascontiguousarray(np.concatenate([np.asarray(a) for a in v]) if isinstance(v, (list, tuple)) else np.asarray(v))
             for k, v in calib.items()}
    missing = [n for n in names if n not in calib]
    if missing:
        raise Error("the calibration set has no input %r" % missing[0])
    counts = {len(v) for v in calib.values()}
    if len(counts) != 1 or 0 in counts:
        raise Error("every input needs the same number of calibration samples, at least one (got %s)" % sorted(counts))
    if progress is None:
        progress = sys.stderr.isatty()
    own = None
    if client is None and workers != 0:
        import distributed
        own = distributed.LocalCluster(n_workers=workers or (os.cpu_count() or 1), threads_per_worker=1, processes=True,
                                       dashboard_address=None)
        client = distributed.Client(own)
    try:
        n = shards or (len(client.scheduler_info()["workers"]) if client is not None else 1)
        parts = _shards(calib, names, n)
        bar = None
        if progress:
            try:
                from tqdm import tqdm
                bar = tqdm(total=2 * len(parts), desc="npuc calibration", unit="shard", file=sys.stderr)
            except ImportError:
                pass

        def run(pass_, ranges):
            if client is None:
                out = []
                for p in parts:
                    out.append(_pass(model, target, p, pass_, ranges, translate_kwargs))
                    if bar is not None:
                        bar.update(1)
                return out
            from distributed import as_completed
            futures = [client.submit(_pass, model, target, p, pass_, ranges, translate_kwargs, pure=False) for p in parts]
            for _ in as_completed(futures):
                if bar is not None:
                    bar.update(1)
            return client.gather(futures)  # (in shard order: the merge does not depend on it, its bytes neither)

        ranges = merge_calibration_stats(run(1, b""), 1)
        stats = merge_calibration_stats(run(2, ranges), 2)
        if bar is not None:
            bar.close()
        return stats
    finally:
        if own is not None:
            client.close()
            own.close()
