"""The experiments domain: experiment and trial state machines, searching, custom searchers, intake, checkpoint GC.

Owns the rows of experiments, trials, metrics and checkpoints. Its face (what routes, ui and app may import):
`experiments` (create, pause, activate, archive, cancel, kill), `trials` (kill, latest checkpoint), `intake`
(reports from trial processes, `MetricsWriter`) and `searching` (searcher events). `checkpoint_gc`,
`custom_search`, `metric_reports`, `searchers`, `finishing`, `progress`, `warm_start` (the checkpoint a new trial
starts from: `searcher.source_trial_id` / `source_checkpoint_uuid`) and `trial_orders` are its internals.

Importing it registers the trial task kind with `allocations` (start order, what a run's end means) and its
step of the scheduling pass (stopping experiments with no live run finish)."""

from stalwart.master.allocations import kinds
from stalwart.master.experiments import finishing, trial_orders, trials
from stalwart.master.scheduling import scheduling

# importing the domain registers the trial task kind with allocations, and its step of the scheduling pass
kinds.register(kinds.TaskKind(kinds.TRIAL, start_order=trial_orders.start_order, on_ended=trials.run_ended))
scheduling.register_step(finishing.finish_stopping)
