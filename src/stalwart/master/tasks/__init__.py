"""The tasks domain: commands (any program run once on the cluster as a task), the non-trial task kinds.

Owns the rows of commands. Its face: `commands` (check, create, kill, view)."""
