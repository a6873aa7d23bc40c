"""The wire contract between CLI, master, agents and trials: states, errors and models."""

from stalwart.api.errors import (
    AuthError,
    ConfigError,
    ContextError,
    ForbiddenError,
    InvalidRequest,
    InvalidStateError,
    MasterUnavailable,
    NotFoundError,
    StalwartError,
)
from stalwart.api.states import AllocationState, ExperimentState, TrialState

__all__ = [
    "AllocationState",
    "AuthError",
    "ConfigError",
    "ContextError",
    "ExperimentState",
    "ForbiddenError",
    "InvalidRequest",
    "InvalidStateError",
    "MasterUnavailable",
    "NotFoundError",
    "StalwartError",
    "TrialState",
]
