"""Determined's CLI and SDK against this master: Determined 0.38.1's REST surface on a listener of its own.

A thin translation over the master's own domain functions and typed reads, never a second implementation of
them: each route of `api/determined_routes/` checks its caller as the master's own routes do
(`routes.contract.route`), calls what Stalwart's route for the same thing calls, and answers Determined's
message shapes (`wire`: times, paging). `app` builds the listener's app and `listener` serves it beside the
master's own on a second socket of the same server (ARCHITECTURE.md, "Determined's CLI and SDK on a listener
of their own"); `errors` answers in Determined's error shape.

Handlers, one module per area: `auth_routes`, `experiment_routes`, `log_routes`, `checkpoint_routes`,
`detached_routes`. Rows to Determined's messages: `experiment_views` (experiments, their states as Determined
names them), `trial_views` (trials, workloads), `checkpoint_views`, `detached_views` (the detached run a user's
report is filed under). `model_definition` turns the client's list of files into the context archive that
Stalwart's create takes.
"""
