"""The provider conformance suite (`testing/provider_conformance`) against both clouds: `aws` on moto's EC2 server
(this run's moto, `storage_servers`) and `gcp` on the labelled Compute API double (`testing/gce_api_double`)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stalwart.config.master import parse_master_config
from stalwart.rm.elastic import Provider
from stalwart.rm.elastic.aws import AwsProvider
from stalwart.rm.elastic.gcp import GcpProvider
from stalwart.testing.gce_api_double import GceApiDouble
from stalwart.testing.provider_conformance import CHECKS, ProviderWorld, run_check


def checked_settings(provider: dict[str, Any]) -> dict[str, Any]:
    """A provider section as the master config checks it (defaults filled)."""
    cfg = parse_master_config({"resource_pools": [{"pool_name": "cloud", "provider": provider}]})
    pool = cfg.pool("cloud")
    assert pool is not None and pool.provider is not None
    return pool.provider.settings


class AwsWorld(ProviderWorld):
    def __init__(self, endpoint: str) -> None:
        self.settings = checked_settings({"type": "aws", "image_id": "ami-12c6146b", "instance_type": "t2.micro",
                                          "endpoint_url": endpoint, "spot": True, "spot_max_price": "0.10"})
        self.any = AwsProvider(self.settings, "any", "conformance")

    def provider(self, pool: str) -> Provider:
        return AwsProvider(self.settings, pool, "conformance")

    def user_data(self, instance_id: str) -> str:
        got = self.any.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        return base64.b64decode(got["UserData"]["Value"]).decode()


class GcpWorld(ProviderWorld):
    def __init__(self, double: GceApiDouble) -> None:
        self.double = double
        self.settings = checked_settings({"type": "gcp", "project": "proj", "zone": "us-central1-a",
                                          "boot_disk_source_image": "projects/p/global/images/i",
                                          "endpoint_url": double.endpoint,
                                          "instance_type": {"machine_type": "n1-standard-4", "preemptible": True}})

    def provider(self, pool: str) -> Provider:
        return GcpProvider(self.settings, pool, "conformance")

    def user_data(self, instance_id: str) -> str:
        return next(i.startup_script for i in self.double.instances() if i.name == instance_id)

    def take_back(self, instance_id: str) -> None:
        self.double.preempt(instance_id)


@pytest.fixture(scope="module")
def gce_double() -> Iterator[GceApiDouble]:
    double = GceApiDouble(boot_s=0.2).start()
    yield double
    double.stop()


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto takes any key; boto3 needs one to sign with."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "stalwart-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "stalwart-test-secret")


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_aws_provider(check: str, storage_emulator: Callable[[str], Any], aws_credentials: None) -> None:
    if (why := run_check(AwsWorld(storage_emulator("s3").endpoint), check)) is not None:
        pytest.skip(why)


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_gcp_provider(check: str, gce_double: GceApiDouble) -> None:
    assert run_check(GcpWorld(gce_double), check) is None


def test_aws_launch_request_carries_the_keys(storage_emulator: Callable[[str], Any], aws_credentials: None) -> None:
    """What EC2 holds for a launched instance: type, image, tags (tag_key/tag_value and the pool)."""
    world = AwsWorld(storage_emulator("s3").endpoint)
    inst = world.provider("keys").launch(1, lambda i: "#!/bin/sh\n")[0]
    raw = world.any.ec2.describe_instances(InstanceIds=[inst.id])["Reservations"][0]["Instances"][0]
    assert (raw["ImageId"], raw["InstanceType"]) == ("ami-12c6146b", "t2.micro")
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags["managed-by"] == "conformance" and tags["stalwart-pool"] == "keys"
