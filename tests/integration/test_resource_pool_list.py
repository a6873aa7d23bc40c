"""`GET /api/v1/resource-pools` and `stalwart resource-pool list` (`rp list`): every pool of the master config, in its
order, with its manager's type, its scheduler, the default-pool flags, its manager's capacity (nodes, accepting
nodes, slots in all, used and free) and its live runs waiting or holding slots.

- agent pools: a master served in a thread (tests/integration/in_thread.py), its agents registered in the master's
  process (as tests/unit/master/test_rm_conformance_agent.py does), runs placed by the scheduling pass; the route
  over HTTP and the CLI (in-process, CliRunner) against it;
- a Slurm pool: the real Slurm of tests/slurm_server.py (partition `rmconf_b`, node cb1 with 4 CPUs);
- a Slurm pool whose tools cannot run (not on PATH): that pool's sizes are null with the reason, the list still
  answers 200, and the CLI shows `?` and the reason."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from in_thread import serving

from helpers_auth import as_admin, as_user
from stalwart.cli.main import cli
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings
from stalwart.testing.rm_conformance import CONFIG

pytestmark = pytest.mark.integration
RP = "/api/v1/resource-pools"
AGENT_POOLS = {
    "resource_manager": {"type": "agent", "default_aux_resource_pool": "cpu"},
    "resource_pools": [{"pool_name": "default", "description": "the GPU boxes"},
                       {"pool_name": "cpu", "scheduler": {"type": "fair_share"}},
                       {"pool_name": "spare"}],
}
SLURM = {"type": "slurm", "slot_type": "cpu", "user_name": "root", "poll_interval": 0}


def _app(home: pathlib.Path, config: dict[str, Any]) -> Any:
    cluster = parse_master_config(config)
    return create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, cluster=cluster,
                                     ui_metrics_index=False, agent_timeout_s=3600))


def _cli(url: str, home: pathlib.Path, *args: str) -> Result:
    """`stalwart -m URL ARGS...` in-process, as the bootstrap admin (empty password on a loopback master)."""
    return CliRunner().invoke(cli, ["-m", url, *args],
                              env={"STALWART_HOME": str(home / "cli"), "DET_USER": "admin", "DET_PASS": ""})


def _ok(result: Result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result.output


def _by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in answer["resourcePools"]}


@pytest.fixture(scope="module")
def agent_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, pathlib.Path]]:
    """Pool `default`: agents a1 (2 slots, holding a 2-slot run) and a2 (2 slots, disabled), one 1-slot run waiting
    (a1 is full, a2 takes no work); pools `cpu` (fair share, the aux default) and `spare`: no agents, no runs."""
    home = tmp_path_factory.mktemp("rp-agents")
    app = _app(home, AGENT_POOLS)
    m = app.state.master
    for n in (1, 2):
        agents.register(m, {"agent_id": f"a{n}", "slots": 2, "resource_pool": "default", "hostname": f"host{n}"},
                        f"10.0.0.{n}", caller=credentials.IN_PROCESS)
    ctx = home / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('never runs: no agent process takes its orders')\n")
    archive = pack_context(ctx).data
    before = TestClient(app)  # no `with`: no background pass yet, so the passes here are the only ones
    as_admin(before)
    assert before.post("/api/v1/agents/a2/disable", json={}).status_code == 200
    for n, slots in ((1, 2), (2, 1)):
        text = CONFIG.format(n=n, slots=slots, priority=42, pool="default")
        experiments.create_experiment(m, text, archive, activate=True, owner="admin")
        scheduling.tick(m)
    before.close()
    with serving(app, "rp-list-master") as url:
        yield url, home


def test_agent_pools_in_config_order_with_their_numbers(agent_master: tuple[str, pathlib.Path]) -> None:
    url, _home = agent_master
    with httpx.Client(base_url=url, timeout=30) as http:
        as_admin(http)
        reply = http.get(RP)
    assert reply.status_code == 200, reply.text
    pools = reply.json()["resourcePools"]
    assert [p["name"] for p in pools] == ["default", "cpu", "spare"]
    default, cpu, spare = pools
    assert default == {"name": "default", "description": "the GPU boxes", "type": "agent",
                       "defaultComputePool": True, "defaultAuxPool": False, "schedulerType": "priority",
                       "numAgents": 2, "acceptingAgents": 1, "slotsAvailable": 4, "slotsUsed": 2, "slotsFree": 2,
                       "pendingRuns": 1, "runningRuns": 1, "error": None}
    assert cpu["schedulerType"] == "fair_share" and cpu["defaultAuxPool"] and not cpu["defaultComputePool"]
    assert {k: spare[k] for k in ("numAgents", "slotsAvailable", "slotsUsed", "slotsFree", "pendingRuns",
                                  "runningRuns")} == dict.fromkeys(("numAgents", "slotsAvailable", "slotsUsed",
                                                                    "slotsFree", "pendingRuns", "runningRuns"), 0)


def test_a_user_without_any_role_lists_the_pools(agent_master: tuple[str, pathlib.Path]) -> None:
    url, _home = agent_master
    with httpx.Client(base_url=url, timeout=30) as http:
        as_admin(http)
        assert http.post("/api/v1/users", json={"username": "plain", "password": "Plain-pass-1",
                                                "active": True}).status_code == 200
        http.headers.pop("authorization")
        assert http.get(RP).status_code == 401  # signed in, or nothing
        as_user(http, "plain", "Plain-pass-1")
        reply = http.get(RP)
    assert reply.status_code == 200, reply.text
    assert _by_name(reply.json())["default"]["slotsUsed"] == 2


def test_cli_lists_the_pools_as_a_table_and_as_json(agent_master: tuple[str, pathlib.Path]) -> None:
    url, home = agent_master
    printed = _ok(_cli(url, home, "rp", "list"))
    for words in ("default", "the GPU boxes", "fair_share", "compute", "aux", "Pending", "Free"):
        assert words in printed, printed
    rows = [line for line in printed.splitlines() if "the GPU boxes" in line]
    assert len(rows) == 1 and [c.strip() for c in rows[0].split("│")[6:13]] == ["2", "1", "4", "2", "2", "1", "1"]
    answer = json.loads(_ok(_cli(url, home, "resource-pool", "ls", "--json")))
    assert [p["name"] for p in answer["resourcePools"]] == ["default", "cpu", "spare"]
    assert _by_name(answer)["default"]["slotsFree"] == 2 and _by_name(answer)["cpu"]["numAgents"] == 0
    csv = _ok(_cli(url, home, "rp", "list", "--csv")).splitlines()
    assert csv[0].startswith("Name,Description,Type,Scheduler,Default,Nodes") and csv[1].startswith("default,")


def test_a_slurm_pool_counts_its_slurm_nodes(slurm_cluster, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    config = {"resource_manager": SLURM, "resource_pools": [{"pool_name": "rmconf_b", "description": "cb1"}]}
    http = TestClient(_app(tmp_path, config))  # no `with`: no background pass polls Slurm meanwhile
    as_admin(http)
    with slurm_cluster.exclusive("rmconf_b"):
        reply = http.get(RP)
    assert reply.status_code == 200, reply.text
    [pool] = reply.json()["resourcePools"]
    assert pool == {"name": "rmconf_b", "description": "cb1", "type": "slurm", "defaultComputePool": True,
                    "defaultAuxPool": True, "schedulerType": "slurm", "numAgents": 1, "acceptingAgents": 1,
                    "slotsAvailable": 4, "slotsUsed": 0, "slotsFree": 4, "pendingRuns": 0, "runningRuns": 0,
                    "error": None}


def test_a_slurm_pool_whose_tools_cannot_run_has_no_sizes_and_says_why(tmp_path, monkeypatch) -> None:
    config = {"resource_manager": SLURM, "resource_pools": [{"pool_name": "gone"}]}
    app = _app(tmp_path, config)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # SlurmCli fails at once: scontrol is not on PATH
    with serving(app, "rp-list-slurm-away") as url:
        http = httpx.Client(base_url=url, timeout=30)
        as_admin(http)
        reply = http.get(RP)
        printed = _ok(_cli(url, tmp_path, "rp", "list"))
        http.close()
    assert reply.status_code == 200, reply.text
    [pool] = reply.json()["resourcePools"]
    assert pool["type"] == "slurm" and pool["name"] == "gone"
    assert [pool[k] for k in ("numAgents", "acceptingAgents", "slotsAvailable", "slotsUsed", "slotsFree")] == [None] * 5
    assert "could not tell this pool's nodes" in pool["error"] and "scontrol" in pool["error"], pool["error"]
    assert "not on PATH" in pool["error"] and "Traceback" not in reply.text
    assert "?" in printed and "Pool gone: the slurm resource manager could not tell" in printed, printed
