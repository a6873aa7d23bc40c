"""Trainer.fit() off-cluster on a real PyTorchTrial (digits): metrics, reducers, callbacks, schedules, policies."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from pt_trials import HPARAMS, DigitsTrial, Recorder, digits, params_of
from stalwart import pytorch

SEED = {"reproducibility": {"experiment_seed": 3}}
SEARCHER = {"searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True}}


def fit_digits(storage, max_length, *, hparams=None, exp_conf=None, callbacks=None, trial_cls=DigitsTrial,
               init_kwargs=None, **fit):
    """Train in a fresh init(); returns (trial, trainer, reports) with reports = [(group, steps, metrics)]."""
    reports = []
    conf = {**SEED, **(exp_conf or {})}
    with pytorch.init(hparams={**HPARAMS, **(hparams or {})}, exp_conf=conf, checkpoint_storage=str(storage),
                      **(init_kwargs or {})) as ctx:
        train = ctx._core.train
        train.report_training_metrics = lambda s, m, batch_metrics=None: reports.append(("training", s, m))
        train.report_validation_metrics = lambda s, m: reports.append(("validation", s, m))
        trial = trial_cls(ctx, callbacks=callbacks) if callbacks is not None else trial_cls(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=max_length, **fit)
    return trial, trainer, reports


def steps(reports, group):
    return [s for g, s, _ in reports if g == group]


def metadata_steps(storage, trainer):
    return [json.loads((storage / u / "metadata.json").read_text())["steps_completed"] for u in trainer.checkpoints]


def test_digits_trains_to_good_accuracy_and_reports(tmp_path):
    trial, trainer, reports = fit_digits(tmp_path, pytorch.Batch(50), validation_period=pytorch.Batch(25),
                                         reporting_period=pytorch.Batch(10))
    assert steps(reports, "training") == [10, 20, 25, 30, 40, 50]
    assert steps(reports, "validation") == [25, 50]
    final = reports[-1][2]
    assert final["accuracy"] > 0.8
    assert final["n"] == 360 and isinstance(final["correct"], int) and final["correct"] <= 360
    assert final["batches"] == 50 and final["epochs"] == 1
    first = reports[0][2]
    assert set(first) == {"loss", "batch_acc", "batches", "epochs"}
    assert first["loss"] == pytest.approx(sum(trial.losses[:10]) / 10)
    assert metadata_steps(tmp_path, trainer) == [25, 50]  # checkpoint_policy 'best' without a metric: 'all'


@pytest.mark.parametrize("policy, expected", [("all", [10, 20, 30, 40]), ("none", [40])])
def test_checkpoint_policy_all_and_none(tmp_path, policy, expected):
    _, trainer, _ = fit_digits(tmp_path, pytorch.Batch(40), validation_period=pytorch.Batch(10),
                               checkpoint_policy=policy)
    assert metadata_steps(tmp_path, trainer) == expected


def test_checkpoint_policy_best_follows_the_searcher_metric(tmp_path):
    # A huge learning rate makes validation loss go up and down: only improvements are checkpointed.
    _, trainer, reports = fit_digits(tmp_path, pytorch.Batch(60), hparams={"lr": 3.0}, exp_conf=SEARCHER,
                                     validation_period=pytorch.Batch(5), checkpoint_policy="best")
    losses = [(s, m["validation_loss"]) for g, s, m in reports if g == "validation"]
    best, improved = None, []
    for s, v in losses:
        if best is None or v < best:
            best, improved = v, improved + [s]
    assert len(improved) < len(losses)
    expected = improved + ([60] if improved[-1] != 60 else [])
    assert metadata_steps(tmp_path, trainer) == expected


def test_checkpoint_policy_best_larger_is_better(tmp_path):
    conf = {"searcher": {"metric": "accuracy", "smaller_is_better": False}}
    _, trainer, reports = fit_digits(tmp_path, pytorch.Batch(30), exp_conf=conf,
                                     validation_period=pytorch.Batch(10))
    accs = [m["accuracy"] for g, _, m in reports if g == "validation"]
    assert accs == sorted(accs)  # learning steadily: every validation is a new best
    assert metadata_steps(tmp_path, trainer) == [10, 20, 30]


def test_test_mode_trains_one_batch_validates_one_batch_checkpoints_once(tmp_path):
    rec = Recorder()
    trial, trainer, reports = fit_digits(tmp_path, pytorch.Batch(1000), callbacks={"rec": rec}, test_mode=True,
                                         validation_period=pytorch.Batch(1))
    assert len(trial.losses) == 1
    assert steps(reports, "validation") == [1]
    assert ("validation_epoch_end", 1) in rec.calls
    assert metadata_steps(tmp_path, trainer) == [1]


def test_step_zero_validation(tmp_path):
    _, _, reports = fit_digits(tmp_path, pytorch.Batch(5), step_zero_validation=True)
    assert steps(reports, "validation") == [0, 5]


def test_callbacks_are_called_in_order(tmp_path):
    rec = Recorder()
    fit_digits(tmp_path, pytorch.Batch(50), callbacks={"rec": rec}, validation_period=pytorch.Batch(45),
               reporting_period=pytorch.Batch(30), checkpoint_policy="none")
    validation = ["validation_start", "validation_epoch_start", "validation_epoch_end", "validation_end"]
    checkpoint = ["checkpoint_save_start", "checkpoint_write_end", "checkpoint_upload_end"]
    assert rec.names() == (["trial_startup", "training_start", "epoch_start", "workload_end", "epoch_end",
                            "workload_end"] + validation + ["epoch_start", "workload_end"] + validation
                           + checkpoint + ["trial_shutdown"])
    assert rec.calls[0] == ("trial_startup", 0, None)
    assert [c for c in rec.calls if c[0] == "workload_end"] == [("workload_end", 30), ("workload_end", 15),
                                                                ("workload_end", 5)]
    assert ("epoch_end", 0) in rec.calls and ("epoch_start", 1) in rec.calls


def test_epoch_and_batch_units_and_schedules(tmp_path):
    _, trainer, reports = fit_digits(tmp_path, pytorch.Epoch(2), validation_period=pytorch.Epoch(1),
                                     checkpoint_period=pytorch.Batch([5, 30]), checkpoint_policy="none",
                                     reporting_period=pytorch.Epoch([2]))
    assert steps(reports, "validation") == [45, 90]
    assert metadata_steps(tmp_path, trainer) == [5, 30, 90]
    assert steps(reports, "training") == [5, 30, 45, 90]


@pytest.mark.parametrize("mode, freq, expected_after_10", [
    ("batch", 1, 0.1 * 0.9**9), ("batch", 2, 0.1 * 0.9**4), ("optimizer", 5, 0.1 * 0.9), ("manual", 1, 0.1),
    ("epoch", 1, 0.1),
])
def test_lr_scheduler_step_modes(tmp_path, mode, freq, expected_after_10):
    trial, _, _ = fit_digits(tmp_path, pytorch.Batch(50), hparams={"lr_mode": mode, "lr_freq": freq})
    assert trial.lrs[9] == pytest.approx(expected_after_10)
    if mode == "epoch":
        assert trial.lrs[44] == pytest.approx(0.1) and trial.lrs[45] == pytest.approx(0.09)


def test_clip_grads_is_applied(tmp_path):
    with pytorch.init(hparams={**HPARAMS, "clip": 1e-4}, exp_conf=SEED, checkpoint_storage=str(tmp_path)) as ctx:
        trial = DigitsTrial(ctx)
        before = params_of(trial)
        pytorch.Trainer(trial, ctx).fit(max_length=pytorch.Batch(3), checkpoint_policy="none")
    moved = max((a - b).abs().max().item() for a, b in zip(before, params_of(trial), strict=True))
    assert 0 < moved < 1e-4  # unclipped, the first steps move weights by ~1e-2


def test_stop_requested_ends_training_with_a_checkpoint(tmp_path):
    trial, trainer, reports = fit_digits(tmp_path, pytorch.Batch(50), hparams={"stop_at": 7},
                                         validation_period=pytorch.Batch(20))
    assert len(trial.losses) == 7
    assert steps(reports, "training") == [7] and steps(reports, "validation") == []
    assert metadata_steps(tmp_path, trainer) == [7]


def test_aggregation_frequency_steps_every_n_batches(tmp_path):
    counted = []

    class Counting(DigitsTrial):
        def __init__(self, context):
            super().__init__(context)
            self.opt.register_step_post_hook(lambda *a: counted.append(self.context.current_train_batch()))

    trial, _, _ = fit_digits(tmp_path, pytorch.Batch(10), trial_cls=Counting, hparams={"lr_mode": "batch"},
                             init_kwargs={"aggregation_frequency": 2})
    assert counted == [1, 3, 5, 7, 9]
    assert trial.lrs[-1] == pytest.approx(0.1 * 0.9**8)  # two scheduler steps per optimizer step


class ReducerTrial(DigitsTrial):
    """Custom reducers: a MetricReducer (training and validation) and a function one (validation only)."""

    class Count(pytorch.MetricReducer):
        def reset(self):
            self.n = 0

        def update(self, n):
            self.n += n

        def per_slot_reduce(self):
            return self.n

        def cross_slot_reduce(self, per_slot):
            return sum(per_slot)

    def __init__(self, context):
        super().__init__(context)
        self.count = context.wrap_reducer(self.Count(), name="records")
        self.labels = context.wrap_reducer(lambda values: {"distinct_labels": len(set(values))}, for_training=False)

    def train_batch(self, batch, epoch_idx, batch_idx):
        self.count.update(len(batch[1]))
        return super().train_batch(batch, epoch_idx, batch_idx)

    def evaluate_batch(self, batch):  # no batch_idx: still accepted
        self.count.update(len(batch[1]))
        for y in batch[1].tolist():
            self.labels.update(y)
        return super().evaluate_batch(batch, 0)


def test_custom_reducers(tmp_path):
    _, _, reports = fit_digits(tmp_path, pytorch.Batch(10), trial_cls=ReducerTrial,
                               reporting_period=pytorch.Batch(4))
    training = [m for g, _, m in reports if g == "training"]
    assert [m["records"] for m in training] == [128, 128, 64]
    assert "distinct_labels" not in training[0]
    validation = [m for g, _, m in reports if g == "validation"][0]
    assert validation["records"] == 360 and validation["distinct_labels"] == 10


class FullDatasetTrial(DigitsTrial):
    evaluate_batch = pytorch.PyTorchTrial.evaluate_batch

    def evaluate_full_dataset(self, data_loader):
        correct = total = 0
        for x, y in data_loader:
            correct += (self.model(x).argmax(1) == y).sum().item()
            total += len(y)
        return {"accuracy": torch.tensor(correct / total), "total": total}


def test_evaluate_full_dataset(tmp_path):
    _, _, reports = fit_digits(tmp_path, pytorch.Batch(20), trial_cls=FullDatasetTrial)
    (validation,) = [m for g, _, m in reports if g == "validation"]
    assert validation["total"] == 360 and isinstance(validation["accuracy"], float)


class PlainLoaderTrial(DigitsTrial):
    def build_training_data_loader(self):
        return torch.utils.data.DataLoader(digits()[0], batch_size=32)


def test_plain_torch_loader_is_accepted_with_a_warning(tmp_path, caplog):
    trial, _, _ = fit_digits(tmp_path, pytorch.Batch(50), trial_cls=PlainLoaderTrial)
    assert len(trial.losses) == 50 and trial.seen[45] == trial.seen[0]  # repeats epoch after epoch
    assert "not a stalwart.pytorch.DataLoader" in caplog.text


def test_context_information(tmp_path):
    seen = {}

    class Probe(DigitsTrial):
        def train_batch(self, batch, epoch_idx, batch_idx):
            c = self.context
            seen.setdefault("positions", []).append(
                (c.current_train_batch(), c.current_train_epoch(), c.is_epoch_start(), c.is_epoch_end()))
            return super().train_batch(batch, epoch_idx, batch_idx)

    with pytorch.init(hparams=HPARAMS, exp_conf={**SEED, "data": {"url": "x"}},
                      checkpoint_storage=str(tmp_path)) as ctx:
        assert ctx.get_hparam("lr") == 0.1 and ctx.get_hparams() is not None
        assert ctx.get_global_batch_size() == 32 and ctx.get_per_slot_batch_size() == 32
        assert ctx.get_data_config() == {"url": "x"} and ctx.get_experiment_config()["data"]
        assert ctx.get_trial_seed() == 3 and ctx.get_trial_id() == 0 and ctx.get_experiment_id() == 0
        assert ctx.get_initial_batch() == 0 and ctx.device == torch.device("cpu")
        assert ctx.distributed.size == 1
        with pytest.raises(ValueError, match="'nope' is not in"):
            ctx.get_hparam("nope")
        with pytest.raises(RuntimeError, match="training has not started"):
            ctx.current_train_batch()
        trial = Probe(ctx)
        pytorch.Trainer(trial, ctx).fit(max_length=pytorch.Batch(46), checkpoint_policy="none")
    positions = seen["positions"]
    assert positions[0] == (0, 0, True, False) and positions[44] == (44, 0, False, True)
    assert positions[45] == (45, 1, True, False)


def test_tensorboard_writer_needs_tensorboard(tmp_path, monkeypatch):
    # tensorboard is installed for the other tests: hide it, as on a machine without it
    hidden = ("tensorboard.", "torch.utils.tensorboard")
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith(hidden)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with (
        pytorch.init(hparams=HPARAMS, checkpoint_storage=str(tmp_path)) as ctx,
        pytest.raises(RuntimeError, match="pip install tensorboard"),
    ):
        ctx.get_tensorboard_writer()


@pytest.mark.parametrize("enabled, mode", [(True, "AUTO"), (False, "MANUAL")])
def test_tensorboard_logging_picks_the_core_tensorboard_mode(tmp_path, monkeypatch, enabled, mode):
    from stalwart.harness.pytorch import _trainer

    seen = {}
    real_init = _trainer.core.init

    def spy(**kwargs):
        seen.update(kwargs)
        return real_init(**kwargs)

    monkeypatch.setattr(_trainer.core, "init", spy)
    with pytorch.init(hparams=HPARAMS, checkpoint_storage=str(tmp_path), enable_tensorboard_logging=enabled) as ctx:
        assert ctx.get_enable_tensorboard_logging() is enabled
    assert seen["tensorboard_mode"].value == mode


def test_load_trial_from_checkpoint_path(tmp_path):
    trial, trainer, _ = fit_digits(tmp_path, pytorch.Batch(10))
    loaded = pytorch.load_trial_from_checkpoint_path(tmp_path / trainer.checkpoints[-1])
    assert type(loaded).__name__ == "DigitsTrial"
    for a, b in zip(params_of(trial), params_of(loaded), strict=True):
        assert torch.equal(a, b)
    again = pytorch.load_trial_from_checkpoint_path(str(tmp_path / trainer.checkpoints[-1]), trial_class=DigitsTrial,
                                                   torch_load_kwargs={"weights_only": True})
    assert torch.equal(params_of(again)[0], params_of(trial)[0])


def test_fit_argument_errors(tmp_path):
    with pytorch.init(hparams=HPARAMS, checkpoint_storage=str(tmp_path)) as ctx:
        trainer = pytorch.Trainer(DigitsTrial(ctx), ctx)
        with pytest.raises(ValueError, match="max_length is required off-cluster"):
            trainer.fit()
        with pytest.raises(ValueError, match="checkpoint_policy"):
            trainer.fit(max_length=pytorch.Batch(1), checkpoint_policy="sometimes")
        with pytest.raises(TypeError, match="int n"):
            trainer.fit(max_length=pytorch.Batch([1, 2]))

    class NoModel(pytorch.PyTorchTrial):
        def __init__(self, context):
            pass

        build_training_data_loader = build_validation_data_loader = train_batch = lambda *a, **k: None

    with (
        pytorch.init(hparams=HPARAMS, checkpoint_storage=str(tmp_path)) as ctx,
        pytest.raises(ValueError, match="wrap_model"),
    ):
        pytorch.Trainer(NoModel(ctx), ctx).fit(max_length=pytorch.Batch(1))


def test_invalid_hp_checkpoints_and_is_swallowed_by_init(tmp_path):
    from stalwart import core

    class Diverges(DigitsTrial):
        def train_batch(self, batch, epoch_idx, batch_idx):
            if batch_idx == 3:
                raise core.InvalidHP("loss is nan")
            return super().train_batch(batch, epoch_idx, batch_idx)

    with pytorch.init(hparams=HPARAMS, exp_conf=SEED, checkpoint_storage=str(tmp_path)) as ctx:
        trainer = pytorch.Trainer(Diverges(ctx), ctx)
        trainer.fit(max_length=pytorch.Batch(10))
    assert metadata_steps(tmp_path, trainer) == [3]
