"""Allocations: where a run of any task (trial or command) starts, is killed, preempted, or exits.

Owns the rows of allocations and their containers. Its face: everything here; every domain may use it."""
