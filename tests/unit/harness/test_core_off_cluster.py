"""The Core API off-cluster: the same script runs with `python train.py` and local stand-ins."""

import json
import math

import pytest

from stalwart import core
from stalwart.harness.core._train import _plain, check_metrics


def test_off_cluster_checkpoints_go_to_a_local_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    with core.init(checkpoint_storage=str(tmp_path)) as ctx:
        assert ctx.info is None and ctx.distributed.size == 1
        ctx.train.report_training_metrics(1, {"loss": 0.5})
        with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
            (path / "w.txt").write_text("weights")
        assert json.loads((tmp_path / uuid / "metadata.json").read_text()) == {"steps_completed": 1}
        assert ctx.checkpoint.get_metadata(uuid)["steps_completed"] == 1
        with ctx.checkpoint.restore_path(uuid) as restored:
            assert (restored / "w.txt").read_text() == "weights"
        for op in ctx.searcher.operations():
            assert op.length == 1
            op.report_progress(1)
            op.report_completed(0.5)
        assert ctx.preempt.should_preempt() is False


def test_invalid_hp_is_swallowed_by_the_context(tmp_path):
    with core.init(checkpoint_storage=str(tmp_path)):
        raise core.InvalidHP("lr too large")


def test_non_finite_metrics_are_accepted_and_sent_as_determined_wire_strings():
    metrics = {"loss": math.nan, "acc": {"top1": math.inf}, "l": [-math.inf, 0.5]}
    check_metrics(metrics)  # accepted, as Determined accepts them
    assert _plain(metrics) == {"loss": "NaN", "acc": {"top1": "Infinity"}, "l": ["-Infinity", 0.5]}
    with pytest.raises(TypeError, match="metrics must be a dict"):
        check_metrics([math.nan])


def test_numpy_and_torch_scalars_are_accepted():
    np = pytest.importorskip("numpy")
    check_metrics({"a": np.float32(0.5), "b": 3})
