"""A request's excluded agents (its trial's `exclude_node` log policy matches) are never where it is placed."""

from __future__ import annotations

from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule


def _agents(*ids: str, slots: int = 1) -> list[AgentState]:
    return [AgentState(a, "default", slots, tuple(range(slots))) for a in ids]


def test_an_excluded_agent_is_skipped_for_the_next_one_that_fits():
    plain = schedule([Request("a1", "j", 1)], _agents("agent-0", "agent-1"))
    assert [s.containers for s in plain.starts] == [(("agent-0", (0,)),)]
    excluded = schedule([Request("a1", "j", 1, excluded_agents=frozenset({"agent-0"}))], _agents("agent-0", "agent-1"))
    assert [s.containers for s in excluded.starts] == [(("agent-1", (0,)),)]


def test_a_request_with_every_agent_excluded_waits_and_others_still_start():
    requests = [Request("a1", "j1", 1, submitted_at=1, excluded_agents=frozenset({"agent-0", "agent-1"})),
                Request("a2", "j2", 1, submitted_at=2)]
    decision = schedule(requests, _agents("agent-0", "agent-1"))
    assert [(s.allocation_id, s.containers[0][0]) for s in decision.starts] == [("a2", "agent-0")]
    assert "a1" not in decision.unschedulable


def test_whole_agents_and_fair_share_and_zero_slots_honour_exclusions():
    gang = Request("g", "j", 2, excluded_agents=frozenset({"agent-0"}))
    decision = schedule([gang], _agents("agent-0", "agent-1", "agent-2"))
    assert [c[0] for c in decision.starts[0].containers] == ["agent-1", "agent-2"]
    fair = schedule([Request("f", "j", 1, excluded_agents=frozenset({"agent-0"}))], _agents("agent-0", "agent-1"),
                    default_policy=PoolPolicy(type="fair_share"))
    assert fair.starts[0].containers[0][0] == "agent-1"
    zero = schedule([Request("z", "j", 0, excluded_agents=frozenset({"agent-0"}))], _agents("agent-0", "agent-1"))
    assert zero.starts[0].containers[0][0] == "agent-1"
