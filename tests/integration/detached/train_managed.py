"""core_v2 inside a managed trial, as Determined's own examples use it: the Config is ignored (the experiment's
config rules), the module-wide contexts report, and close() ends the Core API's work."""

from determined.experimental import core_v2

core_v2.init(config=core_v2.Config(name="ignored inside a managed trial"))
tensorboard = core_v2.train.get_tensorboard_path()
for step in (1, 2, 3):
    core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
core_v2.train.report_validation_metrics(steps_completed=3, metrics={"loss": 0.25})
print(f"managed core_v2 trial {core_v2.info.trial.trial_id} tensorboard {tensorboard}", flush=True)
core_v2.close()
assert core_v2.train is None
