"""Exception types of Determined's `determined.errors` module."""

from __future__ import annotations

from typing import Any


class InternalException(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = f"internal error: {message}"

    def __str__(self) -> str:
        return self.message


class InvalidExperimentException(BaseException):
    """The experiment cannot run as defined."""


class InvalidDataTypeException(InvalidExperimentException):
    def __init__(self, type: type, message: str) -> None:  # noqa: A002 - Determined's signature
        super().__init__(f"invalid data type ({type.__name__}): {message}")


class InvalidConfigurationException(InvalidExperimentException):
    def __init__(self, config: dict[str, Any], message: str) -> None:
        super().__init__(f"invalid configuration ({config}): {message}")


class WorkerError(Exception):
    """A worker process failed for an unknown reason."""


class WorkerFinishedGracefully(Exception):
    pass


class SkipWorkloadException(Exception):
    """Raised by a trial to skip the current phase."""
