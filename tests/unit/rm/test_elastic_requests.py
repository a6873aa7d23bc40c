"""What the clouds are asked for (`rm.elastic.aws.launch_request`, `rm.elastic.gcp.insert_body`) from a pool's checked
`provider` keys, and how their answers are read (`instance_of`: states, spot interruptions)."""

from __future__ import annotations

import datetime
from typing import Any

from stalwart.config.master import parse_master_config
from stalwart.rm.elastic import InstanceState
from stalwart.rm.elastic.aws import SPOT_REASON, instance_of as ec2_instance, launch_request
from stalwart.rm.elastic.gcp import insert_body, instance_of as gce_instance


def settings(provider: dict[str, Any]) -> dict[str, Any]:
    pool = parse_master_config({"resource_pools": [{"pool_name": "p", "provider": provider}]}).pool("p")
    assert pool is not None and pool.provider is not None
    return pool.provider.settings


def test_an_ec2_launch_carries_the_pools_keys() -> None:
    got = launch_request(settings({
        "type": "aws", "image_id": "ami-1", "instance_type": "p3.2xlarge", "root_volume_size": 50, "spot": True,
        "spot_max_price": "0.9", "tag_key": "team", "network_interface": {"subnet_id": "subnet-1",
                                                                           "security_group_id": "sg-1"},
        "custom_tags": [{"key": "cost", "value": "ml"}]}), "gpu", "cluster-1", "#!/bin/sh\n")
    assert (got["ImageId"], got["InstanceType"], got["MinCount"], got["MaxCount"]) == ("ami-1", "p3.2xlarge", 1, 1)
    assert got["UserData"] == "#!/bin/sh\n"
    tags = {t["Key"]: t["Value"] for t in got["TagSpecifications"][0]["Tags"]}
    assert tags == {"team": "cluster-1", "stalwart-pool": "gpu", "Name": "stalwart-agent", "cost": "ml"}
    assert got["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 50
    assert got["NetworkInterfaces"] == [{"DeviceIndex": 0, "AssociatePublicIpAddress": True,
                                         "DeleteOnTermination": True, "SubnetId": "subnet-1", "Groups": ["sg-1"]}]
    assert got["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "0.9"


def test_an_on_demand_launch_asks_for_no_market() -> None:
    got = launch_request(settings({"type": "aws", "image_id": "ami-1"}), "p", "c", "")
    assert "InstanceMarketOptions" not in got and "NetworkInterfaces" not in got


def test_ec2_states_and_a_spot_interruption() -> None:
    at = datetime.datetime(2026, 11, 26, tzinfo=datetime.UTC)
    taken = ec2_instance({"InstanceId": "i-1", "State": {"Name": "terminated"}, "LaunchTime": at,
                          "StateReason": {"Code": SPOT_REASON}})
    assert taken.state == InstanceState.TERMINATED and taken.spot_interrupted
    assert taken.launched_at == at.timestamp()
    mine = ec2_instance({"InstanceId": "i-2", "State": {"Name": "shutting-down"}, "LaunchTime": at,
                         "StateReason": {"Code": "Client.UserInitiatedShutdown"}})
    assert mine.state == InstanceState.TERMINATING and not mine.spot_interrupted
    assert ec2_instance({"InstanceId": "i-3", "State": {"Name": "pending"}}).state == InstanceState.STARTING


def test_a_gce_insert_carries_the_pools_keys() -> None:
    got = insert_body(settings({
        "type": "gcp", "project": "pr", "zone": "us-central1-a", "boot_disk_source_image": "img",
        "boot_disk_size": 100, "label_key": "owner", "network_tags": ["ml"],
        "network_interface": {"subnetwork": "regions/us-central1/subnetworks/a", "external_ip": True},
        "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4", "gpu_num": 2,
                          "preemptible": True}}), "stalwart-1", "GPU_Pool", "Cluster.One", "#!/bin/sh\n")
    assert got["machineType"] == "zones/us-central1-a/machineTypes/n1-standard-8"
    assert got["labels"] == {"owner": "cluster-one", "stalwart-pool": "gpu_pool"}
    assert got["metadata"]["items"] == [{"key": "startup-script", "value": "#!/bin/sh\n"}]
    assert got["guestAccelerators"][0]["acceleratorCount"] == 2
    assert got["scheduling"]["preemptible"] and got["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert got["disks"][0]["initializeParams"] == {"sourceImage": "img", "diskSizeGb": "100"}
    assert got["networkInterfaces"][0]["accessConfigs"][0]["type"] == "ONE_TO_ONE_NAT"


def test_gce_states_and_a_preemption() -> None:
    stopped = gce_instance({"name": "a", "status": "TERMINATED", "scheduling": {"preemptible": True},
                            "creationTimestamp": "2026-11-26T10:00:00+00:00"})
    assert stopped.state == InstanceState.TERMINATED and stopped.spot_interrupted and stopped.launched_at > 0
    staging = gce_instance({"name": "b", "status": "STAGING", "networkInterfaces": [{"networkIP": "10.0.0.2"}]})
    assert staging.state == InstanceState.STARTING and staging.address == "10.0.0.2"
    assert not gce_instance({"name": "c", "status": "TERMINATED"}).spot_interrupted
