"""Allocations: where a run of any task (trial or command) starts, is killed, preempted, or exits.

Owns the rows of allocations and their containers. Its face: `lifecycle` (request_kill, request_preemption,
start_order, mark_started, mark_exited, lose_container, allocation_exited), `containers` (a gang's container
rows and slots), `env` (the environment every task container gets) and `kinds` (where a task kind registers
its start order and what the end of its run means). Every domain may use it; it imports no domain."""
