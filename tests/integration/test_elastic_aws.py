"""Elastic AWS pools end to end (issue 31) on moto's EC2 server (this run's moto, `storage_servers`): a real master
whose provisioner launches instances through boto3; `InstanceWatcher` plays the instances' machines: for each
instance of the pools it watches that moto shows running it runs the instance's user-data (a real `stalwart agent
run` that enrolls with the instance's single-use join credential), and stops it when the instance is terminated.

- pool `cloud`: a 4-trial search on an empty pool launches at most max_instances (2) instances whose agents train
  every trial; after the work the pool goes back to min_instances (0) once the agents are idle for
  max_idle_agent_period;
- pool `stuck`: the watcher starts nothing, so the instance's agent never registers: the provisioner terminates it
  after max_agent_starting_period and says why;
- pool `spot`: the cloud takes a spot instance back in the middle of a trial (moto cannot mark a spot
  interruption, so the watcher kills the machine's processes and terminates the instance, as EC2 would): the trial's
  run is lost the way a lost agent's is and resumes from its checkpoint on a new instance, uncounted."""

from __future__ import annotations

import base64
import pathlib
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
import yaml

from integration.elastic_machines import Machines, MachineWatcher, pool_instances, search
from integration.helpers import DIGITS, checkpoints, create, experiment, metrics, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
TAG = f"elastic-aws-{uuid.uuid4().hex[:8]}"  # this module's instances (moto is shared by the whole run's workers)
WATCHED = ("cloud", "spot")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "stalwart-test-key", "AWS_SECRET_ACCESS_KEY": "stalwart-test-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


class InstanceWatcher(MachineWatcher):
    """The machines of the instances moto runs for `TAG`: boots each running instance's user-data (pools in
    `WATCHED` only) and halts it once the instance is shutting down or terminated."""

    def __init__(self, endpoint: str, root: pathlib.Path, env: dict[str, str]) -> None:
        super().__init__("instance-watcher", Machines(root, env))
        self.ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1",
                                aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        self.seen: dict[str, str] = {}  # instance id -> its pool

    def instances(self) -> list[dict[str, Any]]:
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:managed-by", "Values": [TAG]}])
        return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]

    def live(self, pool: str) -> list[str]:
        return [i["InstanceId"] for i in self.instances() if self._pool(i) == pool
                and i["State"]["Name"] in ("pending", "running")]

    @staticmethod
    def _pool(raw: dict[str, Any]) -> str:
        return next(t["Value"] for t in raw["Tags"] if t["Key"] == "stalwart-pool")

    def poll(self) -> None:
        found = self.instances()
        for pool in {self._pool(i) for i in found}:
            live = sum(1 for i in found if self._pool(i) == pool and i["State"]["Name"] in ("pending", "running"))
            self.most_live[pool] = max(self.most_live.get(pool, 0), live)
        for raw in found:
            instance_id, state, pool = raw["InstanceId"], raw["State"]["Name"], self._pool(raw)
            self.seen[instance_id] = pool
            if state == "running" and pool in WATCHED and instance_id not in self.machines.running:
                got = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
                self.machines.boot(instance_id, base64.b64decode(got["UserData"]["Value"]).decode())
            elif state != "running":
                self.machines.halt(instance_id)

    def vanish(self, instance_id: str, allocation_id: str) -> None:
        """EC2 takes the instance back: its machine is gone at once, and the instance ends."""
        self.machines.vanish(instance_id, allocation_id)
        self.ec2.terminate_instances(InstanceIds=[instance_id])


def master_config(endpoint: str, root: pathlib.Path) -> str:
    def provider(**changes: Any) -> dict[str, Any]:
        return {"type": "aws", "image_id": "ami-12c6146b", "instance_type": "t2.micro", "endpoint_url": endpoint,
                "tag_value": TAG, "agent_command": f"{sys.executable} -m stalwart.cli.main",
                "agent_work_dir": str(root / "instances"), "min_instances": 0, "max_instances": 2,
                "max_idle_agent_period": "3s", "max_agent_starting_period": "90s", **changes}

    return yaml.safe_dump({"resource_pools": [
        {"pool_name": "default"},
        {"pool_name": "cloud", "provider": provider()},
        {"pool_name": "stuck", "provider": provider(max_instances=1, max_agent_starting_period="4s")},
        {"pool_name": "spot", "provider": provider(spot=True, spot_max_price="0.05")},
    ]})


