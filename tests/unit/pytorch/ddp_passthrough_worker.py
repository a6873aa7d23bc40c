"""A PyTorchTrial on 2 real workers whose wrapped (DDP) model is used through its own attributes and methods.

    ddp_passthrough_worker.py STORAGE_DIR

Prints RESULT <json> per rank: what the trial read through the wrapped model, and the training and validation
metrics it reported (per-batch arrays and Nones, reduced on each rank and then across the ranks).
"""

import json
import sys

import torch
from torch import nn

from stalwart import pytorch


class ScaledLinear(nn.Module):
    """A user module with a plain attribute, a method, a buffer and a property beside its parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.my_attr = "hello"
        self.register_buffer("scale", torch.tensor(2.0))

    @property
    def out_features(self) -> int:
        return self.linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale

    def scaled_sum(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward(x).sum()


class PassThroughTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        torch.set_num_threads(1)
        self.context = context
        self.model = context.wrap_model(ScaledLinear())
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
        self.seen = {"ddp": isinstance(self.model, nn.parallel.DistributedDataParallel),
                     "my_attr": self.model.my_attr, "scale": self.model.scale.item(),
                     "out_features": self.model.out_features, "has_linear": isinstance(self.model.linear, nn.Linear),
                     "module_is_user": type(self.model.module).__name__, "missing": None}
        try:
            self.model.no_such_attr  # noqa: B018
        except AttributeError as err:
            self.seen["missing"] = str(err)
        self.method_losses: list[float] = []

    def build_training_data_loader(self):
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(8, 4)), batch_size=2)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(8, 4)), batch_size=2)

    def train_batch(self, batch, epoch_idx, batch_idx):
        loss = self.model.scaled_sum(batch[0])  # the user's method, through the DDP wrapper
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.method_losses.append(loss.item())
        rank = float(self.context.distributed.rank)
        return {"loss": loss, "pair": torch.tensor([rank, rank + 2.0]), "rank0_only": None if rank else 3.0}

    def evaluate_batch(self, batch, batch_idx):
        rank = float(self.context.distributed.rank)
        return {"one": torch.tensor([rank]), "three": torch.tensor([rank, rank + 10.0, rank + 20.0]),
                "total": torch.tensor([1.0, 2.0])}

    def evaluation_reducer(self):
        return {"one": pytorch.Reducer.AVG, "three": pytorch.Reducer.MAX, "total": pytorch.Reducer.SUM}


def main(storage: str) -> None:
    with pytorch.init(hparams={"global_batch_size": 4}, checkpoint_storage=storage) as ctx:
        validations: list[dict] = []
        trainings: list[dict] = []
        ctx._core.train.report_validation_metrics = lambda steps, metrics: validations.append(metrics)
        ctx._core.train.report_training_metrics = lambda steps, metrics, batch_metrics=None: trainings.append(metrics)
        trial = PassThroughTrial(ctx)
        pytorch.Trainer(trial, ctx).fit(max_length=pytorch.Batch(2), validation_period=pytorch.Batch(2),
                                        checkpoint_policy="none")
        print("RESULT " + json.dumps({"rank": ctx.distributed.rank, "size": ctx.distributed.size, **trial.seen,
                                      "method_losses": trial.method_losses, "validations": validations,
                                      "trainings": trainings}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
    pytorch_legacy = __import__("stalwart.harness.pytorch.legacy", fromlist=["clean_distributed_exit"])
    pytorch_legacy.clean_distributed_exit()
