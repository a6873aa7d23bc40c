"""A trial for the fault tests: short steps, a checkpoint every few, and a ledger of what the master acknowledged.

Each step's training metric is flushed (the master acknowledged it) before the step is appended to the
ledger; each checkpoint is appended once `store_path` returned (registered). The ledger lives outside the
cluster (`LEDGER`, from the experiment's environment), so the test can check that everything acknowledged
is still in the master at the end, whatever was killed meanwhile.
"""

import json
import os
import time

from determined import core

STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.1"))
CHECKPOINT_EVERY = int(os.environ.get("CHECKPOINT_EVERY", "5"))


def ledger(line: str) -> None:
    with open(os.environ["LEDGER"], "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


with core.init() as ctx:
    info = ctx.info
    trial = info.trial.trial_id
    steps = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            steps = json.loads((path / "state.json").read_text())["steps"]
    for op in ctx.searcher.operations():
        while steps < op.length:
            time.sleep(STEP_SECONDS)
            steps += 1
            ctx.train.report_training_metrics(steps, {"loss": 1.0 / steps})
            ctx.train.flush()
            ledger(f"metric {trial} {steps}")
            if steps % CHECKPOINT_EVERY == 0 or steps == op.length:
                with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
                    (path / "state.json").write_text(json.dumps({"steps": steps}))
                ledger(f"checkpoint {trial} {steps} {uuid}")
                op.report_progress(steps)
            if ctx.preempt.should_preempt():
                if steps % CHECKPOINT_EVERY:
                    with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
                        (path / "state.json").write_text(json.dumps({"steps": steps}))
                    ledger(f"checkpoint {trial} {steps} {uuid}")
                raise SystemExit(0)
        ctx.train.report_validation_metrics(steps, {"score": float(steps) + trial * 0.01})
        op.report_completed(float(steps))
