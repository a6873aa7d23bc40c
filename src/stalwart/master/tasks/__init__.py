"""The tasks domain: commands (any program run once on the cluster as a task), the non-trial task kinds.

Owns the rows of commands. Its face: `commands` (check, create, kill, view). Importing it registers the command
task kind with `allocations` (start order, what a run's end means)."""

from stalwart.master.allocations import kinds
from stalwart.master.tasks import commands

kinds.register(kinds.TaskKind(kinds.COMMAND, start_order=commands.start_order, on_ended=commands.allocation_ended))
