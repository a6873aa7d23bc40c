"""Data-parallel training of the digits MLP with the Core API and torch DDP, written against Determined's API.

Run by `python3 -m determined.launch.torch_distributed python3 core_api.py` (one worker per slot).
Every worker trains on its share of each global batch; DDP averages the gradients, so the model
follows the same path as one worker with the whole batch. Only the chief reports metrics and
writes checkpoints; every worker restores from the latest checkpoint when the trial resumes.
"""

import json
import logging
import os
import sys
import time

import determined as det
import torch
import torch.distributed as dist
from determined import core
from torch import nn

from model_def import digits_split, make_model

REPORT_EVERY = 10
VALIDATE_EVERY = 20


def batch_indices(n: int, batch_size: int, step: int, seed: int) -> torch.Tensor:
    """Record indices of global batch `step`: each epoch is a permutation seeded by (seed, epoch)."""
    epoch, within = divmod(step, n // batch_size)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))
    return perm[within * batch_size:(within + 1) * batch_size]


def save(ctx: core.Context, model: nn.Module, opt, steps: int) -> None:
    if ctx.distributed.rank == 0:
        with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, _):
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict()}, path / "state.pt")
            (path / "progress.json").write_text(json.dumps({"steps_completed": steps}))


def restore(ctx: core.Context, model: nn.Module, opt, uuid: str) -> int:
    with ctx.checkpoint.restore_path(uuid) as path:
        state = torch.load(path / "state.pt")
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        return json.loads((path / "progress.json").read_text())["steps_completed"]


def validate(ctx: core.Context, model: nn.Module, data, steps: int) -> float | None:
    """The chief evaluates on the whole validation set and reports; the others return None."""
    if ctx.distributed.rank != 0:
        return None
    x, y = data
    with torch.no_grad():
        logits = model.module(x)
        metrics = {"validation_loss": nn.functional.cross_entropy(logits, y).item(),
                   "accuracy": (logits.argmax(1) == y).float().mean().item()}
    ctx.train.report_validation_metrics(steps, metrics)
    return metrics["validation_loss"]


def main(ctx: core.Context) -> None:
    info = det.get_cluster_info()
    hp, seed = info.trial.hparams, info.trial.trial_seed
    rank, size = ctx.distributed.rank, ctx.distributed.size
    logging.info("worker rank %d of %d starts at trial %d", rank, size, info.trial.trial_id)
    torch.manual_seed(seed)
    train, val = digits_split(True).tensors, digits_split(False).tensors
    model = nn.parallel.DistributedDataParallel(make_model(int(hp["hidden"])))
    opt = torch.optim.SGD(model.parameters(), lr=float(hp["learning_rate"]), momentum=0.9)
    global_batch = int(hp["global_batch_size"])
    per_worker = global_batch // size
    steps = restore(ctx, model, opt, info.latest_checkpoint) if info.latest_checkpoint else 0
    last_validation = None
    for op in ctx.searcher.operations():
        losses = []
        while steps < op.length:
            idx = batch_indices(len(train[0]), global_batch, steps, seed)[rank * per_worker:(rank + 1) * per_worker]
            loss = nn.functional.cross_entropy(model(train[0][idx]), train[1][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            steps += 1
            time.sleep(float(hp.get("batch_sleep", 0.0)))
            if steps % REPORT_EVERY == 0 or steps == op.length:
                mean = sum(losses) / len(losses)
                all_means = ctx.distributed.allgather(mean)
                if rank == 0:
                    ctx.train.report_training_metrics(steps, {"loss": sum(all_means) / size})
                    op.report_progress(steps)
                losses = []
            if steps % VALIDATE_EVERY == 0 or steps == op.length:
                last_validation = validate(ctx, model, val, steps)
                save(ctx, model, opt, steps)
            if ctx.preempt.should_preempt():  # the chief decides, every worker gets the same answer
                if steps % VALIDATE_EVERY != 0:
                    save(ctx, model, opt, steps)
                logging.info("preempted at steps_completed=%d", steps)
                return
        if rank == 0:
            op.report_completed(last_validation)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    dist.init_process_group("gloo")
    with core.init(distributed=core.DistributedContext.from_torch_distributed()) as context:
        main(context)
    # A clean gloo shutdown: wait for everyone, tear the group down, and leave without running
    # interpreter finalisers (gloo can abort in them after the work is done).
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
