"""The `aws` provider: EC2 instances through boto3 (`run_instances`, `describe_instances` filtered by this pool's
tags, `terminate_instances`).

Each instance carries the pool's `tag_key`/`tag_value` and `stalwart-pool: <pool>`, so that `list` finds exactly
this master's instances of this pool. A spot instance EC2 reclaims ends with the state reason
`Server.SpotInstanceTermination`; `list` reports it as `spot_interrupted`. `endpoint_url` points boto3 at an
emulator (moto's server in the tests) or a private cloud; credentials are boto3's usual chain (never ours)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from stalwart.rm.elastic.provider import Instance, InstanceState, Provider, ProviderError, UserDataFor

POOL_TAG = "stalwart-pool"
SPOT_REASON = "Server.SpotInstanceTermination"
_STATES = {"pending": InstanceState.STARTING, "running": InstanceState.RUNNING,
           "shutting-down": InstanceState.TERMINATING, "stopping": InstanceState.TERMINATING,
           "stopped": InstanceState.TERMINATED, "terminated": InstanceState.TERMINATED}


def _library(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ProviderError(f"provider.type: aws needs the '{module.split('.')[0]}' package: "
                            "pip install 'stalwart[cloud]'") from err


def launch_request(settings: dict[str, Any], pool: str, tag_value: str, user_data: str) -> dict[str, Any]:
    """The `run_instances` arguments of one instance from the pool's checked `provider` keys."""
    tags = [{"Key": settings["tag_key"], "Value": settings.get("tag_value") or tag_value},
            {"Key": POOL_TAG, "Value": pool}, {"Key": "Name", "Value": settings["instance_name"]},
            *({"Key": t["key"], "Value": t["value"]} for t in settings.get("custom_tags") or ())]
    request: dict[str, Any] = {
        "ImageId": settings["image_id"], "InstanceType": settings["instance_type"], "MinCount": 1, "MaxCount": 1,
        "UserData": user_data,
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
        "BlockDeviceMappings": [{"DeviceName": "/dev/sda1",
                                 "Ebs": {"VolumeSize": settings["root_volume_size"], "DeleteOnTermination": True}}],
    }
    nic = settings.get("network_interface")
    if nic:
        interface: dict[str, Any] = {"DeviceIndex": 0, "AssociatePublicIpAddress": nic["public_ip"],
                                     "DeleteOnTermination": True}
        if nic.get("subnet_id"):
            interface["SubnetId"] = nic["subnet_id"]
        if nic.get("security_group_id"):
            interface["Groups"] = [nic["security_group_id"]]
        request["NetworkInterfaces"] = [interface]
    if settings.get("ssh_key_name"):
        request["KeyName"] = settings["ssh_key_name"]
    if settings.get("iam_instance_profile_arn"):
        request["IamInstanceProfile"] = {"Arn": settings["iam_instance_profile_arn"]}
    if settings.get("spot"):
        spot: dict[str, Any] = {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}
        if settings.get("spot_max_price"):
            spot["MaxPrice"] = settings["spot_max_price"]
        request["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
    return request


def instance_of(raw: dict[str, Any]) -> Instance:
    """One `describe_instances` instance as the provider interface's value."""
    reason = (raw.get("StateReason") or {}).get("Code") or ""
    launched = raw.get("LaunchTime")
    return Instance(raw["InstanceId"], _STATES.get(raw["State"]["Name"], InstanceState.TERMINATED),
                    launched.timestamp() if launched is not None else 0.0,
                    spot_interrupted=reason == SPOT_REASON, address=raw.get("PrivateIpAddress"))


class AwsProvider(Provider):
    """EC2 for one pool: `settings` are its checked `provider` keys, `tag_value` the default of `tag_value` (the
    master's cluster id)."""

    type = "aws"

    def __init__(self, settings: dict[str, Any], pool: str, tag_value: str) -> None:
        self.settings, self.pool = settings, pool
        self.tag_value = settings.get("tag_value") or tag_value
        self.errors = _library("botocore.exceptions")
        self.ec2 = _library("boto3").client("ec2", region_name=settings["region"],
                                            endpoint_url=settings.get("endpoint_url"))

    def launch(self, count: int, user_data_for: UserDataFor) -> list[Instance]:
        out: list[Instance] = []
        for i in range(count):
            request = launch_request(self.settings, self.pool, self.tag_value, user_data_for(i))
            reply = self._call("run_instances", **request)
            out.extend(instance_of(raw) for raw in reply["Instances"])
        return out

    def list(self) -> list[Instance]:
        filters = [{"Name": f"tag:{self.settings['tag_key']}", "Values": [self.tag_value]},
                   {"Name": f"tag:{POOL_TAG}", "Values": [self.pool]}]
        out: list[Instance] = []
        for page in self.ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                out.extend(instance_of(raw) for raw in reservation["Instances"])
        return out

    def terminate(self, ids: Sequence[str]) -> None:
        if ids:
            self._call("terminate_instances", InstanceIds=list(ids))

    def _call(self, name: str, **kwargs: Any) -> dict[str, Any]:
        try:
            reply: dict[str, Any] = getattr(self.ec2, name)(**kwargs)
        except (self.errors.ClientError, self.errors.BotoCoreError) as err:
            raise ProviderError(f"EC2 {name} in {self.settings['region']} failed: {err}") from None
        return reply
