"""The interface a cloud implements for elastic pools: launch instances with given user-data, list the ones this
master launched (its tags or labels), terminate some. Every implementation passes
`stalwart.testing.provider_conformance`."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar


class InstanceState(enum.StrEnum):
    """An instance's state in the cloud, in the four words every provider maps its own onto."""

    STARTING = "STARTING"  # asked for, booting (EC2 `pending`, GCE `PROVISIONING`/`STAGING`)
    RUNNING = "RUNNING"  # up (its agent may or may not have registered yet)
    TERMINATING = "TERMINATING"  # going away (EC2 `shutting-down`/`stopping`, GCE `STOPPING`/`SUSPENDING`)
    TERMINATED = "TERMINATED"  # gone (or stopped: a stopped instance runs no agent)

    @property
    def live(self) -> bool:
        return self in (InstanceState.STARTING, InstanceState.RUNNING)


class ProviderError(Exception):
    """The cloud refused or could not be reached; the message says which call and why (never a credential)."""


@dataclass(frozen=True)
class Instance:
    """One instance as its cloud says: its id there, state, when it was launched (epoch seconds), whether the cloud
    took it back (a spot or preemptible instance reclaimed), and its private address when it has one."""

    id: str
    state: InstanceState
    launched_at: float
    spot_interrupted: bool = False
    address: str | None = None


UserDataFor = Callable[[int], str]
"""The user-data (startup script) of the i-th instance of one launch: each instance gets its own join credential."""


class Provider(ABC):
    """One cloud account and place (region/zone) with one pool's instance settings."""

    type: ClassVar[str]

    @abstractmethod
    def launch(self, count: int, user_data_for: UserDataFor) -> list[Instance]:
        """Start `count` instances, the i-th with `user_data_for(i)` as its startup script; answers them in that
        order. Raises `ProviderError` when the cloud refuses (what launched before the refusal is still listed)."""

    @abstractmethod
    def list(self) -> list[Instance]:
        """Every instance this master launched for this pool that the cloud still shows (terminated ones too, for
        as long as the cloud keeps them)."""

    @abstractmethod
    def terminate(self, ids: Sequence[str]) -> None:
        """Terminate these instances (ids the cloud no longer knows are ignored)."""
