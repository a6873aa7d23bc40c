"""The elastic pools' provisioning decision (`rm.elastic.decide`), table-driven: gang-aware demand, the instance
limits, starting and idle timeouts."""

from __future__ import annotations

import pytest

from stalwart.rm.elastic import Decision, InstanceState as S, PoolLimits, TrackedInstance as T, decide
from stalwart.rm.elastic.decide import instances_needed

NOW = 10_000.0
LIMITS = PoolLimits(min_instances=0, max_instances=5, instance_slots=4, max_idle_s=60, max_starting_s=120)


def starting(i: str, age: float = 10) -> T:
    return T(i, S.STARTING, NOW - age)


def busy(i: str) -> T:
    return T(i, S.RUNNING, NOW - 500, registered=True)


def idle(i: str, for_s: float) -> T:
    return T(i, S.RUNNING, NOW - 500, registered=True, idle_since=NOW - for_s)


CASES = {
    "empty pool, nothing pending": (LIMITS, [], [], 0, [], 0),
    "one small gang launches one": (LIMITS, [1], [], 1, [], 0),
    "four 1-slot gangs pack into one 4-slot instance": (LIMITS, [1, 1, 1, 1], [], 1, [], 0),
    "a 16-slot gang asks for four instances at once": (LIMITS, [16], [], 4, [], 0),
    "a 16-slot and a 3-slot gang": (LIMITS, [16, 3], [], 5, [], 0),
    "max_instances caps the launch": (LIMITS, [4] * 8, [], 5, [], 1),
    "a gang no pool could hold is reported, not launched for": (LIMITS, [32], [], 0, [], 1),
    "starting instances count as supply": (LIMITS, [4, 4], [starting("a")], 1, [], 0),
    "idle registered instances count as supply": (LIMITS, [4], [idle("a", 5)], 0, [], 0),
    "min_instances are kept up": (PoolLimits(min_instances=2, instance_slots=4), [], [], 2, [], 0),
    "never registered within the starting period": (LIMITS, [], [starting("a", 121)], 0, ["a"], 0),
    "a timed-out instance is replaced while work waits": (LIMITS, [4], [starting("a", 121)], 1, ["a"], 0),
    "idle past the period is terminated": (LIMITS, [], [idle("a", 61), idle("b", 30)], 0, ["a"], 0),
    "idle but needed by pending work stays": (LIMITS, [4], [idle("a", 61)], 0, [], 0),
    "idle down to min_instances, longest idle first": (
        PoolLimits(min_instances=1, max_instances=5, instance_slots=4, max_idle_s=60),
        [], [idle("a", 100), idle("b", 200), busy("c")], 0, ["b", "a"], 0),
    "busy instances are never terminated": (LIMITS, [], [busy("a"), busy("b")], 0, [], 0),
    "terminated instances are not counted": (LIMITS, [4] * 5, [T("x", S.TERMINATED, NOW - 5)] * 3, 5, [], 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decide(name: str) -> None:
    limits, gangs, instances, launch, terminated, notes = CASES[name]
    got = decide(limits, gangs, instances, NOW)
    assert isinstance(got, Decision)
    assert got.launch == launch
    assert [i for i, _ in got.terminate] == terminated
    assert len(got.notes) == notes


def test_every_termination_says_why() -> None:
    got = decide(LIMITS, [], [starting("a", 500), idle("b", 500)], NOW)
    reasons = dict(got.terminate)
    assert "max_agent_starting_period" in reasons["a"]
    assert "max_idle_agent_period" in reasons["b"]


def test_a_gang_beyond_max_instances_names_the_limit() -> None:
    _, notes = instances_needed([32], 4, 5)
    assert notes == ["a gang of 32 slots needs 8 instances of 4 slots; max_instances is 5, so none are launched "
                     "for it"]


def test_the_pool_never_grows_past_max_instances() -> None:
    for live in range(7):
        instances = [busy(f"i{n}") for n in range(live)]
        got = decide(LIMITS, [4] * 10, instances, NOW)
        assert live + got.launch <= max(LIMITS.max_instances, live)
