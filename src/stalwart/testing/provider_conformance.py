"""The provider conformance suite: what every elastic-pool `stalwart.rm.elastic.Provider` (aws, gcp, ...) must do,
run against its cloud's emulator or labelled double.

An implementation supplies a `ProviderWorld`: a provider for a pool name, the startup script an instance was given,
and (where the emulator can) the cloud taking an instance back. A test module runs every entry of `CHECKS`:

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_conformance(check):
        if (why := run_check(MyWorld(...), check)) is not None:
            pytest.skip(why)
"""

from __future__ import annotations

import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from stalwart.rm.elastic import Instance, InstanceState, Provider


class NotApplicable(Exception):
    """This check cannot apply to this implementation (its emulator lacks what it needs): the reason."""


class ProviderWorld(ABC):
    """A cloud (emulator or double) and how the suite reaches its side."""

    @abstractmethod
    def provider(self, pool: str) -> Provider:
        """A provider of this master's instances of `pool`."""

    @abstractmethod
    def user_data(self, instance_id: str) -> str:
        """The startup script the cloud holds for the instance."""

    def take_back(self, instance_id: str) -> None:
        """The cloud reclaims a spot or preemptible instance."""
        raise NotApplicable("this emulator cannot take a spot or preemptible instance back")


def _pool() -> str:
    return f"pool-{secrets.token_hex(3)}"


def _eventually(read: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not read():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def _by_id(provider: Provider) -> dict[str, Instance]:
    return {i.id: i for i in provider.list()}


def check_launch(world: ProviderWorld) -> None:
    """`launch(n)` answers n instances in order, each listed live with its own startup script."""
    provider = world.provider(_pool())
    got = provider.launch(3, lambda i: f"#!/bin/sh\necho instance {i}\n")
    assert len(got) == 3 and len({i.id for i in got}) == 3
    listed = _by_id(provider)
    for n, inst in enumerate(got):
        assert listed[inst.id].state.live, listed[inst.id]
        assert listed[inst.id].launched_at > 0
        assert world.user_data(inst.id) == f"#!/bin/sh\necho instance {n}\n"
    _eventually(lambda: all(i.state == InstanceState.RUNNING for i in provider.list()), "the instances run")


def check_pools_apart(world: ProviderWorld) -> None:
    """A provider lists only its own pool's instances."""
    first, second = world.provider(_pool()), world.provider(_pool())
    mine = first.launch(1, lambda i: "#!/bin/sh\n")[0]
    assert mine.id in _by_id(first)
    assert mine.id not in _by_id(second)


def check_terminate(world: ProviderWorld) -> None:
    """Terminated instances are no longer live (or no longer listed); the others are untouched; ids the cloud
    does not know and repeated terminations are ignored."""
    provider = world.provider(_pool())
    gone, kept = provider.launch(2, lambda i: "#!/bin/sh\n")
    provider.terminate([gone.id])
    provider.terminate([gone.id])
    provider.terminate([])
    listed = _by_id(provider)
    assert gone.id not in listed or not listed[gone.id].state.live
    assert listed[kept.id].state.live
    if gone.id in listed:
        assert not listed[gone.id].spot_interrupted, "an instance terminated on request is no interruption"


def check_take_back(world: ProviderWorld) -> None:
    """An instance the cloud takes back is listed as not live and `spot_interrupted`."""
    provider = world.provider(_pool())
    inst = provider.launch(1, lambda i: "#!/bin/sh\n")[0]
    world.take_back(inst.id)
    listed = _by_id(provider)[inst.id]
    assert not listed.state.live and listed.spot_interrupted, listed


CHECKS: dict[str, Callable[[ProviderWorld], None]] = {
    "launch": check_launch, "pools_apart": check_pools_apart, "terminate": check_terminate,
    "take_back": check_take_back,
}


def run_check(world: ProviderWorld, name: str) -> str | None:
    """Run one check; the reason when it does not apply, else None (a failure raises)."""
    try:
        CHECKS[name](world)
    except NotApplicable as why:
        return str(why)
    return None
