"""The cluster scheduling pass: the seed's fair-share and priority-with-preemption examples, fits, gangs."""

from __future__ import annotations

import pytest

from sched_sim import Sim
from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule

PREEMPTIVE = PoolPolicy(type="priority", preemption=True)
FAIR = PoolPolicy(type="fair_share")


@pytest.mark.parametrize("agents", [{"a": 8}, {f"a{i}": 1 for i in range(8)}])
def test_fair_share_example_demands_10_and_30_get_2_and_6(agents):
    """Seed example: 8 slots, two experiments demanding 10 and 30 single-slot trials. Shares are in
    proportion to weight × demand, so 8·10/40 = 2 and 8·30/40 = 6."""
    sim = Sim(agents, FAIR)
    sim.submit("exp1", 1, 10, queue_position=1)
    sim.submit("exp2", 1, 30, queue_position=2)
    sim.step()
    assert (sim.slots_of("exp1"), sim.slots_of("exp2")) == (2, 6)


def test_fair_share_example_with_weights_3_and_1_gets_4_and_4():
    """Same, weights 3 and 1: weighted demands 3·10 = 30 and 1·30 = 30 are equal, so 4 slots each."""
    sim = Sim({"a": 8}, FAIR)
    sim.submit("exp1", 1, 10, weight=3, queue_position=1)
    sim.submit("exp2", 1, 30, weight=1, queue_position=2)
    sim.step()
    assert (sim.slots_of("exp1"), sim.slots_of("exp2")) == (4, 4)


def test_fair_share_preempts_a_job_above_its_share_when_another_arrives_and_honours_max_slots():
    sim = Sim({"a": 8}, FAIR)
    sim.submit("big", 1, 30, queue_position=1)
    sim.step()
    assert sim.slots_of("big") == 8
    sim.submit("small", 1, 10, queue_position=2)
    _, preempted = sim.step()
    assert len(preempted) == 2 and all(a.startswith("big") for a in preempted)  # 8 → its share of 6
    for aid in preempted:
        sim.exit(aid, requeue=True)
    sim.step()
    assert (sim.slots_of("big"), sim.slots_of("small")) == (6, 2)

    capped = Sim({"a": 8}, FAIR)
    capped.submit("x", 1, 10, max_slots=3, queue_position=1)
    capped.submit("y", 1, 2, queue_position=2)
    capped.step()
    assert (capped.slots_of("x"), capped.slots_of("y")) == (3, 2)  # x capped at 3, y wants only 2


@pytest.mark.parametrize("agents", [{"a": 8}, {"a": 4, "b": 4}], ids=["one-8-slot-agent", "two-4-slot-agents"])
def test_seed_priority_scenario_with_preemption_step_by_step(agents):
    """The seed's seven steps (Determined's scheduling docs, "An example of priority scheduler behavior
    with preemption enabled"), on 8 slots, with the outcome each step states."""
    sim = Sim(agents, PREEMPTIVE)
    # 1. A priority-2 adaptive_asha experiment, 20 concurrent single-slot trials: 8 run, using all 8 slots.
    asha = sim.submit("asha", 1, 20, priority=2, queue_position=1)
    sim.step()
    assert sim.slots_of("asha") == 8

    # 2. A priority-1 distributed experiment (4 slots per trial): 4 ASHA trials are preempted so it can run.
    [dist4] = sim.submit("dist4", 4, priority=1, queue_position=2)
    started, preempted = sim.step()
    assert started == [] and len(preempted) == 4 and set(preempted) <= set(asha)
    assert sim.step() == ([], [])  # told once; nothing backfills into the room being made
    for aid in preempted:
        sim.exit(aid, requeue=True)  # they checkpoint, exit, and go back to the queue
    started, _ = sim.step()
    assert started == [dist4] and sim.slots_of("asha") == 4

    # 3. A priority-3 notebook (1 slot, not preemptible) waits: it has the lowest priority. A slot an
    #    ASHA trial gives up goes to the ASHA experiment, which still wants more.
    [notebook] = sim.submit("notebook", 1, priority=3, preemptible=False, queue_position=3)
    assert sim.step() == ([], [])
    sim.exit(sim.running("asha")[0])
    started, _ = sim.step()
    assert notebook not in started and sim.slots_of("asha") == 4

    # 4. ASHA and the distributed experiment complete: the notebook runs.
    sim.finish_job("asha")
    sim.finish_job("dist4")
    started, _ = sim.step()
    assert started == [notebook]

    # 5. A priority-1 experiment needing 8 slots cannot start: only 7 are free and notebooks are not
    #    preemptible.
    [dist8] = sim.submit("dist8", 8, priority=1, queue_position=4)
    assert sim.step() == ([], [])

    # 6. A priority-2 experiment with 4 slots per trial is backfilled onto the idle slots.
    [dist4b] = sim.submit("dist4b", 4, priority=2, queue_position=5)
    started, preempted = sim.step()
    assert started == [dist4b] and dist4b in sim.backfilled and preempted == []
    assert sim.step() == ([], [])  # preempting it would not free 8 slots, so it is left alone

    # 7. The notebook is killed; the priority-2 experiment is preempted; the priority-1 one starts,
    #    and once it completes the priority-2 one runs again.
    sim.exit(notebook)
    started, preempted = sim.step()
    assert started == [] and preempted == [dist4b]
    again = sim.exit(dist4b, requeue=True)
    started, _ = sim.step()
    assert started == [dist8] and sim.running() == [dist8]
    sim.finish_job("dist8")
    started, _ = sim.step()
    assert started == [again]


