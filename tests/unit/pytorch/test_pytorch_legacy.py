"""The legacy `model_def:Trial` harness: importing the class, config keys to fit() arguments, a real run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from stalwart import pytorch
from stalwart.harness.pytorch.legacy import fit_arguments, load_trial_class

MODEL_DEF = textwrap.dedent('''\
    import torch
    from stalwart import pytorch


    class Outer:
        class Inner(pytorch.PyTorchTrial):
            def __init__(self, context):
                self.context = context
                self.model = context.wrap_model(torch.nn.Linear(4, 1))
                self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr")))
                g = torch.Generator().manual_seed(0)
                x = torch.randn(96, 4, generator=g)
                self.data = torch.utils.data.TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]))

            def build_training_data_loader(self):
                return pytorch.DataLoader(self.data, batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

            def build_validation_data_loader(self):
                return pytorch.DataLoader(self.data, batch_size=32)

            def train_batch(self, batch, epoch_idx, batch_idx):
                x, y = batch
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                self.context.backward(loss)
                self.context.step_optimizer(self.opt)
                return loss

            def evaluate_batch(self, batch):
                x, y = batch
                return {"validation_loss": torch.nn.functional.mse_loss(self.model(x), y)}


    Plain = Outer.Inner
''')


@pytest.fixture
def context_dir(tmp_path):
    d = tmp_path / "ctx"
    (d / "pkg").mkdir(parents=True)
    (d / "model_def.py").write_text(MODEL_DEF)
    (d / "pkg" / "__init__.py").write_text("")
    (d / "pkg" / "trials.py").write_text(MODEL_DEF)
    (d / "__init__.py").write_text("from .model_def import Plain\n")
    yield d
    for name in ("model_def", "pkg", "pkg.trials", "model_def_root", "model_def_root.model_def"):
        sys.modules.pop(name, None)


def test_load_trial_class_forms(context_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(context_dir))
    assert load_trial_class("model_def:Outer.Inner", context_dir).__qualname__ == "Outer.Inner"
    assert load_trial_class("pkg.trials:Plain", context_dir).__module__ == "pkg.trials"
    assert issubclass(load_trial_class("Plain", context_dir), pytorch.PyTorchTrial)
    with pytest.raises(ValueError, match="has no attribute 'Missing'"):
        load_trial_class("model_def:Missing", context_dir)
    with pytest.raises(TypeError, match="not a stalwart.pytorch.PyTorchTrial"):
        load_trial_class("model_def:Outer", context_dir)
    with pytest.raises(ValueError, match="module:Class"):
        load_trial_class("python3 train.py", context_dir)


def test_fit_arguments_from_deprecated_keys():
    config = {
        "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"records": 640}},
        "hyperparameters": {"global_batch_size": 32},
        "min_validation_period": {"batches": 5}, "min_checkpoint_period": {"epochs": 1},
        "scheduling_unit": 4, "checkpoint_policy": "all", "perform_initial_validation": True,
        "records_per_epoch": 320,
    }
    args = fit_arguments(config, latest_checkpoint="abc")
    assert args == {
        "max_length": pytorch.Batch(20), "validation_period": pytorch.Batch(5), "checkpoint_period": pytorch.Batch(10),
        "reporting_period": pytorch.Batch(4), "checkpoint_policy": "all", "step_zero_validation": True,
        "profiling_enabled": False, "latest_checkpoint": "abc",
    }
    defaults = fit_arguments({"searcher": {"max_length": {"epochs": 3}}, "min_validation_period": {"batches": 0}},
                             target_length=2)
    assert defaults["max_length"] == pytorch.Epoch(2) and defaults["validation_period"] is None
    assert defaults["reporting_period"] == pytorch.Batch(100) and defaults["checkpoint_policy"] == "best"


def test_legacy_harness_runs_a_trial_class_off_cluster(context_dir, tmp_path):
    storage = tmp_path / "checkpoints"
    (context_dir / "exp.yaml").write_text(textwrap.dedent(f'''\
        name: legacy
        entrypoint: model_def:Outer.Inner
        hyperparameters: {{global_batch_size: 16, lr: 0.05}}
        searcher: {{name: single, metric: validation_loss, max_length: {{batches: 12}}}}
        min_validation_period: {{batches: 5}}
        scheduling_unit: 4
        checkpoint_policy: all
        checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
        reproducibility: {{experiment_seed: 1}}
        '''))
    env = {**os.environ, "STALWART_INFO_FILE": ""}
    proc = subprocess.run([sys.executable, "-m", "stalwart.harness.pytorch.legacy", "--config", "exp.yaml",
                           "model_def:Outer.Inner"], cwd=context_dir, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "[validation] steps_completed=5" in proc.stderr and "[validation] steps_completed=12" in proc.stderr
    assert "[training] steps_completed=4" in proc.stderr
    steps = sorted(json.loads((d / "metadata.json").read_text())["steps_completed"] for d in storage.iterdir())
    assert steps == [5, 10, 12]


def test_legacy_harness_usage_errors(context_dir):
    proc = subprocess.run([sys.executable, "-m", "stalwart.harness.pytorch.legacy", "model_def:Outer.Inner"],
                          cwd=context_dir, env={**os.environ, "STALWART_INFO_FILE": ""}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "--config" in proc.stderr
