"""Exact resume: train N batches straight == train k, checkpoint, fresh trial resumes to N (same losses, weights)."""

from __future__ import annotations

import json

import pytest
import torch

from pt_trials import HPARAMS, DigitsTrial, Recorder, params_of
from stalwart import pytorch

SEED = {"reproducibility": {"experiment_seed": 11}}


def run(storage, max_length, *, hparams=None, latest=None, callbacks=None, **fit):
    """One fit() in a fresh init() + trial, as a new process would; returns (trial, trainer)."""
    with pytorch.init(hparams={**HPARAMS, **(hparams or {})}, exp_conf=SEED, checkpoint_storage=str(storage)) as ctx:
        trial = DigitsTrial(ctx, callbacks=callbacks)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=max_length, latest_checkpoint=latest, checkpoint_policy="none", **fit)
    return trial, trainer


def assert_same_run(straight, first, resumed):
    assert first.losses + resumed.losses == straight.losses
    assert first.lrs + resumed.lrs == straight.lrs
    assert first.seen + resumed.seen == straight.seen
    for a, b in zip(params_of(straight), params_of(resumed), strict=True):
        assert torch.equal(a, b)


# The training loader has 45 batches an epoch (1437 records, 32 a batch): 20 is mid-epoch, 44/45/46 sit on
# the first epoch boundary.
@pytest.mark.parametrize("k", [20, 44, 45, 46])
@pytest.mark.parametrize("lr_mode", [None, "epoch", "batch"])
def test_resume_is_exact(tmp_path, k, lr_mode):
    hp = {"lr_mode": lr_mode}
    straight, _ = run(tmp_path, pytorch.Batch(60), hparams=hp)
    first, t1 = run(tmp_path, pytorch.Batch(k), hparams=hp)
    resumed, _ = run(tmp_path, pytorch.Batch(60), hparams=hp, latest=t1.checkpoints[-1])
    assert len(first.losses) == k and len(resumed.losses) == 60 - k
    assert_same_run(straight, first, resumed)


def test_resume_in_epochs_with_every_epoch_scheduler(tmp_path):
    hp = {"lr_mode": "epoch"}
    straight, _ = run(tmp_path, pytorch.Epoch(3), hparams=hp)
    first, t1 = run(tmp_path, pytorch.Epoch(1), hparams=hp)
    second, t2 = run(tmp_path, pytorch.Epoch(2), hparams=hp, latest=t1.checkpoints[-1])
    third, _ = run(tmp_path, pytorch.Epoch(3), hparams=hp, latest=t2.checkpoints[-1])
    assert [len(t.losses) for t in (first, second, third)] == [45, 45, 45]
    assert first.losses + second.losses + third.losses == straight.losses
    assert first.lrs + second.lrs + third.lrs == straight.lrs
    assert straight.lrs[0] == pytest.approx(0.1) and straight.lrs[45] == pytest.approx(0.09)
    assert straight.lrs[90] == pytest.approx(0.081)
    for a, b in zip(params_of(straight), params_of(third), strict=True):
        assert torch.equal(a, b)


def test_validations_in_between_do_not_change_the_run(tmp_path):
    """A validation (and its checkpoint) at batch k must not move the RNG or data order of training."""
    hp = {"eval_noise": True}
    straight, _ = run(tmp_path, pytorch.Batch(50), hparams=hp)
    first, t1 = run(tmp_path, pytorch.Batch(30), hparams=hp, validation_period=pytorch.Batch(10),
                    checkpoint_period=pytorch.Batch(15), reporting_period=pytorch.Batch(7))
    assert len(t1.checkpoints) == 2  # at 15 and 30
    resumed, _ = run(tmp_path, pytorch.Batch(50), hparams=hp, latest=t1.checkpoints[0],
                     validation_period=pytorch.Batch(10))
    assert first.losses[:15] + resumed.losses == straight.losses


def test_checkpoint_contents(tmp_path):
    rec = Recorder()
    _, trainer = run(tmp_path, pytorch.Batch(12), hparams={"lr_mode": "batch"}, callbacks={"rec": rec})
    (uuid,) = trainer.checkpoints
    ckpt_dir = tmp_path / uuid
    assert sorted(p.name for p in ckpt_dir.iterdir()) == ["load_data.json", "metadata.json", "state_dict.pth"]
    meta = json.loads((ckpt_dir / "metadata.json").read_text())
    assert meta["steps_completed"] == 12 and meta["framework"].startswith("torch-")
    data = json.loads((ckpt_dir / "load_data.json").read_text())
    assert data["trial_type"] == "PyTorchTrial" and data["trial_cls_spec"] == "pt_trials:DigitsTrial"
    assert data["hparams"]["lr"] == HPARAMS["lr"] and data["trial_state"]["batches_trained"] == 12
    state = torch.load(ckpt_dir / "state_dict.pth", weights_only=True)
    assert set(state) == {"models_state_dict", "optimizers_state_dict", "lr_schedulers_state_dict", "callbacks",
                          "rng_state"}
    assert set(state["rng_state"]) == {"cpu_rng_state", "np_rng_state", "random_rng_state"}
    assert state["callbacks"] == {"rec": {"count": 12}}
    assert state["lr_schedulers_state_dict"][0]["last_epoch"] == 12


def test_callback_state_and_startup_on_resume(tmp_path):
    _, t1 = run(tmp_path, pytorch.Batch(10), callbacks={"rec": Recorder()})
    rec = Recorder()
    run(tmp_path, pytorch.Batch(15), latest=t1.checkpoints[-1], callbacks={"rec": rec})
    assert rec.loaded == {"count": 10} and rec.count == 15
    assert rec.calls[0] == ("trial_startup", 10, t1.checkpoints[-1])
    assert rec.names()[1:3] == ["checkpoint_load_start", "training_start"]


def test_warm_start_from_another_trial_loads_weights_only(tmp_path, monkeypatch):
    first, t1 = run(tmp_path, pytorch.Batch(10))
    from stalwart.harness.pytorch import _controller

    original = _controller.ckpt.read_trial_state
    monkeypatch.setattr(_controller.ckpt, "read_trial_state",
                        lambda path, data: {**original(path, data), "trial_id": 99})
    resumed, _ = run(tmp_path, pytorch.Batch(5), latest=t1.checkpoints[-1])
    assert len(resumed.losses) == 5  # counted from batch 0 again


def test_preemption_checkpoints_and_returns(tmp_path):
    with pytorch.init(hparams=HPARAMS, exp_conf=SEED, checkpoint_storage=str(tmp_path)) as ctx:
        calls = []

        def should_preempt(auto_ack=True):
            calls.append(1)
            return len(calls) >= 2

        ctx._core.preempt.should_preempt = should_preempt
        trial = DigitsTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(100), reporting_period=pytorch.Batch(8))
    assert len(trial.losses) == 16  # preempted at the second reporting boundary
    (uuid,) = trainer.checkpoints
    assert json.loads((tmp_path / uuid / "metadata.json").read_text())["steps_completed"] == 16
    straight, _ = run(tmp_path, pytorch.Batch(30))
    resumed, _ = run(tmp_path, pytorch.Batch(30), latest=uuid)
    assert trial.losses + resumed.losses == straight.losses
