"""State enums of experiments, trials and allocations, and which ones are terminal."""

from __future__ import annotations

import enum


class ExperimentState(str, enum.Enum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def stopping(self) -> bool:
        return self.value.startswith("STOPPING_")


TrialState = ExperimentState
"""Trials move through the same states as experiments."""

TERMINAL_STATES = frozenset({ExperimentState.COMPLETED, ExperimentState.CANCELED, ExperimentState.ERROR})


class AllocationState(str, enum.Enum):
    PENDING = "PENDING"  # waiting for slots
    ASSIGNED = "ASSIGNED"  # given to an agent, not yet confirmed running
    RUNNING = "RUNNING"  # the agent started the process
    TERMINATED = "TERMINATED"  # the process exited (exit_code says how)

    @property
    def live(self) -> bool:
        return self is not AllocationState.TERMINATED


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""A log line's levels, least severe first: asking for a level means that level and those after it."""

TASK_KINDS = ("command", "notebook", "tensorboard", "shell")
"""The kinds of task (a `commands` row's kind); `<kind>-<id>` is a task's id, and its path under the master's proxy."""


class ExitReason(str, enum.Enum):
    """Why a trial run ended, as recorded on the allocation."""

    COMPLETED = "COMPLETED"  # it ended its trial's work: trained its length, or stopped when the searcher asked
    EXITED = "EXITED"  # the process ended by itself
    KILLED = "KILLED"  # the user or master killed it
    AGENT_LOST = "AGENT_LOST"  # its agent stopped heartbeating
    PREEMPTED = "PREEMPTED"  # it exited after acknowledging a preemption
    INVALID_HP = "INVALID_HP"
    USER_REQUESTED_STOP = "USER_REQUESTED_STOP"
    SETUP_FAILED = "SETUP_FAILED"  # its container could not be set up (image pull, harness): no restart is used up
