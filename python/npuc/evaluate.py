"""npuc.evaluate: a package over a labelled data set, in shards, on a Dask cluster or on local processes.

Each worker loads the package once (a module-level cache in the worker process) and runs its shards sample batch by
sample batch; every sample's result depends on that sample only, so the predictions — and the metrics — are the
same bit for bit whatever the number of workers or shards.
"""
import concurrent.futures
import math
import multiprocessing
import os
import sys
import threading

import numpy as np

_worker_runtimes = {}  # (process, thread, package, threads) -> (identity, Runtime): one per worker thread, none inherited by fork


def _worker_runtime(package, threads):
    from . import _cached_runtime
    # A Runtime serves one thread at a time (a Dask worker runs tasks on several), and a forked child must not reuse
    # its parent's (their thread pools do not survive fork): keyed by process and thread; loaded again when the
    # package was re-translated since (its content hash).
    return _cached_runtime(_worker_runtimes, (os.getpid(), threading.get_ident(), package, threads), package, threads)


def _batch_of(rt, names):
    """The package's batch: the first dimension its inputs share."""
    shapes = {i["name"]: i["shape"] for i in rt.inputs}
    batches = {shapes[n][0] if shapes[n] else 1 for n in names}
    if len(batches) != 1:
        from . import _error
        raise _error("evaluate: the package's inputs %s have different batch sizes %s" % (names, sorted(batches)))
    return batches.pop()


def run_batches(rt, shard):
    """Runs `shard` (dict input name -> array of n samples stacked on axis 0) through the Runtime `rt` batch by batch
    of its inputs' batch size: yields (start, stop, batch, outputs) per batch, the outputs of `batch` samples (the
    last, short batch is padded with its last sample; the caller keeps the first stop - start)."""
    names = list(shard)
    batch = _batch_of(rt, names)
    shapes = {i["name"]: tuple(i["shape"]) for i in rt.inputs}
    n = len(next(iter(shard.values())))
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        for name in names:
            x = np.asarray(shard[name][start:stop])
            if stop - start < batch:
                x = np.concatenate([x, np.repeat(x[-1:], batch - (stop - start), axis=0)])
            # (checked by evaluate: samples of the input's shape without its batch dimension, or with a batch of 1)
            # (aligned too: an array Dask deserialized may sit at an odd offset in its frame)
            rt.set_input(name, np.require(x.reshape(shapes[name]), requirements=["C", "A"]))
        yield start, stop, batch, rt.run()


def run_shard(package, shard, output, topk, threads=1):
    """Runs `shard` (dict input name -> array of n samples stacked on axis 0) through the package: the top-`topk`
    class indices of each sample's `output` ([n, topk] int64, best first; ties to the lower index)."""
    from . import _error
    rt = _worker_runtime(package, threads)
    out = np.empty((len(next(iter(shard.values()))), topk), dtype=np.int64)
    for start, stop, batch, y in run_batches(rt, shard):
        if output not in y:
            raise _error("evaluate: the package has no output '%s' (its outputs: %s)" % (output, ", ".join(y)))
        scores = y[output].reshape(batch, -1)[: stop - start]
        # Stable: equal scores keep the lower class index first.
        out[start:stop] = np.argsort(-scores, axis=1, kind="stable")[:, :topk]
    return out


def _run_task(package, start, shard, how, threads):
    """One shard's task: ("top", output, topk) -> run_shard's class indices; ("map", decoder) -> each sample's boxes."""
    if how[0] == "top":
        return run_shard(package, shard, how[1], how[2], threads)
    from .detection import run_shard_boxes
    return run_shard_boxes(package, shard, how[1], start, threads)