@pytest.fixture(scope="module")
def elastic(storage_emulator: Callable[[str], Any],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalTestCluster, InstanceWatcher]]:
    endpoint = storage_emulator("s3").endpoint
    root = tmp_path_factory.mktemp("elastic-aws")
    cluster = LocalTestCluster(root / "home", agents=0, master_config=master_config(endpoint, root))
    cluster.env.update(CREDENTIALS)
    watcher = InstanceWatcher(endpoint, root, {k: v for k, v in cluster.env.items() if k != "STALWART_MASTER"})
    with cluster:
        watcher.start()
        try:
            yield cluster, watcher
        finally:
            watcher.stop()


def test_a_search_scales_the_pool_up_trains_and_scales_it_back(elastic: Any) -> None:
    c, watcher = elastic
    assert watcher.live("cloud") == []
    exp = create(c, search("cloud", trials=4, batches=40), DIGITS)
    done = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=480)
    assert done["experiment"]["state"] == "COMPLETED", done["experiment"].get("error_message")
    assert 1 <= watcher.most_live["cloud"] <= 2
    agents = {r["agent_id"] for t in done["trials"] for r in c.client().get(f"/trials/{t['id']}")["runs"]}
    assert len(done["trials"]) == 4 and agents and all(a.startswith("cloud-") for a in agents)
    c.wait_for(lambda: not watcher.live("cloud"), timeout=120, what="the pool back at min_instances (0)")
    ended = pool_instances(c, "cloud")
    assert ended and all(i["state"] in ("TERMINATING", "TERMINATED") for i in ended)
    assert all("max_idle_agent_period" in (i["reason"] or "") for i in ended), ended
    assert all(i["registeredAt"] is not None for i in ended), ended


def test_an_instance_whose_agent_never_registers_is_terminated(elastic: Any) -> None:
    c, watcher = elastic
    exp = create(c, search("stuck", trials=1, batches=10), DIGITS)
    terminated = c.wait_for(lambda: [i for i in pool_instances(c, "stuck") if i["state"] == "TERMINATED"],
                            timeout=120, what="the stuck instance terminated")
    assert "max_agent_starting_period" in terminated[0]["reason"]
    assert terminated[0]["registeredAt"] is None
    assert terminated[0]["id"] in watcher.seen and terminated[0]["id"] not in watcher.live("stuck")
    decisions = c.client().get("/resource-pools/stuck/instances")["decisions"]
    assert any(t["instance"] == terminated[0]["id"] for d in decisions for t in d["terminated"])
    c.cli("experiment", "kill", str(exp), check=True)


def test_a_spot_interruption_resumes_the_trial_from_its_checkpoint(elastic: Any) -> None:
    c, watcher = elastic
    exp = create(c, search("spot", trials=1, batches=240, batch_sleep=0.02), DIGITS)
    trial = c.wait_for(lambda: experiment(c, exp)["trials"], what="the trial")[0]["id"]
    c.wait_for(lambda: checkpoints(c, trial), timeout=240, what="the trial's first checkpoint")
    run = next(r for r in c.client().get(f"/trials/{trial}")["runs"] if r["state"] == "RUNNING")
    instance = next(i["id"] for i in pool_instances(c, "spot") if i["agentId"] == run["agent_id"])
    watcher.vanish(instance, run["id"])
    done = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=400)
    assert done["experiment"]["state"] == "COMPLETED", done["experiment"].get("error_message")
    detail = c.client().get(f"/trials/{trial}")
    assert detail["trial"]["restarts"] == 0
    lost = next(r for r in detail["runs"] if r["id"] == run["id"])
    assert lost["exit_reason"] == "AGENT_LOST"
    resumed = [p["steps_completed"] for p in metrics(c, trial, "training") if p["trial_run_id"] > run["run_id"]]
    assert resumed and min(resumed) > 60, resumed  # the first checkpoint is at 60 batches: it went on from there
    assert any(r["agent_id"] != run["agent_id"] and r["state"] == "TERMINATED" and r["exit_reason"] != "AGENT_LOST"
               for r in detail["runs"])
    gone = next(i for i in pool_instances(c, "spot") if i["id"] == instance)
    assert gone["state"] == "TERMINATED" and "outside the provisioner" in gone["reason"]
