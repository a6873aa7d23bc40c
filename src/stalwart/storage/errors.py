"""What goes wrong talking to an object store, said so that a user knows what to check (and never a secret)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from stalwart.api.errors import StalwartError


class StorageError(StalwartError):
    """Checkpoint storage failed: the bucket is missing, the credentials are refused, the endpoint is unreachable."""


# Problem kinds, found in the names of the exception and its causes (the fsspec libraries and the cloud SDKs each
# have their own classes; their names say enough).
_MISSING = ("NotFound", "NoSuchBucket", "NoSuchContainer")
_DENIED = ("Permission", "AccessDenied", "Forbidden", "Authentication", "Credentials", "InvalidAccessKey",
           "SignatureDoesNotMatch", "Unauthorized", "Authoriz", "RefreshError")
_UNREACHABLE = ("Connect", "Timeout", "ServiceRequest", "ServerDisconnected", "ServiceUnavailable", "SlowDown",
                "Throttl", "InternalError", "IncompleteRead", "ClientPayloadError")
_SAS_SIGNATURE = re.compile(r"(sig|AccountKey|SharedAccessSignature|X-Amz-Signature|X-Amz-Credential)=[^&;\s'\"]+",
                            re.IGNORECASE)


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(err: BaseException) -> list[str]:
    return [cls.__name__ for e in _chain(err) for cls in type(e).__mro__] + [
        str(getattr(e, "code", "") or getattr(e, "error_code", "") or "") for e in _chain(err)]


def problem_kind(err: BaseException) -> str:
    """'missing' (bucket/container), 'denied' (credentials), 'unreachable' (network, or a server saying try again)
    or 'failed' (anything else)."""
    names = _names(err)
    if any(isinstance(e, PermissionError) for e in _chain(err)) or _has(names, _DENIED):
        return "denied"
    if any(isinstance(e, FileNotFoundError) for e in _chain(err)) or _has(names, _MISSING):
        return "missing"
    if any(isinstance(e, ConnectionError | TimeoutError) for e in _chain(err)) or _has(names, _UNREACHABLE):
        return "unreachable"
    return "failed"


def _has(names: Sequence[str], fragments: Sequence[str]) -> bool:
    """Whether a fragment occurs in a name, ignoring case and underscores ('AUTHORIZATION_FAILURE')."""
    folded = [name.replace("_", "").lower() for name in names]
    return any(fragment.lower() in name for name in folded for fragment in fragments)


_WHAT = {
    "missing": "the bucket does not exist or cannot be seen",
    "denied": "the credentials were refused or are missing",
    "unreachable": "the storage endpoint did not answer",
    "failed": "the storage service answered with an error",
}


@dataclass(frozen=True)
class Location:
    """Where a backend keeps checkpoints, what to check for each kind of problem, and the secrets to keep out of
    error messages."""

    backend: str  # the checkpoint_storage.type
    bucket: str  # the bucket, or Azure's container
    prefix: str = ""
    checks: Mapping[str, str] = field(default_factory=dict)  # problem kind -> what the user should check
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def describe(self) -> str:
        noun = "container" if self.backend == "azure" else "bucket"
        where = f"{self.backend} {noun} '{self.bucket}'"
        return f"{where} (prefix '{self.prefix}')" if self.prefix else where

    def scrub(self, text: str) -> str:
        """`text` without any of this location's secrets, SAS signatures or account keys."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return _SAS_SIGNATURE.sub(lambda m: f"{m.group(1)}=***", text)

    def missing_bucket(self) -> StorageError:
        noun = "container" if self.backend == "azure" else "bucket"
        return StorageError(f"{self.describe()}: the {noun} does not exist or cannot be seen; check "
                            f"{self.checks.get('missing', 'the checkpoint_storage section')}")

    def error(self, err: BaseException, action: str) -> StorageError:
        """A StorageError for `err` during `action`: what went wrong, what to check, the cause without secrets."""
        kind = problem_kind(err)
        what = _WHAT[kind].replace("bucket", "container") if self.backend == "azure" else _WHAT[kind]
        check = self.checks.get(kind) or self.checks.get("failed", "the checkpoint_storage section")
        cause = self.scrub(f"{type(err).__name__}: {err}")
        if len(cause) > 400:
            cause = cause[:400] + "..."
        return StorageError(f"{self.describe()}: {action} failed: {what}; check {check} ({cause})")
