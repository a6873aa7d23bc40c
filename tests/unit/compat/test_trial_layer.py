"""Determined 0.37's trial layer in the compat package: `determined.workload` and the workloads of
`determined.layers.make_compatibility_workloads`, driven off-cluster through a real Core API context.

The expected orders are read off Determined 0.37.0's harness/determined/layers/_workload_sequencer.py.
"""

from __future__ import annotations

import pytest

from stalwart.harness.compat.determined import EnvContext, workload
from stalwart.harness.compat.determined.layers import make_compatibility_workloads
from stalwart.harness.core import (
    CheckpointContext,
    Context,
    DistributedContext,
    PreemptContext,
    SearcherContext,
    TrainContext,
)
from stalwart.storage import SharedFSStorage
from unit.compat.test_determined_modules import in_trial

Kind = workload.Workload.Kind


def test_workload_kinds_and_values_are_determineds() -> None:
    assert [(k.name, k.value) for k in Kind] == [
        ("RUN_STEP", 1), ("COMPUTE_VALIDATION_METRICS", 2), ("CHECKPOINT_MODEL", 3)]
    w = workload.train_workload(3, exp_id=7, trial_id=8, num_batches=5, total_batches_processed=10)
    assert repr(w) == "<RUN_STEP (5 Batches): (7,8,3)>"
    assert repr(workload.checkpoint_workload(2)) == "<CHECKPOINT_MODEL: (1,1,2)>"
    assert workload.Workload.from_json({**w.__json__(), "kind": "RUN_STEP"}) == w
    with pytest.raises(ValueError, match="not one of"):
        workload.Workload.from_json({**w.__json__(), "kind": "TRAIN"})


def _env(config: dict) -> EnvContext:
    return EnvContext(master_url="", master_cert_file=None, master_cert_name=None, experiment_config=config,
                      hparams={"global_batch_size": 4}, latest_checkpoint=None, steps_completed=0, use_gpu=False,
                      container_gpus=[], slot_ids=[0], debug=False, det_trial_id="8", det_experiment_id="7",
                      det_agent_id="", det_cluster_id="", trial_seed=0, trial_run_id=1, allocation_id="",
                      managed_training=True, test_mode=False, on_cluster=False)


def _core(tmp_path, length: int) -> Context:
    dist = DistributedContext()
    return Context(distributed=dist, train=TrainContext(None),
                   checkpoint=CheckpointContext(SharedFSStorage(str(tmp_path)), dist),
                   preempt=PreemptContext(None, None, dist),
                   searcher=SearcherContext(None, None, dist, length, "batches"), info=None)


def _drive(stream: workload.Stream, answer) -> list[tuple[str, int, int, int]]:
    """Run the stream as a TrialController would, answering each workload with `answer(workload)`."""
    seen = []
    for w, respond in stream:
        seen.append((w.kind.name, w.step_id, w.num_batches, w.total_batches_processed))
        respond(answer(w))
    return seen


def _metrics(w: workload.Workload) -> workload.Response:
    if w.kind is Kind.RUN_STEP:
        return {"metrics": {"avg_metrics": {"loss": 1.0}, "batch_metrics": [{"loss": 1.0}] * w.num_batches}}
    if w.kind is Kind.COMPUTE_VALIDATION_METRICS:
        return {"metrics": {"validation_metrics": {"validation_loss": 0.5}}}
    return {"uuid": "x"}


CONFIG = {"searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 6}},
          "scheduling_unit": 2, "min_validation_period": {"batches": 3}, "min_checkpoint_period": {"batches": 4},
          "checkpoint_policy": "none", "hyperparameters": {"global_batch_size": 4}}


def test_workloads_follow_periods_scheduling_unit_and_the_searcher_length(tmp_path) -> None:
    stream, sequencer = make_compatibility_workloads(_core(tmp_path, 6), _env(CONFIG), 4)
    assert _drive(stream, _metrics) == [
        ("RUN_STEP", 1, 2, 0), ("RUN_STEP", 2, 1, 2), ("COMPUTE_VALIDATION_METRICS", 2, 0, 3),
        ("RUN_STEP", 3, 1, 3), ("CHECKPOINT_MODEL", 3, 0, 4), ("RUN_STEP", 4, 2, 4),
        ("COMPUTE_VALIDATION_METRICS", 4, 0, 6), ("CHECKPOINT_MODEL", 4, 0, 6)]
    assert sequencer is not None
    assert sequencer.get_state() == {"trial_id": 8, "last_ckpt": 6, "steps_completed": 6, "step_id": 4,
                                     "last_val": 6}


