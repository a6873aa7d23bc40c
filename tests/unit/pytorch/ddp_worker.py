"""A PyTorchTrial trained off-cluster by 2 real workers (started by our launcher); prints RESULT <json> per rank.

    ddp_worker.py STORAGE_DIR

Phase 1 trains 6 batches (checkpoint every 3); phase 2 resumes from the last checkpoint to batch 9;
phase 3 resumes again towards batch 30, but rank 1 alone asks to stop at batch index 10.
Each rank records what it saw: its context, the records of every batch, the averaged metrics the
Trainer computed, and its weights after loading the checkpoint.
"""

import json
import sys

import torch
from torch import nn

from stalwart import pytorch


class IndexData(torch.utils.data.Dataset):
    """Record i is (i, features, label): the trial can tell which records each rank trained on."""

    def __len__(self) -> int:
        return 96

    def __getitem__(self, i: int):
        gen = torch.Generator().manual_seed(i)
        return i, torch.randn(8, generator=gen), i % 3


class Recorder(pytorch.PyTorchCallback):
    def __init__(self) -> None:
        self.training, self.validation = [], []

    def on_training_workload_end(self, avg_metrics, batch_metrics) -> None:
        self.training.append(avg_metrics)

    def on_validation_end(self, metrics) -> None:
        self.validation.append(metrics)


class IndexTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        torch.set_num_threads(1)
        self.context = context
        self.model = context.wrap_model(nn.Linear(8, 3))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
        self.recorder = Recorder()
        self.batches: list[tuple[int, list[int]]] = []
        self.loaded_weights = None

    def build_callbacks(self):
        return {"recorder": self.recorder}

    def build_training_data_loader(self):
        return pytorch.DataLoader(IndexData(), batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(IndexData(), batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        if self.loaded_weights is None:
            self.loaded_weights = [p.detach().flatten().tolist() for p in self.model.parameters()]
        idx, x, y = batch
        self.batches.append((batch_idx, idx.tolist()))
        if batch_idx == self.context.get_hparams().get("rank1_stops_at") and self.context.distributed.rank == 1:
            self.context.set_stop_requested(True)
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss, "rank": float(self.context.distributed.rank)}

    def evaluate_batch(self, batch):
        idx, x, y = batch
        return {"validation_loss": nn.functional.cross_entropy(self.model(x), y), "records": float(len(idx))}


def phase(storage: str, length: int, latest: str | None, **hparams) -> tuple[IndexTrial, list[str], object]:
    exp_conf = {"searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True}}
    hparams = {"global_batch_size": 16, **hparams}
    with pytorch.init(hparams=hparams, exp_conf=exp_conf, checkpoint_storage=storage) as ctx:
        trial = IndexTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(length), checkpoint_period=pytorch.Batch(3),
                    validation_period=pytorch.Batch(3), reporting_period=pytorch.Batch(3), checkpoint_policy="all",
                    latest_checkpoint=latest)
        return trial, trainer.checkpoints, ctx


def main(storage: str) -> None:
    first, ckpts, ctx = phase(storage, 6, None)
    dist = ctx.distributed
    second, more, _ = phase(storage, 9, ckpts[-1])
    third, _, _ = phase(storage, 30, more[-1], rank1_stops_at=10)  # only rank 1 asks to stop
    weights_after_phase1 = [p.detach().flatten().tolist() for p in first.model.parameters()]
    print("RESULT " + json.dumps({
        "rank": dist.rank, "size": dist.size, "per_slot": ctx.get_per_slot_batch_size(),
        "global": ctx.get_global_batch_size(), "ddp": isinstance(first.model, nn.parallel.DistributedDataParallel),
        "checkpoints": ckpts, "batches": first.batches, "resumed_batches": second.batches,
        "training": first.recorder.training, "validation": first.recorder.validation,
        "weights_phase1": weights_after_phase1, "loaded_phase2": second.loaded_weights,
        "stopped_batches": [b for b, _ in third.batches],
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
    pytorch_legacy = __import__("stalwart.harness.pytorch.legacy", fromlist=["clean_distributed_exit"])
    pytorch_legacy.clean_distributed_exit()
