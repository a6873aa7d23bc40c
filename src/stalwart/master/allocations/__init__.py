"""Allocations: where a run of any task (trial or command) starts, is killed, preempted, or exits.

Owns the rows of allocations and their containers. Its face: `lifecycle` (request_kill, request_preemption,
start_order, mark_started, mark_exited, lose_container, allocation_exited), `containers` (a gang's container
rows and slots), `env` (the environment every task container gets), `kinds` (where a task kind registers
its start order and what the end of its run means) and `root_guard` (no task runs as root unless the master
config allows it: checked when a link to an OS user is made, and on every start order). Every domain may use
it; it imports no domain."""