def test_without_preemption_a_blocked_task_holds_back_unpreemptible_work_but_not_trials():
    sim = Sim({"a": 4})
    sim.submit("running", 2, priority=50, queue_position=1)
    sim.step()
    [big] = sim.submit("big", 4, priority=10, queue_position=2)
    [cmd] = sim.submit("cmd", 1, priority=60, preemptible=False, queue_position=3)
    [trial] = sim.submit("trial", 1, priority=60, queue_position=4)
    started, preempted = sim.step()
    assert started == [trial] and trial in sim.backfilled and preempted == []
    assert big not in started and cmd not in started


def test_equal_priorities_go_by_queue_position_then_submission():
    sim = Sim({"a": 1})
    sim.submit("submitted_first", 1, queue_position=2)
    [moved_ahead] = sim.submit("moved_ahead", 1, queue_position=1)
    assert sim.step()[0] == [moved_ahead]
    same_job = Sim({"a": 1})
    [first, _second] = same_job.submit("j", 1, 2, queue_position=1)
    assert same_job.step()[0] == [first]
    urgent = Sim({"a": 1})
    urgent.submit("early", 1, queue_position=1)
    [late_but_urgent] = urgent.submit("late", 1, priority=10, queue_position=2)
    assert urgent.step()[0] == [late_but_urgent]


def test_best_fit_takes_the_fullest_agent_worst_fit_the_emptiest():
    agents = [AgentState("big", "default", 8, tuple(range(8))), AgentState("small", "default", 4, (2, 3))]
    req = [Request("r", "j", 2)]
    assert schedule(req, agents).starts[0].containers == (("small", (2, 3)),)
    worst = schedule(req, agents, default_policy=PoolPolicy(fitting_policy="worst")).starts[0]
    assert worst.containers == (("big", (0, 1)),)


def test_gang_spans_whole_idle_agents_only_and_never_takes_a_partial_set():
    agents = [AgentState(f"a{i}", "default", 2, (0, 1)) for i in range(3)] + [AgentState("a3", "default", 2, (1,))]
    d = schedule([Request("six", "j", 6, submitted_at=1), Request("four", "k", 4, submitted_at=2)], agents)
    assert [(s.allocation_id, s.containers) for s in d.starts] == [
        ("six", (("a0", (0, 1)), ("a1", (0, 1)), ("a2", (0, 1))))]
    assert d.unschedulable == {}


def test_a_request_no_pool_could_ever_hold_is_reported_with_a_reason():
    agents = [AgentState("a0", "default", 4, (0, 1, 2, 3)), AgentState("g0", "gpu", 1, (0,))]
    d = schedule([Request("huge", "j", 8), Request("odd", "k", 3, resource_pool="gpu"),
                  Request("nowhere", "l", 1, resource_pool="nope"), Request("ok", "m", 4)], agents)
    assert [s.allocation_id for s in d.starts] == ["ok"]
    assert "needs 8 slots" in d.unschedulable["huge"] and "4 slot(s) on 1 agent(s)" in d.unschedulable["huge"]
    assert "resource pool 'gpu'" in d.unschedulable["odd"]
    assert "has no agents" in d.unschedulable["nowhere"]


def test_zero_slot_tasks_are_scheduled_apart_even_on_a_full_pool():
    agents = [AgentState("a0", "default", 1, ()), AgentState("a1", "default", 1, (0,)),
              AgentState("off", "default", 1, (0,), accepting=False)]
    d = schedule([Request("z1", "j", 0), Request("z2", "k", 0), Request("s", "l", 1)], agents)
    placed = {s.allocation_id: s.containers for s in d.starts}
    assert placed["z1"] == (("a1", ()),) and placed["z2"] == (("a0", ()),) and placed["s"] == (("a1", (0,)),)


def test_preemption_only_frees_what_it_needs_and_never_higher_priority_work():
    sim = Sim({"a": 2, "b": 2}, PREEMPTIVE)
    [hi] = sim.submit("hi", 2, priority=5, queue_position=1)
    [lo] = sim.submit("lo", 2, priority=60, queue_position=2)
    sim.step()
    [mid] = sim.submit("mid", 2, priority=30, queue_position=3)
    started, preempted = sim.step()
    assert started == [] and preempted == [lo]
    [top] = sim.submit("top", 4, priority=1, queue_position=4)
    started, preempted = sim.step()
    assert preempted == [hi] and hi in sim.preempting()  # lo is already leaving; hi makes the rest
    assert top and mid