def _samples(name, a, spec, dtype, layout):
    """The data set's array for input `name` (samples stacked on axis 0) checked as Runtime.set_input checks an input:
    each sample the input's shape without its batch dimension (or with a batch of 1), the device's element type or,
    for a float input, float32 / float16. Converted only as asked: dtype= casts, layout="NHWC" makes [n, H, W, C]
    samples [n, C, H, W]. Anything else is an npuc.Error naming the input, both shapes or types, and the option."""
    from . import _error
    a = np.asarray(a)
    shape, want = tuple(spec["shape"]), np.dtype(spec["dtype"])
    if layout == "NHWC":
        if len(shape) != 4 or a.ndim != 4:
            raise _error("evaluate: layout='NHWC' is for rank-4 inputs given as [n, H, W, C]; input '%s' is %s, the data "
                         "%s" % (name, "x".join(map(str, shape)), a.shape))
        a = np.transpose(a, (0, 3, 1, 2))
    if dtype is not None:
        a = a.astype(dtype)
    ok = a.dtype == want or (want.kind == "f" and a.dtype in (np.float32, np.float16))
    if not ok:
        raise _error("evaluate: input '%s' is %s on the device; the data set's is %s (give %s%s, or pass dtype= to "
                     "convert)" % (name, want, a.dtype, want, ", float32 or float16" if want.kind == "f" else ""))
    sample = a.shape[1:]
    if sample != shape[1:] and not (shape[:1] == (1,) and sample == shape):
        hint = ""
        if len(shape) == 4 and sample == (shape[2], shape[3], shape[1]):
            hint = " (that is the input's NHWC: pass layout='NHWC' to transpose it)"
        raise _error("evaluate: input '%s' is %s; each sample must be %s (or %s), stacked on the first axis — the data "
                     "set's samples are %s%s" % (name, "x".join(map(str, shape)), "x".join(map(str, shape[1:])) or "a scalar",
                                                  "x".join(map(str, shape)), "x".join(map(str, sample)) or "scalars", hint))
    return a


def _shards(dataset, names, shard_size, specs=None, dtype=None, layout=None):
    """(start, dict of arrays) per shard of a dict of stacked arrays, or of an iterable of such dicts (each array
    checked against the package's input `specs` when given: _samples)."""
    if isinstance(dataset, dict):
        chunks = [dataset]
    else:
        chunks = dataset
    start = 0
    for chunk in chunks:
        arrays = {n: np.asarray(chunk[n]) if specs is None else _samples(n, chunk[n], specs[n], dtype, layout) for n in names}
        lengths = {len(a) for a in arrays.values()}
        if len(lengths) != 1:
            from . import _error
            raise _error("evaluate: the inputs of a chunk hold different numbers of samples %s" % sorted(lengths))
        n = lengths.pop()
        for s in range(0, n, shard_size):
            yield start + s, {k: np.ascontiguousarray(a[s:s + shard_size]) for k, a in arrays.items()}
        start += n


