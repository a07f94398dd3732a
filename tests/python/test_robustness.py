"""Crashes and hangs found by the hostile test campaign (issue 46.3, 46.4), from Python: a truncated custom-op plugin
is an npuc.Error (it killed the interpreter with SIGBUS inside dlopen), more threads than npuc takes are an
npuc.Error (a thread the system refused deadlocked), and a child forked by multiprocessing runs multi-threaded after
its parent did (it hung in its first run). Each case runs in a subprocess with a timeout, so a regression fails
instead of killing or hanging the test run."""
import os
import subprocess
import sys
import textwrap

import pytest

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
PLUGINS = os.environ.get("NPUC_TEST_PLUGIN_DIR", "")


def run_script(code, timeout=120, **env):
    """Runs `code` in a fresh interpreter; its exit status and output (a timeout is a failure, not a hang)."""
    e = dict(os.environ, **env)
    try:
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                           timeout=timeout, env=e)
    except subprocess.TimeoutExpired as t:
        pytest.fail("the script did not finish within %d s (a hang): %s %s" % (timeout, t.stdout, t.stderr))
    return p.returncode, p.stdout + p.stderr


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_a_truncated_plugin_raises_an_error_and_the_interpreter_survives(tmp_path):
    rc, out = run_script("""
        import os, sys, npuc
        good = open(os.path.join(os.environ["NPUC_TEST_PLUGIN_DIR"], "libnpuc_test_plugin_good.so"), "rb").read()
        for cut in (len(good) // 2, len(good) - 1, 100):
            path = os.path.join(os.environ["SCRATCH"], "libcut%d.so" % cut)
            open(path, "wb").write(good[:cut])
            try:
                npuc.register_custom_op(path)
            except npuc.Error as e:
                assert "libcut%d.so" % cut in str(e) and "truncated or corrupt" in str(e), str(e)
            else:
                raise SystemExit("no error for %d bytes" % cut)
        # A library whose initialisation crashes is refused by the trial load in a child process.
        try:
            npuc.register_custom_op(os.path.join(os.environ["NPUC_TEST_PLUGIN_DIR"], "libnpuc_test_plugin_crashload.so"))
        except npuc.Error as e:
            assert "crashed while loading (signal 7, SIGBUS)" in str(e), str(e)
        else:
            raise SystemExit("no error for the crashing library")
        print("survived")
    """, SCRATCH=str(tmp_path))
    assert rc == 0 and "survived" in out, out


def test_more_threads_than_npuc_takes_raise_an_error_without_hanging(tmp_path):
    rc, out = run_script("""
        import os, numpy as np, npuc
        r = npuc.translate("digits", os.environ["DIGITS"], target="generic", out=os.environ["SCRATCH"])
        assert r.ok
        for threads in (5000, 1000, 257):
            try:
                npuc.Runtime(str(r.dir), threads=threads)
            except npuc.Error as e:
                assert "threads must be 1 to 256 (got %d)" % threads in str(e), str(e)
            else:
                raise SystemExit("Runtime(threads=%d): no error" % threads)
        x = np.zeros((1, 1, 8, 8), np.float32)
        try:
            npuc.run_model(os.environ["DIGITS"], {"input": x}, threads=1000)
        except npuc.Error as e:
            assert "threads must be 1 to 256 (got 1000)" in str(e), str(e)
        else:
            raise SystemExit("run_model(threads=1000): no error")
        # The most npuc takes still works.
        npuc.Runtime(str(r.dir), threads=256).run(x)
        print("done")
    """, SCRATCH=str(tmp_path), DIGITS=DIGITS)
    assert rc == 0 and "done" in out, out


def test_a_forked_worker_runs_multi_threaded_after_its_parent_did(tmp_path):
    rc, out = run_script("""
        import multiprocessing as mp, os, sys, numpy as np, npuc
        r = npuc.translate("digits", os.environ["DIGITS"], target="generic", out=os.environ["SCRATCH"])
        x = np.load(os.path.join(os.path.dirname(os.environ["DIGITS"]), "test_x.npy"))[:1]
        rt = npuc.Runtime(str(r.dir), threads=4)
        want = rt.run(x)["logits"]
        ref = npuc.run_model(os.environ["DIGITS"], {"input": x}, threads=4)["logits"]

        def worker(q):
            # The parent's runtime and the engine's shared pool, both used by the parent with 4 threads.
            a = rt.run(x)["logits"]
            b = npuc.run_model(os.environ["DIGITS"], {"input": x}, threads=4)["logits"]
            q.put(bool(np.array_equal(a, want) and np.array_equal(b, ref)))

        ctx = mp.get_context("fork")
        for k in range(2):
            q = ctx.Queue()
            p = ctx.Process(target=worker, args=(q,))
            p.start()
            p.join(30)
            if p.is_alive():
                p.kill()
                raise SystemExit("the forked worker hung")
            assert p.exitcode == 0 and q.get(timeout=5), p.exitcode
        assert np.array_equal(rt.run(x)["logits"], want)
        print("done")
    """, SCRATCH=str(tmp_path), DIGITS=DIGITS)
    assert rc == 0 and "done" in out, out
