"""Train the digits MLP with the Core API: metrics, checkpoints, preemption and exact resume.

Runs on a Stalwart cluster (`stalwart experiment create const.yaml .`) and off-cluster (`python train.py`).
"""

from __future__ import annotations

import json
import logging
import time

import torch
from torch import nn

from model import batch_indices, load_data, make_model
from stalwart import core

VALIDATE_EVERY = 100  # batches between validations, unless the config's min_validation_period says otherwise
REPORT_EVERY = 20


def validation_period(info) -> int:
    """Batches between validations: the config's `min_validation_period` in batches, else VALIDATE_EVERY.

    A search's rungs need a validation at each rung length (examples/digits/search.yaml validates every 50 batches).
    """
    period = (info.trial._config.get("min_validation_period") or {}) if info and info.trial else {}
    batches = period.get("batches") if isinstance(period, dict) else None
    return int(batches) if batches else VALIDATE_EVERY


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict:
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y).item()
        acc = (logits.argmax(1) == y).float().mean().item()
    model.train()
    return {"validation_loss": loss, "validation_accuracy": acc}


def save(ctx: core.Context, model, opt, steps: int) -> None:
    with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path / "state.pt")
        (path / "progress.json").write_text(json.dumps({"steps_completed": steps}))


def restore(ctx: core.Context, model, opt, uuid: str) -> int:
    with ctx.checkpoint.restore_path(uuid) as path:
        state = torch.load(path / "state.pt")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        return json.loads((path / "progress.json").read_text())["steps_completed"]


def main(ctx: core.Context) -> None:
    info = ctx.info
    hp = info.trial.hparams if info else {"learning_rate": 0.05, "hidden": 64, "batch_size": 32, "batch_sleep": 0.0}
    seed = info.trial.trial_seed if info else 0
    torch.manual_seed(seed)
    (x_train, y_train), (x_val, y_val) = load_data()
    model = make_model(int(hp["hidden"]))
    opt = torch.optim.SGD(model.parameters(), lr=float(hp["learning_rate"]), momentum=0.9)
    steps = 0
    every = validation_period(info)
    if info and info.latest_checkpoint:
        steps = restore(ctx, model, opt, info.latest_checkpoint)
        logging.info("resumed from checkpoint %s at steps_completed=%d", info.latest_checkpoint, steps)

    for op in ctx.searcher.operations():
        losses = []
        while steps < op.length:
            idx = batch_indices(len(x_train), int(hp["batch_size"]), steps, seed)
            loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            steps += 1
            if hp.get("batch_sleep"):
                time.sleep(float(hp["batch_sleep"]))
            if steps % REPORT_EVERY == 0 or steps == op.length:
                ctx.train.report_training_metrics(steps, {"loss": sum(losses) / len(losses)})
                logging.info("steps_completed=%d loss=%.4f", steps, sum(losses) / len(losses))
                losses = []
                op.report_progress(steps)
            if steps % every == 0 or steps == op.length:
                metrics = evaluate(model, x_val, y_val)
                ctx.train.report_validation_metrics(steps, metrics)
                logging.info("validation at steps_completed=%d: %s", steps, metrics)
                save(ctx, model, opt, steps)
            if ctx.preempt.should_preempt():
                if steps % every != 0:
                    save(ctx, model, opt, steps)
                logging.info("preempted at steps_completed=%d; checkpoint saved, exiting", steps)
                return
        final = evaluate(model, x_val, y_val)
        print(f"final validation_accuracy={final['validation_accuracy']:.4f} "
              f"validation_loss={final['validation_loss']:.4f}", flush=True)
        op.report_completed(final["validation_accuracy"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    with core.init() as context:
        main(context)