def evaluate(package, dataset, labels, metric="top1", client=None, workers=None, shard_size=None, output=None,
             threads=1, progress=None, dtype=None, layout=None, decoder=None, iou_threshold=0.5):
    """Runs `package` over `dataset` and scores the predictions against `labels`.

    dataset: a dict input name -> numpy array of samples stacked along the first axis (each sample the input's shape
    without its batch dimension, or with it), or an iterable of such dicts (chunks of a larger set). labels: the
    class index per sample. metric: "top1", "top5", or a list of them. client: a dask.distributed Client — the shards
    run on its workers (each loads the package once); without one, `workers` local processes (default: the CPU
    count; 1 runs in this process). output: the output holding the class scores (default: the first).
    The samples are checked as Runtime.set_input checks an input (shape, element type) and converted only as asked:
    dtype= casts them (e.g. np.float32), layout="NHWC" transposes [n, H, W, C] samples to the package's NCHW.

    Returns {"top1": accuracy, ... each metric asked, "predictions": top-1 class per sample (int64), "samples": n}.
    The result is the same bit for bit for any number of workers and any shard size.

    Detection (metric "map", alone): `decoder` turns one sample's outputs (in the package's order; a package of batch
    1: as it gives them, else each output's slice of the batch) into boxes (x, y, w, h, score, class) — a callable, or "FILE.py:FUNCTION" / "MODULE:FUNCTION" loaded in each
    worker —, `labels` holds each sample's ground-truth boxes (rows x, y, w, h, class[, difficult[, crowd]]), and the result is the mean
    average precision at `iou_threshold` (a number, or "coco": COCO's AP over 0.50-0.95, "coco-small" / "-medium" / "-large" by
    object size, "voc07": VOC 2007's eleven-point AP at 0.5; npuc.detection) with "boxes": the decoded boxes per sample.
    """
    from . import Runtime, _error
    package = os.path.abspath(os.fspath(package))
    metrics = [metric] if isinstance(metric, str) else list(metric)
    if "map" in metrics:
        if metrics != ["map"]:
            raise _error("evaluate: metric map is asked alone (its labels are boxes, not classes)")
        if decoder is None:
            raise _error("evaluate: metric map needs decoder= (the function that turns one sample's outputs into boxes)")
        from .detection import IOU_THRESHOLDS_SAID, load_decoder, portable, valid_iou_threshold
        decoder = portable(decoder)
        load_decoder(decoder)  # (a bad one refused here, before any work)
        if output is not None:
            raise _error("evaluate: metric map gives the decoder every output; output= is for topK")
        local = workers if workers is not None else (os.cpu_count() or 1)
        if client is None and local > 1 and not isinstance(decoder, str):
            import pickle
            try:
                pickle.dumps(decoder)
            except Exception:  # (a lambda, a nested function: local worker processes cannot receive it)
                raise _error("evaluate: the decoder %r cannot be sent to worker processes: give \"FILE.py:FUNCTION\", a "
                             "module-level function, or workers=1" % (decoder,))
        if not valid_iou_threshold(iou_threshold):
            raise _error("evaluate: iou_threshold is %r: %s" % (iou_threshold, IOU_THRESHOLDS_SAID))
    elif decoder is not None:
        raise _error("evaluate: decoder= is for metric map (the metric asked: %s)" % ", ".join(metrics))
    ks = []
    for m in metrics:
        if m == "map":
            continue
        if not (m.startswith("top") and m[3:].isdigit() and int(m[3:]) >= 1):
            raise _error("evaluate: unknown metric %r (top1, top5, topK, map)" % (m,))
        ks.append(int(m[3:]))
    topk = max(ks) if ks else 0
    if layout not in (None, "NCHW", "NHWC"):
        raise _error("evaluate: layout must be 'NCHW' (as the package takes it) or 'NHWC' (transposed to it), got %r" % (layout,))
    probe = Runtime(package)
    specs = {i["name"]: i for i in probe.inputs}
    classes = {o["name"]: int(np.prod(o["shape"][1:])) if len(o["shape"]) > 1 else int(np.prod(o["shape"])) for o in probe.outputs}
    names = [i["name"] for i in probe.inputs]
    if output is None:
        output = probe.outputs[0]["name"]
    elif output not in [o["name"] for o in probe.outputs]:
        raise _error("evaluate: the package has no output '%s' (its outputs: %s)" % (output, ", ".join(o["name"] for o in probe.outputs)))
    if topk > classes[output]:
        raise _error("evaluate: top%d asks for more classes than output '%s' has (%d)" % (topk, output, classes[output]))
    probe.close()
    if isinstance(dataset, dict):
        missing = [n for n in names if n not in dataset]
        if missing:
            raise _error("evaluate: the data set has no %s (the package's inputs: %s)" % (", ".join(missing), ", ".join(names)))
        total = len(np.asarray(dataset[names[0]]))
    else:
        total = None
    if not ks:
        labels = labels if labels is not None else []
    else:
        labels = np.asarray(labels).reshape(-1).astype(np.int64)
    if workers is None:
        workers = len(client.scheduler_info()["workers"]) if client is not None else (os.cpu_count() or 1)
    if shard_size is None:
        shard_size = max(1, math.ceil((total or len(labels)) / (4 * max(1, workers))))
    shards = list(_shards(dataset, names, shard_size, specs, dtype, layout))
    n = sum(len(next(iter(s.values()))) for _, s in shards)
    if ks and n != len(labels):
        raise _error("evaluate: %d samples and %d labels" % (n, len(labels)))
    truths = None
    if not ks:
        from .detection import truth_boxes
        truths = truth_boxes(labels, n)
    if progress is None:
        progress = n >= 2000 and sys.stderr.isatty()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=n, unit="sample", desc="npuc.evaluate")
    results = {}
    how = ("top", output, topk) if ks else ("map", decoder)

    def done(start, r):
        results[start] = r
        if bar is not None:
            bar.update(len(r))

    if client is not None:
        # The shards travel inside their tasks (Dask warns of the large graph): scattered data would be faster to send
        # (fashion_dense, 10k images: 54 s against 65 s on one worker) but is lost with a worker that dies, while a
        # task holding its shard is simply run again elsewhere.
        futures = {client.submit(_run_task, package, start, s, how, threads, pure=False): start for start, s in shards}
        from distributed import as_completed
        for f in as_completed(list(futures)):
            done(futures[f], f.result())
    elif workers <= 1:
        for start, s in shards:
            done(start, _run_task(package, start, s, how, threads))
    else:
        ctx = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_run_task, package, start, s, how, threads): start for start, s in shards}
            for f in concurrent.futures.as_completed(futures):
                done(futures[f], f.result())
    if bar is not None:
        bar.close()
    if not ks:
        from .detection import mean_average_precision
        boxes = [b for start in sorted(results) for b in results[start]]
        return {"samples": n, "map": mean_average_precision(boxes, truths, iou_threshold), "boxes": boxes}
    top = np.concatenate([results[start] for start in sorted(results)])
    res = {"samples": n, "predictions": top[:, 0].copy()}
    for m, k in zip(metrics, ks):
        res[m] = float(np.mean(np.any(top[:, :k] == labels[:, None], axis=1)))
    return res
