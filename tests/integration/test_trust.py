"""Trust boundaries: agents need their own credential (the cluster token only enrolls); a trial's token only reaches
its own trial."""

from __future__ import annotations

import pytest

from integration.helpers import create, digits_config, first_trial, live_run, metrics, wait_state
from stalwart.api.errors import AuthError, ForbiddenError
from stalwart.client import Client

pytestmark = pytest.mark.integration


def test_tokens_bind_reports_to_their_own_trial(cluster):
    c = cluster
    slow = {"hyperparameters__batch_sleep": 0.05}
    exp_a = create(c, digits_config(**slow))
    trial_a = first_trial(c, exp_a)
    run_a = c.wait_for(lambda: live_run(c, trial_a), what="trial A running")
    # The allocation token of trial A, as the agent handed it to the trial process.
    env = _trial_env(run_a["id"])
    a_token = env["STALWART_ALLOCATION_TOKEN"]

    exp_b = create(c, digits_config(**slow), activate=False)
    wait_state(c, exp_b, "PAUSED")
    trial_b = c.client().get(f"/experiments/{exp_b}")["trials"][0]["id"]

    as_a = Client(c.url, allocation_token=a_token)
    report = {"reports": [{"group": "training", "steps_completed": 5, "metrics": {"loss": 1.0}}]}
    with pytest.raises(ForbiddenError, match=f"does not belong to trial {trial_b}"):
        as_a.post(f"/trials/{trial_b}/metrics", report)
    with pytest.raises(ForbiddenError):
        as_a.post("/checkpoints", {"uuid": "6f1c7a4e-59a3-4b8e-9d0c-3f6f2a1d7e10", "trial_id": trial_b,
                                   "resources": {}, "metadata": {"steps_completed": 1}})
    forged = Client(c.url, allocation_token=run_a["id"] + ".deadbeef")
    with pytest.raises(ForbiddenError, match="invalid allocation token"):
        forged.post(f"/trials/{trial_a}/metrics", report)
    with pytest.raises(AuthError):
        Client(c.url).post(f"/trials/{trial_a}/metrics", report)
    assert metrics(c, trial_b, "training") == []

    # agent-only calls
    with pytest.raises(AuthError):
        Client(c.url).post("/agents", {"agent_id": "rogue", "slots": 8})
    with pytest.raises(ForbiddenError, match="unknown agent credential"):
        Client(c.url, cluster_token="not-the-token").post("/agents", {"agent_id": "rogue", "slots": 8})
    with pytest.raises(ForbiddenError):
        Client(c.url, cluster_token=a_token).get(f"/allocations/{run_a['id']}/context")
    assert [a["id"] for a in c.client().get("/agents")["agents"]] == ["agent-0"]
    c.cli("e", "kill", str(exp_a), check=True)
    wait_state(c, exp_a, "CANCELED")


def _trial_env(allocation_id: str) -> dict:
    import os
    import pathlib

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = pathlib.Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if f"STALWART_ALLOCATION_ID={allocation_id}".encode() in raw:
            pairs = [p.split(b"=", 1) for p in raw.split(b"\0") if b"=" in p]
            return {k.decode(): v.decode() for k, v in pairs}
    raise AssertionError(f"no process of allocation {allocation_id}")
