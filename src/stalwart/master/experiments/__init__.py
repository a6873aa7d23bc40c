"""The experiments domain: experiment and trial state machines, searching, custom searchers, intake, checkpoint GC.

Owns the rows of experiments, trials, metrics and checkpoints. Its face (what routes, ui and app may import):
`experiments` (create, pause, activate, archive, cancel, kill), `trials` (kill, latest checkpoint), `intake`
(reports from trial processes, `MetricsWriter`) and `searching` (searcher events). `checkpoint_gc`,
`custom_search` and `metric_reports` are its internals."""
