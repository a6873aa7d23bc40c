"""One provisioning pass of an elastic pool, as a pure function: the pool's limits, the slots its pending gangs
need and its instances as the master knows them in, how many instances to launch and which to terminate (with the
reason each) out.

The rules (docs/elastic-agents.md):
- an instance whose agent has not registered `max_agent_starting_period` after launch is terminated and reported;
- demand is gang-aware: a gang larger than one instance needs that many whole instances at once, smaller gangs are
  packed into instances first-fit by size; a gang that `max_instances` instances could never hold is reported and
  not launched for;
- instances still starting and registered ones that are idle count as supply; the rest is launched, keeping the
  pool within `min_instances`..`max_instances`;
- instances idle longer than `max_idle_agent_period` that the demand does not need are terminated, down to
  `min_instances`, longest idle first."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stalwart.rm.elastic.provider import InstanceState


@dataclass(frozen=True)
class PoolLimits:
    """The provider keys `decide` reads: instance counts, each instance's slots, and the two periods in seconds."""

    min_instances: int = 0
    max_instances: int = 5
    instance_slots: int = 1
    max_idle_s: float = 1200.0
    max_starting_s: float = 1200.0


@dataclass(frozen=True)
class TrackedInstance:
    """An instance as the master knows it: the cloud's state, when it was launched, whether its agent registered,
    and since when that agent holds no work (None: it holds some, or has not registered)."""

    id: str
    state: InstanceState
    launched_at: float
    registered: bool = False
    idle_since: float | None = None


@dataclass(frozen=True)
class Decision:
    """What one pass does: launch this many instances, terminate these (id, reason), and what else it noticed."""

    launch: int = 0
    terminate: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


def instances_needed(gang_slots: Sequence[int], instance_slots: int, max_instances: int) -> tuple[int, list[str]]:
    """How many instances hold every gang at once: a gang larger than one instance takes whole ones, the others are
    packed first-fit by size. Gangs no `max_instances` instances could hold are left out, each with a note."""
    notes: list[str] = []
    whole = 0
    free: list[int] = []  # the free slots of each instance opened for the small gangs
    for slots in sorted(gang_slots, reverse=True):
        if slots <= 0:
            continue
        if slots > instance_slots:
            need = math.ceil(slots / instance_slots)
            if need > max_instances:
                notes.append(f"a gang of {slots} slots needs {need} instances of {instance_slots} slots; "
                             f"max_instances is {max_instances}, so none are launched for it")
            else:
                whole += need
            continue
        for i, room in enumerate(free):
            if room >= slots:
                free[i] -= slots
                break
        else:
            free.append(instance_slots - slots)
    return whole + len(free), notes


def decide(limits: PoolLimits, gang_slots: Sequence[int], instances: Sequence[TrackedInstance],
           now: float) -> Decision:
    """The pass: `gang_slots` are the slots of each PENDING gang of the pool, `instances` every instance the master
    launched for it that has not ended, `now` the time in epoch seconds."""
    terminate: list[tuple[str, str]] = []
    live = [i for i in instances if i.state.live]
    for inst in live:
        if not inst.registered and now - inst.launched_at > limits.max_starting_s:
            terminate.append((inst.id, f"its agent did not register within max_agent_starting_period "
                                       f"({limits.max_starting_s:g} s)"))
    gone = {i for i, _ in terminate}
    live = [i for i in live if i.id not in gone]
    want, notes = instances_needed(gang_slots, limits.instance_slots, limits.max_instances)
    starting = [i for i in live if not i.registered]
    idle = sorted((i for i in live if i.registered and i.idle_since is not None),
                  key=lambda i: (i.idle_since or 0.0, i.id))
    supply = len(starting) + len(idle)
    launch = min(max(0, want - supply), limits.max_instances - len(live))
    launch = max(launch, limits.min_instances - len(live), 0)
    if want > supply + launch:
        notes.append(f"{want - supply - launch} more instance(s) would be needed; the pool is at max_instances "
                     f"({limits.max_instances})")
    spare = min(max(0, supply - want), len(live) - limits.min_instances)
    for inst in idle:
        if spare <= 0:
            break
        if now - (inst.idle_since or now) > limits.max_idle_s:
            terminate.append((inst.id, f"idle for longer than max_idle_agent_period ({limits.max_idle_s:g} s)"))
            spare -= 1
    return Decision(launch, tuple(terminate), tuple(notes))
