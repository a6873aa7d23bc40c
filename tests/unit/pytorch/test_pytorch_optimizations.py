"""`optimizations`: what a Determined-style PyTorchTrial honours (no warning) and what it cannot (a warning each).

Mirrors Determined 0.38.1: harness/determined/exec/harness.py reads aggregation_frequency (pytorch.init()) and
average_aggregated_gradients (the context's wrap_optimizer() default, used by step_optimizer() in
harness/determined/pytorch/_pytorch_context.py); gradient_compression reaches only horovod's DistributedOptimizer
there, and the tensor fusion keys only harness/determined/horovod.py; average_training_metrics is read only by the
TFKerasTrial (keras/_tf_keras_trial.py) -- PyTorchTrial always averages training metrics across workers
(pytorch/_pytorch_trial.py `_aggregate_training_metrics`); mixed_precision is read by no PyTorch code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from stalwart.config import load_experiment_config

CONFIG = {
    "entrypoint": "model_def:Trial",
    "searcher": {"name": "single", "metric": "validation_loss"},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/ckpts"},
}


def _warnings(optimizations: dict) -> list[str]:
    return [w for w in load_experiment_config({**CONFIG, "optimizations": optimizations}).warnings
            if w.startswith("optimizations")]


def test_honoured_keys_are_not_warned_about():
    assert _warnings({"aggregation_frequency": 4, "average_aggregated_gradients": False}) == []


@pytest.mark.parametrize(("key", "value", "why"), [
    ("average_training_metrics", False, "training metrics are always averaged across workers"),
    ("gradient_compression", True, "Determined applies it only to Horovod"),
    ("mixed_precision", "O1", "context.experimental.use_amp()"),
    ("tensor_fusion_threshold", 128, "Determined applies it only to Horovod"),
    ("tensor_fusion_cycle_time", 5, "Determined applies it only to Horovod"),
    ("auto_tune_tensor_fusion", True, "Determined applies it only to Horovod"),
    ("grad_updates_size_file", "sizes.txt", "Determined applies it only to Horovod"),
])
def test_each_key_without_effect_is_warned_about_by_name(key, value, why):
    warnings = _warnings({"aggregation_frequency": 2, key: value})
    assert len(warnings) == 1 and warnings[0].startswith(f"optimizations.{key}: has no effect")
    assert why in warnings[0]


def test_keys_left_at_their_defaults_are_not_warned_about():
    assert _warnings({"mixed_precision": "O0", "average_training_metrics": True, "gradient_compression": False}) == []


MODEL_DEF = textwrap.dedent('''\
    import json

    import torch
    from stalwart import pytorch


    class Trial(pytorch.PyTorchTrial):
        """w starts at 0 and every batch's gradient is 2 (the loss is w * (1 + 1)): the steps show the sums."""

        def __init__(self, context):
            self.context = context
            self.model = context.wrap_model(torch.nn.Linear(1, 1, bias=False))
            with torch.no_grad():
                self.model.weight.zero_()
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.25))
            self.weights = []

        def build_training_data_loader(self):
            return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(16, 1)), batch_size=2)

        def build_validation_data_loader(self):
            return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(2, 1)), batch_size=2)

        def train_batch(self, batch, epoch_idx, batch_idx):
            self.weights.append(self.model.weight.item())
            loss = self.model(batch[0]).sum()
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            with open("weights.json", "w") as f:
                json.dump(self.weights, f)
            return loss

        def evaluate_batch(self, batch):
            return {"validation_loss": self.model(batch[0]).sum()}
''')


@pytest.mark.parametrize(("average", "step"), [(True, -0.5), (False, -1.0)])
def test_legacy_trial_honours_aggregation_frequency_and_average_aggregated_gradients(tmp_path, average, step):
    # 2 batches per optimizer step, each with gradient 2: the step is lr * (2 + 2), halved when averaged.
    (tmp_path / "model_def.py").write_text(MODEL_DEF)
    (tmp_path / "exp.yaml").write_text(textwrap.dedent(f'''\
        entrypoint: model_def:Trial
        hyperparameters: {{global_batch_size: 2}}
        searcher: {{name: single, metric: validation_loss, max_length: {{batches: 5}}}}
        optimizations: {{aggregation_frequency: 2, average_aggregated_gradients: {str(average).lower()}}}
        checkpoint_policy: none
        checkpoint_storage: {{type: shared_fs, host_path: {tmp_path / "checkpoints"}}}
        '''))
    proc = subprocess.run([sys.executable, "-m", "stalwart.harness.pytorch.legacy", "--config", "exp.yaml",
                           "model_def:Trial"], cwd=tmp_path, env={**os.environ, "STALWART_INFO_FILE": ""},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    weights = json.loads((tmp_path / "weights.json").read_text())
    assert weights == pytest.approx([0.0, 0.0, step, step, 2 * step])
