#!/usr/bin/python3
"""Benchmarks of the Python package (issue 26), printed as figures (not a test):

  1. throughput of npuc.Runtime objects on 1 and 2 Python threads (the GIL is released while a package runs):
     the digits package translated for a batch of 32, a loop of batches per thread;
  2. the per-image overhead of the Python path over the C++ runtime's (`npuc bench --io`, same package, same thread
     count): the median time of one inference from Python (set_input + run + the outputs as numpy arrays) against
     the C++ runtime's (setInput + run + outputFloat), for the digits model (tiny) and the Fashion-MNIST ResNet.

    PYTHONPATH=build/python /usr/bin/python3 tools/bench_python.py [--npuc build/bin/npuc] [--runs N]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def threads_throughput(pkg, x, seconds, rounds):
    def loop(counter, stop):
        rt = npuc.Runtime(pkg)
        n = 0
        while not stop.is_set():
            rt.run({"input": x})
            n += 1
        counter.append(n)

    res = {1: 0.0, 2: 0.0}
    for _ in range(rounds):  # alternating, the best of each (a noisy machine)
        for k in (1, 2):
            counts, stop = [], threading.Event()
            ts = [threading.Thread(target=loop, args=(counts, stop)) for _ in range(k)]
            for t in ts:
                t.start()
            time.sleep(seconds)
            stop.set()
            for t in ts:
                t.join()
            res[k] = max(res[k], sum(counts) / seconds)
    return res


def python_median(pkg, x, runs):
    rt = npuc.Runtime(pkg)
    for _ in range(20):
        rt.run({"input": x})
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        rt.run({"input": x})
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def cli_median(cli, pkg, runs):
    out = subprocess.run([cli, "bench", pkg, "--io", "--runs", str(runs), "--warmup", "20"], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"median\s*[:=]?\s*([0-9.]+)\s*ms", out)
    if not m:
        sys.exit("could not read the median from npuc bench:\n" + out)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npuc", default=os.path.join(SRC, "build", "bin", "npuc"))
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="npuc_pybench_")
    digits = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
    x = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))
    b32 = npuc.translate("digits_b32", digits, target="generic", out=tmp, input_shapes={"input": [32, 1, 8, 8]})
    tp = threads_throughput(str(b32.dir), np.ascontiguousarray(x[:32]), a.seconds, a.rounds)
    print("threads (digits, batch 32, generic; best of %d alternating rounds): 1 thread %.0f batches/s, 2 threads %.0f "
          "batches/s: %.2fx" % (a.rounds, tp[1], tp[2], tp[2] / tp[1]))
    models = [("digits", digits, x[:1])]
    fashion = os.path.join(SRC, "models", "fashion", "fashion_resnet.onnx")
    if os.path.exists(fashion):
        models.append(("fashion_resnet", fashion, np.zeros((1, 1, 28, 28), np.float32)))
    for name, onnx, sample in models:
        r = npuc.translate(name, onnx, target="generic", out=tmp)
        # Alternating rounds, the lowest median of each side (this machine is shared and noisy: a slow spell then
        # hits both sides' worst rounds, not one side's only figure).
        pys, cpps = [], []
        for _ in range(a.rounds):
            pys.append(python_median(str(r.dir), np.ascontiguousarray(sample, dtype=np.float32), a.runs))
            cpps.append(cli_median(a.npuc, str(r.dir), a.runs))
        py, cpp = min(pys), min(cpps)
        print("per image, %s (generic, 1 thread; lowest median of %d alternating rounds): Python %.4f ms, C++ (npuc bench --io) %.4f ms: overhead %.4f ms (%+.1f%%)"
              % (name, a.rounds, py, cpp, py - cpp, 100 * (py - cpp) / cpp))


if __name__ == "__main__":
    main()
