"""The one error hierarchy: every error knows its HTTP status and its CLI exit code."""

from __future__ import annotations

from typing import Any


class StalwartError(Exception):
    """Base of every error a user can see. `str(err)` is the one-line message."""

    http_status = 500
    exit_code = 1
    kind = "internal"

    def __init__(self, message: str, *, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details or [])

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "message": self.message, "details": self.details}}

    def full_message(self) -> str:
        if not self.details:
            return self.message
        return self.message + "\n" + "\n".join(f"  - {d}" for d in self.details)

    @staticmethod
    def from_dict(status: int, body: dict[str, Any]) -> StalwartError:
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return StalwartError(f"master answered HTTP {status}: {body!r}")
        cls = _BY_KIND.get(err.get("kind", ""), StalwartError)
        return cls(str(err.get("message", "")), details=err.get("details") or [])


class InvalidRequest(StalwartError):
    """The request itself is wrong (bad field, bad value)."""

    http_status = 400
    exit_code = 2
    kind = "invalid_request"


class ConfigError(InvalidRequest):
    """An experiment, task or master config failed validation; details list every problem."""

    kind = "invalid_config"


class ContextError(InvalidRequest):
    """A context directory or archive cannot be used (too big, unsafe paths, ...)."""

    kind = "invalid_context"


class NotFoundError(StalwartError):
    http_status = 404
    exit_code = 3
    kind = "not_found"


class InvalidStateError(StalwartError):
    """The object exists but cannot do this now (e.g. pausing a completed experiment)."""

    http_status = 409
    exit_code = 4
    kind = "invalid_state"


class AuthError(StalwartError):
    http_status = 401
    exit_code = 5
    kind = "unauthenticated"


class ForbiddenError(StalwartError):
    http_status = 403
    exit_code = 5
    kind = "forbidden"


class TryLater(StalwartError):
    """The master cannot answer this yet (e.g. the metrics index is still being built); ask again shortly."""

    http_status = 503
    exit_code = 1
    kind = "unavailable"


class TooManyRequests(StalwartError):
    """Too many failed logins for a user name or from an address (the back-off, docs/users.md), or too many
    password checks at once: ask again after `retry_after_s` seconds (the answer's Retry-After header)."""

    http_status = 429
    exit_code = 5
    kind = "too_many_requests"

    def __init__(self, message: str, *, retry_after_s: int = 1, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.retry_after_s = max(1, retry_after_s)


class MasterUnavailable(StalwartError):
    """The client could not reach the master."""

    http_status = 503
    exit_code = 6
    kind = "master_unavailable"


_BY_KIND = {
    cls.kind: cls
    for cls in (
        StalwartError,
        InvalidRequest,
        ConfigError,
        ContextError,
        NotFoundError,
        InvalidStateError,
        AuthError,
        ForbiddenError,
        TryLater,
        TooManyRequests,
        MasterUnavailable,
    )
}
