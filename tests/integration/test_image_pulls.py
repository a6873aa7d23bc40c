"""Pulling a trial's image (agent/launchers/images.py) from a real registry with basic auth, through Docker's
Engine API and through Podman's compatible one: a missing image is pulled with the credentials and its progress
reported line by line; `force_pull` pulls an image already there, and without it a present image needs no
registry; a wrong password, an unknown image, a registry out of reach and a bad name each end in an ImageError
with the registry's or engine's own words and what to check. No password, in any form, reaches a report line,
an error or a log record."""

from __future__ import annotations

import base64
import logging
import re

import docker
import pytest

from container_daemons import Registry, free_port
from stalwart.agent.launchers.base import ImageError, ImageSource
from stalwart.agent.launchers.images import pull_image
from trial_images import registry_only_image, remove_local

WRONG_PASSWORD = "Wr0ng-pass-for-the-pull-tests"


@pytest.fixture(params=["docker", "podman"])
def engine_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def engine(engine_url: str) -> docker.DockerClient:
    client = docker.DockerClient(base_url=engine_url, version="1.41", timeout=120)
    yield client
    client.close()


@pytest.fixture
def absent(request: pytest.FixtureRequest, docker_url: str, engine_url: str, registry: Registry) -> str:
    """An image of the test's own in the registry, not in the engine (nor sharing a layer with what is there):
    using it needs a pull. Its own: tests that run at once in other workers pull and remove theirs."""
    name = request.node.originalname.removeprefix("test_")[:48].strip("_")
    ref = registry_only_image(docker_url, registry, f"stalwart-test/{name}:1")
    remove_local(engine_url, ref)
    return ref


@pytest.fixture
def secrets_seen(caplog: pytest.LogCaptureFixture, registry: Registry):
    """Every line reported by the test's pulls, checked at its end for the passwords with its error texts and
    every log record of any logger (the docker SDK's and urllib3's debug records included)."""
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    yield texts
    texts += [record.getMessage() for record in caplog.records]
    basic = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    for secret in (registry.password, WRONG_PASSWORD, basic):
        assert not [t for t in texts if secret in t], "a password reached a report line, an error or a log"


def present(engine: docker.DockerClient, image: str) -> bool:
    try:
        engine.api.inspect_image(image)
    except docker.errors.NotFound:  # Podman's 'image not known' is no ImageNotFound to the SDK
        return False
    return True


def failed_pull(engine: docker.DockerClient, source: ImageSource, texts: list[str]) -> str:
    with pytest.raises(ImageError) as failure:
        pull_image(engine, source, texts.append)
    texts.append(str(failure.value))
    error = failure.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)  # none chained
    return str(failure.value)


def test_a_missing_image_is_pulled_with_the_credentials_and_its_progress_reported(
        engine: docker.DockerClient, absent: str, registry: Registry, secrets_seen: list[str]) -> None:
    pull_image(engine, ImageSource(absent, registry_auth=registry.auth), secrets_seen.append)
    assert present(engine, absent)
    lines = secrets_seen
    assert lines[0] == f"pulling {absent} from {registry.host} as {registry.username}"
    assert any(re.fullmatch(r"[0-9a-f]{12}: (Pulling fs layer|Already exists)", line) for line in lines), lines
    assert any(line.endswith(": Download complete") or line.endswith(": Already exists") for line in lines), lines
    assert re.fullmatch(rf"pulled {re.escape(absent)} \(sha256:[0-9a-f]{{64}}\)", lines[-1]), lines
    assert not [line for line in lines if "progressDetail" in line or "[=" in line]  # readable, not the raw events


def test_force_pull_pulls_a_present_image_and_a_present_image_needs_no_registry_without_it(
        engine: docker.DockerClient, absent: str, registry: Registry, secrets_seen: list[str]) -> None:
    pull_image(engine, ImageSource(absent, registry_auth=registry.auth), secrets_seen.append)
    wrong = {**registry.auth, "password": WRONG_PASSWORD}
    lines: list[str] = []
    pull_image(engine, ImageSource(absent, force_pull=False, registry_auth=wrong), lines.append)
    assert lines == [f"image {absent} is present on this agent: not pulled (force_pull_image is false)"]
    forced: list[str] = []
    encoded = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    pull_image(engine, ImageSource(absent, force_pull=True, registry_auth={"auth": encoded}), forced.append)
    assert forced[0] == f"pulling {absent} from {registry.host} as {registry.username}"  # `auth` alone, decoded
    assert forced[-1].startswith(f"pulled {absent} (sha256:")
    text = failed_pull(engine, ImageSource(absent, force_pull=True, registry_auth=wrong), secrets_seen)
    assert "unauthorized" in text  # the registry was asked, although the image is here
    secrets_seen += lines + forced


def test_a_wrong_password_ends_with_the_registrys_message_and_never_shows_it(
        engine: docker.DockerClient, absent: str, registry: Registry, secrets_seen: list[str]) -> None:
    for wrong_password in (WRONG_PASSWORD, registry.password + "-not"):  # the second holds the right one
        wrong = {**registry.auth, "password": wrong_password}
        text = failed_pull(engine, ImageSource(absent, registry_auth=wrong), secrets_seen)
        assert text.startswith(f"cannot pull image {absent}: ")
        assert "unauthorized: authentication required" in text
        assert "check environment.registry_auth" in text and registry.host in text
        assert wrong_password not in text and not present(engine, absent)


def test_an_unknown_image_says_the_registry_has_no_such_manifest(
        engine: docker.DockerClient, absent: str, registry: Registry, secrets_seen: list[str]) -> None:
    for unknown in (f"{registry.host}/stalwart-test/no-such-image:1", absent.rpartition(":")[0] + ":no-such-tag"):
        text = failed_pull(engine, ImageSource(unknown, registry_auth=registry.auth), secrets_seen)
        assert text.startswith(f"cannot pull image {unknown}: ") and "manifest unknown" in text
        assert f"check environment.image: {registry.host} has no such image or tag" in text


def test_a_registry_out_of_reach_and_a_bad_name_are_clear_errors(
        engine: docker.DockerClient, registry: Registry, secrets_seen: list[str]) -> None:
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    text = failed_pull(engine, ImageSource(f"{closed}/stalwart-test/pulls:1", registry_auth=registry.auth),
                       secrets_seen)
    assert "connection refused" in text and f"check that this agent reaches the registry {closed}" in text
    bad = f"{registry.host}/Stalwart Test/Pulls:1"
    text = failed_pull(engine, ImageSource(bad, registry_auth=registry.auth), secrets_seen)
    assert text.startswith(f"cannot pull image {bad}: ") and "invalid reference format" in text
    assert "check environment.image: it is not a valid image name" in text
