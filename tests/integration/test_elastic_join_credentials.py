"""Who an elastic pool's instance is (issue 31): the single-use join credential the provisioner mints for each
instance, through the master's real routes (`create_app` on SQLite, fastapi's TestClient) and its real provisioning
pass against the labelled Compute API double (`testing/gce_api_double`):
- the startup script carries the instance's join credential and never the cluster token or the master's secret;
- the credential enrolls only its instance's agent id, once; an expired one is refused saying so;
- an instance's agent that enrolled registers in its pool with its own credential;
- a gang larger than one instance gets all its instances in one pass."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin, bearer
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.provisioning import provisioner
from stalwart.master.queries import instances as instance_rows
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master, now
from stalwart.master.settings import MasterSettings
from stalwart.testing.gce_api_double import GceApiDouble

pytestmark = pytest.mark.integration
_CREDENTIAL = re.compile(r"printf '%s' '?([^' ]+)'? >")
_AGENT = re.compile(r"--agent-id (\S+)")


GANG = """
name: gang
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
resources: {slots_per_trial: 6, resource_pool: cloud}
"""


@pytest.fixture
def world(tmp_path: Any, request: pytest.FixtureRequest) -> Iterator[tuple[Master, TestClient, GceApiDouble]]:
    double = GceApiDouble(boot_s=0).start()
    provider = {"type": "gcp", "project": "p", "zone": "z", "boot_disk_source_image": "img",
                "endpoint_url": double.endpoint, "min_instances": 2, "max_instances": 2,
                "max_agent_starting_period": "10m", **getattr(request, "param", {})}
    cluster = parse_master_config({"resource_pools": [{"pool_name": "default"},
                                                      {"pool_name": "cloud", "provider": provider}]})
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cluster,
                                    ui_metrics_index=False, agent_timeout_s=3600))
    http = TestClient(app, client=("10.1.2.3", 50000), raise_server_exceptions=False)  # not loopback
    yield app.state.master, http, double
    http.close()
    app.state.master.db.dispose()
    double.stop()


def _join_of(startup_script: str) -> tuple[str, str]:
    """The agent id and join credential a startup script carries."""
    agent, credential = _AGENT.search(startup_script), _CREDENTIAL.search(startup_script)
    assert agent is not None and credential is not None, startup_script
    return agent[1], credential[1]


def _enroll(http: TestClient, agent_id: str, credential: str) -> Any:
    return http.post("/api/v1/agents", json={"agent_id": agent_id, "slots": 1, "resource_pool": "cloud",
                                            "incarnation": f"inc-{agent_id}"}, headers=bearer(credential))


def test_an_instances_join_credential_is_single_use_for_its_own_agent(world: Any) -> None:
    m, http, double = world
    provisioner.provision(m)  # min_instances 2: two instances launched
    scripts = [i.startup_script for i in double.instances()]
    assert len(scripts) == 2
    joins = [_join_of(s) for s in scripts]
    for script in scripts:
        assert m.cluster_token not in script and m.secret not in script
        assert "agent run" in script and "--token-file" in script
    (first_agent, first_join), (second_agent, second_join) = joins
    assert first_join != second_join
    other = _enroll(http, second_agent, first_join)
    assert other.status_code == 403 and f"enrolls only agent {first_agent}" in other.text, other.text
    enrolled = _enroll(http, first_agent, first_join)
    assert enrolled.status_code == 200, enrolled.text
    own = enrolled.json()["credential"]
    assert own and own != first_join
    again = _enroll(http, first_agent, first_join)
    assert again.status_code == 403, again.text
    heard = _enroll(http, first_agent, own)
    assert heard.status_code == 200 and heard.json()["credential"] is None


def test_an_expired_join_credential_is_refused_saying_so(world: Any) -> None:
    m, http, double = world
    provisioner.provision(m)
    agent_id, join = _join_of(double.instances()[0].startup_script)
    with m.db.begin() as conn:
        row = instance_rows.by_agent(conn, agent_id)
        assert row is not None
        instance_rows.update(conn, row["id"], {"join_expires_at": now() - 1})
    refused = _enroll(http, agent_id, join)
    assert refused.status_code == 403 and "expired" in refused.text, refused.text


@pytest.mark.parametrize("world", [{"min_instances": 0, "max_instances": 4, "instance_slots": 2}], indirect=True)
def test_a_gang_gets_all_its_instances_in_one_pass(world: Any, tmp_path: Any) -> None:
    m, http, double = world
    as_admin(http)
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('never runs: no agent takes its orders')\n")
    created = http.post("/api/v1/experiments", json={
        "config": GANG, "context": base64.b64encode(pack_context(ctx).data).decode()})
    assert created.status_code == 200, created.text
    scheduling.tick(m)  # the 6-slot run is PENDING: no agent in the pool
    provisioner.provision(m)
    assert len(double.instances()) == 3  # 6 slots / 2 per instance, asked for together
    described = http.get("/api/v1/resource-pools/cloud/instances").json()
    assert [len(d["launched"]) for d in described["decisions"]] == [3]
    assert {i["state"] for i in described["instances"]} == {"STARTING"}
