"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

What the double remembers of its callers for the tests: every API call received (method, path, query, the
Kubernetes RBAC verb, resource and API group), and the failures a test asked for (`fail_next`): the next
matching calls are answered with a Kubernetes `Status` error of the given code.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from stalwart.testing.k8s_api_double.objects import REASON_BY_CODE, ApiError

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class RecordedCall:
    """One API call as the double received it; `verb` is the RBAC verb (a watch is "watch", not "list")."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    resource: str
    api_group: str


@dataclass
class _Fault:
    verb: str
    resource: str
    status: int
    times: int


@dataclass
class CallJournal:
    """The calls so far and the failures still to answer; thread-safe."""

    calls: list[RecordedCall] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, call: RecordedCall) -> None:
        with self._lock:
            self.calls.append(call)

    def fail_next(self, verb: str, resource: str, status: int, times: int) -> None:
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}: use one of {', '.join(VERBS)}")
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        with self._lock:
            self._faults.append(_Fault(verb, resource, status, times))

    def injected_failure(self, call: RecordedCall) -> ApiError | None:
        """The error a `fail_next` asked for this call (counting it), or None."""
        with self._lock:
            for fault in self._faults:
                if fault.verb == call.verb and fault.resource == call.resource:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                    reason = REASON_BY_CODE.get(fault.status, "Unknown")
                    if fault.status == 409 and call.verb != "create":
                        reason = "Conflict"
                    message = f"injected failure (Kubernetes API test double): {call.verb} {call.resource}"
                    return ApiError(fault.status, message, reason)
        return None
