"""The small decisions of a container order (master/allocations/container_orders.py): which slot type a container
is, and which registry an image and a credential name (the master's credentials go only to their own registry)."""

from __future__ import annotations

import pytest

from stalwart.master.allocations.container_orders import registry_of_address, registry_of_image, slot_kind


@pytest.mark.parametrize(("agent", "slots", "kind"), [
    ("cuda", [0, 1], "cuda"), ("gpu", [3], "cuda"), ("rocm", [0], "rocm"), ("cpu", [0], "cpu"),
    ("cuda", [], "cpu"),  # a container that holds no slots runs the cpu image, as Determined's 0-slot tasks
    (None, [0], "cpu"), ("tpu", [0], "cpu"),
])
def test_the_slot_type_of_a_container(agent: str | None, slots: list[int], kind: str) -> None:
    assert slot_kind(agent, slots) == kind


@pytest.mark.parametrize(("image", "registry"), [
    ("pytorch/pytorch:2.3.1", "docker.io"), ("ubuntu", "docker.io"), ("registry.local:5000/team/img:1",
                                                                      "registry.local:5000"),
    ("localhost/img", "localhost"), ("Ghcr.IO/org/img@sha256:abc", "ghcr.io"), ("team/sub/img", "docker.io"),
])
def test_the_registry_of_an_image(image: str, registry: str) -> None:
    assert registry_of_image(image) == registry


@pytest.mark.parametrize(("address", "registry"), [
    ("https://index.docker.io/v1/", "docker.io"), ("registry.local:5000", "registry.local:5000"),
    ("http://Registry.Local:5000/v2/", "registry.local:5000"), ("docker.io", "docker.io"),
])
def test_the_registry_a_credential_names(address: str, registry: str) -> None:
    assert registry_of_address(address) == registry
