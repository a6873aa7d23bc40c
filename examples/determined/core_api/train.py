"""Digits MLP written against Determined's Core API (`import determined as det`), as Determined users write it.

It runs on a Stalwart cluster unchanged, and off-cluster with `python train.py` using either
Stalwart's or the real `determined` package.
"""

import logging
import pathlib
import time

import determined as det
import numpy as np
import torch
from determined import core
from sklearn.datasets import load_digits
from torch import nn

REPORT_EVERY = 25
VALIDATE_EVERY = 100


def data():
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
    cut = int(0.8 * len(x))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


def batch(step, n, size, seed):
    per_epoch = n // size
    epoch, i = divmod(step, per_epoch)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
    return perm[i * size:(i + 1) * size]


def main(ctx: core.Context, hparams: dict, latest_checkpoint, seed: int) -> None:
    if hparams.get("invalid"):
        raise det.InvalidHP("this configuration asked to be rejected")
    torch.manual_seed(seed)
    (xt, yt), (xv, yv) = data()
    model = nn.Sequential(nn.Linear(64, hparams["hidden"]), nn.ReLU(), nn.Linear(hparams["hidden"], 10))
    opt = torch.optim.SGD(model.parameters(), lr=hparams["learning_rate"], momentum=0.9)
    steps = 0
    if latest_checkpoint is not None:
        with ctx.checkpoint.restore_path(latest_checkpoint) as path:
            state = torch.load(pathlib.Path(path) / "state.pt")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            steps = state["steps"]
        logging.info("resumed at steps_completed=%d", steps)

    def checkpoint():
        with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, _):
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "steps": steps},
                       pathlib.Path(path) / "state.pt")

    for op in ctx.searcher.operations():
        while steps < op.length:
            idx = batch(steps, len(xt), hparams["batch_size"], seed)
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            time.sleep(hparams.get("batch_sleep", 0.0))
            if steps % REPORT_EVERY == 0 or steps == op.length:
                ctx.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss.item()})
                op.report_progress(steps)
            if steps % VALIDATE_EVERY == 0 or steps == op.length:
                with torch.no_grad():
                    logits = model(xv)
                    val = {"validation_loss": nn.functional.cross_entropy(logits, yv).item(),
                           "accuracy": (logits.argmax(1) == yv).float().mean().item()}
                ctx.train.report_validation_metrics(steps_completed=steps, metrics=val)
                logging.info("validation at steps_completed=%d: %s", steps, val)
                checkpoint()
            if ctx.preempt.should_preempt():
                checkpoint()
                logging.info("preempted at steps_completed=%d", steps)
                return
        op.report_completed(val["validation_loss"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    if info is not None:  # on a cluster
        hp, latest, trial_seed = info.trial.hparams, info.latest_checkpoint, info.trial.trial_seed
    else:  # off-cluster: `python train.py`
        hp = {"learning_rate": 0.05, "hidden": 48, "batch_size": 32}
        latest, trial_seed = None, 0
    with core.init() as core_context:
        main(core_context, hp, latest, trial_seed)
