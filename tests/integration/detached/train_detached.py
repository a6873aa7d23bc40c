"""A Determined-style detached script (examples/features/unmanaged in Determined): reports metrics and a
checkpoint with core_v2 from outside any cluster, resuming from its latest checkpoint when its trial ran before.

Its environment says how it ends: FAIL raises after reporting, HANG sleeps instead of closing (the test kills it),
OLD_FORM uses 0.37's `defaults=` / `unmanaged=` arguments, KEEP_NONE gives its storage a GC policy keeping nothing."""

import os
import time

from determined.experimental import core_v2


def config():
    ids = {"external_experiment_id": os.environ.get("EXP_ID"), "external_trial_id": os.environ.get("TRIAL_ID")}
    storage = os.environ["CKPT_DIR"]
    if os.environ.get("KEEP_NONE"):  # a GC policy that would delete every checkpoint of a managed trial
        storage = {"type": "shared_fs", "host_path": storage, "save_experiment_best": 0, "save_trial_best": 0,
                   "save_trial_latest": 0}
    if os.environ.get("OLD_FORM"):
        defaults = core_v2.DefaultConfig(name="detached-old-form", hparams={"lr": 0.1}, checkpoint_storage=storage)
        return {"defaults": defaults, "unmanaged": core_v2.UnmanagedConfig(**ids)}
    return {"config": core_v2.Config(name="detached-test", hparams={"lr": 0.1}, labels=["laptop"],
                                     checkpoint_storage=storage, **ids)}


def main():
    core_v2.init(**config())
    start = 0
    if core_v2.info.latest_checkpoint:
        with core_v2.checkpoint.restore_path(core_v2.info.latest_checkpoint) as path:
            start = int((path / "step").read_text())
    step = start
    for step in range(start + 1, start + 6):
        core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    core_v2.train.report_validation_metrics(steps_completed=step, metrics={"validation_loss": 0.5 / step})
    with core_v2.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        (path / "step").write_text(str(step))
    print(f"detached trial {core_v2.info.trial.trial_id} reached step {step}", flush=True)
    if os.environ.get("FAIL"):
        raise RuntimeError("the script failed on purpose")
    if os.environ.get("HANG"):
        time.sleep(600)
    core_v2.close()


if __name__ == "__main__":
    main()
