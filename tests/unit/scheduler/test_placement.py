"""The pure placement function: order, best fit, gang semantics, zero-slot tasks, pools."""

from stalwart.scheduler import AgentCapacity, PendingAllocation, place


def test_best_fit_picks_the_fullest_agent_that_fits():
    agents = [AgentCapacity("big", [0, 1, 2, 3]), AgentCapacity("small", [0, 1])]
    out = place([PendingAllocation("a", 2, 1.0)], agents)
    assert [(a.allocation_id, a.agent_id, a.slot_ids) for a in out] == [("a", "small", (0, 1))]


def test_gang_never_gets_a_partial_set_and_later_small_ones_backfill():
    agents = [AgentCapacity("x", [0, 1]), AgentCapacity("y", [0])]
    out = place([PendingAllocation("big", 3, 1.0), PendingAllocation("one", 1, 2.0)], agents)
    assert [(a.allocation_id, a.agent_id) for a in out] == [("one", "y")]


def test_priority_then_submission_order():
    agents = [AgentCapacity("x", [0])]
    pending = [PendingAllocation("late", 1, 2.0, priority=10), PendingAllocation("early", 1, 1.0, priority=42)]
    assert [a.allocation_id for a in place(pending, agents)] == ["late"]
    pending = [PendingAllocation("b", 1, 2.0), PendingAllocation("a", 1, 1.0)]
    assert [a.allocation_id for a in place(pending, agents)] == ["a"]


def test_zero_slot_tasks_take_no_slot_and_disabled_or_other_pool_agents_are_skipped():
    agents = [AgentCapacity("off", [0], enabled=False), AgentCapacity("gpu", [0], resource_pool="gpu"),
              AgentCapacity("cpu", [])]
    out = place([PendingAllocation("z", 0, 1.0), PendingAllocation("s", 1, 2.0)], agents)
    assert [(a.allocation_id, a.agent_id, a.slot_ids) for a in out] == [("z", "cpu", ())]
