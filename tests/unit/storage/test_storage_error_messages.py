"""How a storage failure is told: the kind of problem from the cloud libraries' own exceptions, what to check, and
no secret (keys, connection strings, SAS signatures) in the message."""

from __future__ import annotations

import pytest
from azure.core.exceptions import ClientAuthenticationError, ResourceNotFoundError, ServiceRequestError
from botocore.exceptions import EndpointConnectionError, NoCredentialsError

from stalwart.storage.errors import Location, problem_kind

CONN = ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleS1ieXRlcw==;"
        "EndpointSuffix=core.windows.net")


@pytest.mark.parametrize(("err", "kind"), [
    (FileNotFoundError("The specified bucket does not exist"), "missing"),
    (ResourceNotFoundError("The specified container does not exist."), "missing"),
    (PermissionError("The AWS Access Key Id you provided does not exist in our records."), "denied"),
    (NoCredentialsError(), "denied"),
    (ClientAuthenticationError("Server failed to authenticate the request."), "denied"),
    (EndpointConnectionError(endpoint_url="http://127.0.0.1:1/b"), "unreachable"),
    (ServiceRequestError("Cannot connect to host"), "unreachable"),
    (ConnectionRefusedError(111, "Connection refused"), "unreachable"),
    (ValueError("something else"), "failed"),
])
def test_the_kind_of_problem_comes_from_the_exception_or_its_cause(err: Exception, kind: str) -> None:
    wrapped = OSError("while uploading")
    wrapped.__cause__ = err
    assert problem_kind(err) == kind and problem_kind(wrapped) == kind


def test_a_message_names_backend_bucket_and_what_to_check_without_secrets() -> None:
    location = Location("azure", "ckpts", checks={"denied": "checkpoint_storage.connection_string"}, secrets=(CONN,))
    err = ClientAuthenticationError(f"bad request to https://acct.blob.core.windows.net/c?sv=1&sig=abcDEF123 "
                                    f"with {CONN} and AccountKey=other-key")
    message = str(location.error(err, "upload of checkpoint u1"))
    assert message.startswith("azure container 'ckpts': upload of checkpoint u1 failed: the credentials were refused")
    assert "check checkpoint_storage.connection_string" in message
    for secret in ("c2VjcmV0LWtleS1ieXRlcw==", "abcDEF123", "other-key"):
        assert secret not in message
    assert "sig=***" in message and CONN not in repr(location)