def test_initial_validation_and_checkpoint_policy_all(tmp_path) -> None:
    config = {**CONFIG, "perform_initial_validation": True, "checkpoint_policy": "all",
              "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 2}}
    stream, _ = make_compatibility_workloads(_core(tmp_path, 4), _env(config), 4)
    assert [k for k, *_ in _drive(stream, _metrics)] == [
        "COMPUTE_VALIDATION_METRICS", "RUN_STEP", "COMPUTE_VALIDATION_METRICS", "CHECKPOINT_MODEL", "RUN_STEP",
        "COMPUTE_VALIDATION_METRICS", "CHECKPOINT_MODEL"]


def test_a_stop_request_ends_the_stream_after_a_checkpoint(tmp_path) -> None:
    def stop_after_first(w: workload.Workload) -> workload.Response:
        return {**_metrics(w), "stop_requested": w.kind is Kind.RUN_STEP}

    stream, _ = make_compatibility_workloads(_core(tmp_path, 6), _env(CONFIG), 4)
    assert _drive(stream, stop_after_first) == [("RUN_STEP", 1, 2, 0), ("CHECKPOINT_MODEL", 1, 0, 2)]


def test_an_invalid_hp_response_ends_the_stream(tmp_path) -> None:
    def invalid(w: workload.Workload) -> workload.Response:
        return workload.InvalidHP() if w.kind is Kind.COMPUTE_VALIDATION_METRICS else _metrics(w)

    stream, _ = make_compatibility_workloads(_core(tmp_path, 6), _env(CONFIG), 4)
    assert [k for k, *_ in _drive(stream, invalid)] == [
        "RUN_STEP", "RUN_STEP", "COMPUTE_VALIDATION_METRICS", "CHECKPOINT_MODEL"]


def test_a_validation_without_the_searcher_metric_is_refused(tmp_path) -> None:
    def wrong_name(w: workload.Workload) -> workload.Response:
        if w.kind is Kind.COMPUTE_VALIDATION_METRICS:
            return {"metrics": {"validation_metrics": {"accuracy": 0.5}}}
        return _metrics(w)

    stream, _ = make_compatibility_workloads(_core(tmp_path, 6), _env(CONFIG), 4)
    with pytest.raises(RuntimeError, match="configured to use metric 'validation_loss'"):
        _drive(stream, wrong_name)


def test_the_trial_layer_names_import_inside_a_trial() -> None:
    got = in_trial("""
        import json
        import determined as det
        from determined import layers, workload
        from determined.exec import harness
        names = [det.TrialContext, det.TrialController, det.LegacyTrial, det.EnvContext, det._DistributedBackend,
                 det.ExperimentConfig, workload.Workload, workload.Response, workload.Stream, workload.Source,
                 layers.make_compatibility_workloads, layers.WorkloadSequencer, harness.run_legacy_trial]
        class NoController(det.LegacyTrial):
            def __init__(self, context):
                pass
        try:
            harness.controller_class_of(NoController)
        except ValueError as err:
            error = str(err)
        print(json.dumps([len(names), [k.name for k in workload.Workload.Kind], error]))
    """)
    assert got == [13, ["RUN_STEP", "COMPUTE_VALIDATION_METRICS", "CHECKPOINT_MODEL"],
                   "The class attribute `trial_controller_class` of NoController is None; please set it the correct "
                   "subclass of `det.TrialController`"]


def test_from_config_builds_a_local_context_with_sampled_hyperparameters() -> None:
    got = in_trial("""
        import json
        import determined as det
        ctx = det.TrialContext.from_config({"hyperparameters": {"lr": {"type": "categorical", "vals": [0.5]},
                                                                "global_batch_size": 8},
                                            "searcher": {"name": "single", "metric": "loss"}})
        print(json.dumps([ctx.get_hparams(), ctx.get_hparam("lr"), ctx.env.on_cluster, ctx.distributed.size,
                          ctx.get_experiment_config().scheduling_unit()]))
    """)
    assert got == [{"lr": 0.5, "global_batch_size": 8}, 0.5, False, 1, 100]
