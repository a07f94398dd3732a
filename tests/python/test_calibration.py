"""Calibration statistics in shards (npuc.calibration, docs/calibration.md "Statistics in shards"): the same bytes for
any number of shards, in this process or on a 2-worker Dask LocalCluster, as one pass; the package translated with
them is the package of a local calibration; bad input refused."""
import os

import numpy as np
import pytest

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
X = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))
SHAPES = {"input": [1, 1, 8, 8]}


def stats(**kw):
    return npuc.calibration.statistics(DIGITS, "tidl", {"input": X}, input_shapes=SHAPES, progress=False, **kw)


def test_shards_in_process_and_on_a_cluster_give_the_same_statistics_and_package(tmp_path):
    one = stats(workers=0, shards=1)
    assert stats(workers=0, shards=4) == one
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert stats(client=client) == one
        assert stats(client=client, shards=5) == one
    local = npuc.translate("d", DIGITS, target="tidl", out=str(tmp_path / "local"), calib={"input": X}, input_shapes=SHAPES)
    given = npuc.translate("d", DIGITS, target="tidl", out=str(tmp_path / "given"), calib={"input": X}, input_shapes=SHAPES,
                           calib_stats=one)
    assert given.content_hash == local.content_hash


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(npuc.Error, match="measures no calibration statistics"):
        npuc.calibration.statistics(DIGITS, "drpai", {"input": X}, input_shapes=SHAPES, workers=0, progress=False)
    with pytest.raises(npuc.Error, match="the calibration set has no input 'input'"):
        npuc.calibration.statistics(DIGITS, "tidl", {"images": X}, input_shapes=SHAPES, workers=0, progress=False)
    with pytest.raises(npuc.Error, match="not npuc calibration statistics"):
        npuc.translate("d", DIGITS, target="tidl", out=str(tmp_path), calib={"input": X}, input_shapes=SHAPES,
                       calib_stats=b"garbage!")
    with pytest.raises(npuc.Error, match="part 2: measured on another model or options"):
        a = stats(workers=0, shards=1)
        b = npuc.calibration.statistics(DIGITS, "tidl", {"input": X}, input_shapes=SHAPES, workers=0, progress=False,
                                        equalize="relu")
        npuc._npuc.merge_calibration_stats([a, b], 2)
