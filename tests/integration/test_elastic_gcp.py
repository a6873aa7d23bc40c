"""Elastic GCP pools end to end (issue 31) against the labelled Compute API double (`testing/gce_api_double`, served
by this test on loopback): a real master whose provisioner inserts, lists and deletes instances over the API's REST
calls; `GceWatcher` plays the instances' machines (each RUNNING instance's startup script runs a real `stalwart
agent run` that enrolls with the instance's single-use join credential; a deleted or stopped instance's machine
halts).

- pool `gce`: a 4-trial search on an empty pool launches at most max_instances (2), their agents train every trial,
  and after the work the pool goes back to min_instances (0) past max_idle_agent_period;
- pool `preemptible`: GCE takes a preemptible instance back mid-trial (the double stops it): the run is lost the way
  a lost agent's is, reported as a spot interruption, and resumes from its checkpoint on a new instance."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from integration.elastic_machines import Machines, MachineWatcher, pool_instances, search
from integration.helpers import DIGITS, checkpoints, create, experiment, metrics, wait_state
from stalwart.testing import LocalTestCluster
from stalwart.testing.gce_api_double import GceApiDouble

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
LABEL = "elastic-gcp-test"


class GceWatcher(MachineWatcher):
    """The machines of the double's instances: boots each RUNNING one, halts those deleted or stopped."""

    def __init__(self, double: GceApiDouble, machines: Machines) -> None:
        super().__init__("gce-watcher", machines)
        self.double = double

    def live(self, pool: str) -> list[str]:
        return [i.name for i in self.double.instances()
                if i.body["labels"].get("stalwart-pool") == pool and i.status != "TERMINATED"]

    def poll(self) -> None:
        found = self.double.instances()
        for pool in {i.body["labels"].get("stalwart-pool") for i in found}:
            self.most_live[pool] = max(self.most_live.get(pool, 0), len(self.live(pool)))
        running = {i.name for i in found if i.status == "RUNNING"}
        for inst in found:
            if inst.name in running:
                self.machines.boot(inst.name, inst.startup_script)
        for name in list(self.machines.running):
            if name not in running:
                self.machines.halt(name)


def master_config(endpoint: str, work: str) -> str:
    def provider(**changes: Any) -> dict[str, Any]:
        return {"type": "gcp", "project": "stalwart-test", "zone": "us-central1-a", "endpoint_url": endpoint,
                "boot_disk_source_image": "projects/debian-cloud/global/images/family/debian-12",
                "label_value": LABEL, "agent_command": f"{sys.executable} -m stalwart.cli.main",
                "agent_work_dir": work, "min_instances": 0, "max_instances": 2,
                "max_idle_agent_period": "3s", "max_agent_starting_period": "90s", **changes}

    return yaml.safe_dump({"resource_pools": [
        {"pool_name": "default"},
        {"pool_name": "gce", "provider": provider()},
        {"pool_name": "preemptible", "provider": provider(instance_type={"machine_type": "n1-standard-4",
                                                                         "preemptible": True})},
    ]})


@pytest.fixture(scope="module")
def elastic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalTestCluster, GceWatcher]]:
    root = tmp_path_factory.mktemp("elastic-gcp")
    double = GceApiDouble(boot_s=0.5).start()
    cluster = LocalTestCluster(root / "home", agents=0,
                               master_config=master_config(double.endpoint, str(root / "instances")))
    watcher = GceWatcher(double, Machines(root, {k: v for k, v in cluster.env.items() if k != "STALWART_MASTER"}))
    try:
        with cluster:
            watcher.start()
            try:
                yield cluster, watcher
            finally:
                watcher.stop()
    finally:
        double.stop()


def test_a_search_scales_the_gce_pool_up_trains_and_scales_it_back(elastic: Any) -> None:
    c, watcher = elastic
    exp = create(c, search("gce", trials=4, batches=40), DIGITS)
    done = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=480)
    assert done["experiment"]["state"] == "COMPLETED", done["experiment"].get("error_message")
    assert 1 <= watcher.most_live["gce"] <= 2
    agents = {r["agent_id"] for t in done["trials"] for r in c.client().get(f"/trials/{t['id']}")["runs"]}
    assert len(done["trials"]) == 4 and agents and all(a.startswith("gce-") for a in agents)
    c.wait_for(lambda: not watcher.live("gce"), timeout=120, what="the pool back at min_instances (0)")
    ended = c.wait_for(lambda: (got := pool_instances(c, "gce")) and all(i["state"] == "TERMINATED" for i in got)
                       and got, timeout=60, what="every instance's row ended")
    assert all("max_idle_agent_period" in i["reason"] and i["registeredAt"] is not None for i in ended), ended
    shown = c.cli("resource-pool", "describe", "gce", "--json", check=True).stdout
    described = json.loads(shown)
    assert described["provider"] == "gcp" and described["maxInstances"] == 2
    assert {i["id"] for i in described["instances"]} == {i["id"] for i in ended}
    assert any(t["reason"].startswith("idle") for d in described["decisions"] for t in d["terminated"])
    assert "Pool gce: gcp instances, 0 to 2" in c.cli("rp", "describe", "gce", check=True).stdout
    page = {p["pool"]: p for p in c.client().get("/ui/cluster")["elastic"]}  # the UI's cluster page
    assert {i["id"] for i in page["gce"]["instances"]} == {i["id"] for i in ended}


def test_a_preempted_instance_resumes_its_trial_from_the_checkpoint(elastic: Any) -> None:
    c, watcher = elastic
    exp = create(c, search("preemptible", trials=1, batches=240, batch_sleep=0.02), DIGITS)
    trial = c.wait_for(lambda: experiment(c, exp)["trials"], what="the trial")[0]["id"]
    c.wait_for(lambda: checkpoints(c, trial), timeout=240, what="the trial's first checkpoint")
    run = next(r for r in c.client().get(f"/trials/{trial}")["runs"] if r["state"] == "RUNNING")
    instance = next(i["id"] for i in pool_instances(c, "preemptible") if i["agentId"] == run["agent_id"])
    watcher.machines.vanish(instance, run["id"])
    watcher.double.preempt(instance)
    done = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=400)
    assert done["experiment"]["state"] == "COMPLETED", done["experiment"].get("error_message")
    detail = c.client().get(f"/trials/{trial}")
    assert detail["trial"]["restarts"] == 0
    assert next(r for r in detail["runs"] if r["id"] == run["id"])["exit_reason"] == "AGENT_LOST"
    resumed = [p["steps_completed"] for p in metrics(c, trial, "training") if p["trial_run_id"] > run["run_id"]]
    assert resumed and min(resumed) > 60, resumed  # the first checkpoint is at 60 batches: it went on from there
    gone = next(i for i in pool_instances(c, "preemptible") if i["id"] == instance)
    assert gone["state"] == "TERMINATED" and "spot interruption" in gone["reason"]
