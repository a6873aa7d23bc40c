"""The error hierarchy survives the wire: kind, message, details, HTTP status and exit code."""

import pytest

from stalwart.api.errors import (
    ConfigError,
    ContextError,
    InvalidStateError,
    MasterUnavailable,
    NotFoundError,
    StalwartError,
)


@pytest.mark.parametrize("cls, status, code", [
    (ConfigError, 400, 2), (ContextError, 400, 2), (NotFoundError, 404, 3), (InvalidStateError, 409, 4),
    (MasterUnavailable, 503, 6),
])
def test_round_trip(cls, status, code):
    err = cls("boom", details=["a.b: required"])
    back = StalwartError.from_dict(err.http_status, err.to_dict())
    assert type(back) is cls and back.message == "boom" and back.details == ["a.b: required"]
    assert (back.http_status, back.exit_code) == (status, code)
    assert back.full_message() == "boom\n  - a.b: required"


def test_unknown_bodies_become_a_readable_error():
    err = StalwartError.from_dict(502, {"detail": "bad gateway"})
    assert "502" in str(err)
