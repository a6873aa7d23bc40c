"""An elastic pool's `provider` section in the master config: Determined's keys and defaults, durations, and a clear
error naming each bad key."""

from __future__ import annotations

from typing import Any

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config
from stalwart.config.provider import duration_s


def pool_with(provider: dict[str, Any]) -> dict[str, Any]:
    return {"resource_pools": [{"pool_name": "default"}, {"pool_name": "cloud", "provider": provider}]}


def error_of(cfg: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as err:
        parse_master_config(cfg)
    return " | ".join([str(err.value), *err.value.details])


def test_aws_defaults_are_determined_s() -> None:
    cfg = parse_master_config(pool_with({"type": "aws", "image_id": "ami-1"}))
    provider = cfg.pool("cloud").provider  # type: ignore[union-attr]  # the pool is in the config above
    assert provider is not None
    assert (provider.type, provider.min_instances, provider.max_instances) == ("aws", 0, 5)
    assert (provider.max_idle_s, provider.max_starting_s) == (1200.0, 1200.0)
    assert provider.settings["instance_type"] == "g4dn.metal"
    assert cfg.pool("default").provider is None  # type: ignore[union-attr]  # the pool is in the config above


def test_gcp_keys_and_durations() -> None:
    cfg = parse_master_config(pool_with({
        "type": "gcp", "project": "p", "zone": "us-central1-a", "boot_disk_source_image": "img",
        "max_idle_agent_period": "30s", "max_agent_starting_period": 90, "instance_slots": 4,
        "instance_type": {"machine_type": "n1-standard-4", "preemptible": True}}))
    provider = cfg.pool("cloud").provider  # type: ignore[union-attr]  # the pool is in the config above
    assert provider is not None
    assert (provider.max_idle_s, provider.max_starting_s, provider.instance_slots) == (30.0, 90.0, 4)


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30.0), ("20m", 1200.0), ("1h", 3600.0), ("500ms", 0.5),
                                               (12, 12.0), ("soon", None), (-1, None), (True, None)])
def test_durations(text: Any, seconds: float | None) -> None:
    assert duration_s(text) == seconds


@pytest.mark.parametrize(("provider", "says"), [
    ({"image_id": "ami-1"}, "resource_pools[1].provider.type: required: aws or gcp"),
    ({"type": "azure"}, "resource_pools[1].provider.type: expected one of aws, gcp"),
    ({"type": "aws"}, "resource_pools[1].provider.image_id: required: the AMI"),
    ({"type": "aws", "image_id": "a", "max_idle_agent_period": "soon"}, "max_idle_agent_period: expected a duration"),
    ({"type": "aws", "image_id": "a", "min_instances": 6}, "min_instances: 6 is more than max_instances (5)"),
    ({"type": "aws", "image_id": "a", "zone": "z"}, "resource_pools[1].provider.zone: unknown key"),
    ({"type": "gcp", "project": "p"}, "resource_pools[1].provider.zone: required"),
    ({"type": "aws", "image_id": "a", "network_interface": {"subnet": "s"}}, "network_interface.subnet: unknown key"),
])
def test_bad_keys_are_named(provider: dict[str, Any], says: str) -> None:
    assert says in error_of(pool_with(provider))


def test_an_elastic_pool_needs_the_agent_manager() -> None:
    cfg = {**pool_with({"type": "aws", "image_id": "a"}), "resource_manager": {"type": "slurm"}}
    assert "resource_manager.type: agent" in error_of(cfg)
