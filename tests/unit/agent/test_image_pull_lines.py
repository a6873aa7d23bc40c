"""What a pull shows and sends without an engine (agent/launchers/images.py): the progress lines a stream of
Docker's and Podman's items becomes, the credentials sent, and the secrets scrubbed from every text. The pulls
themselves, against a real registry and both engines, are tests/integration/test_image_pulls.py."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from stalwart.agent.launchers.base import ImageError, ImageSource
from stalwart.agent.launchers.images import (
    PROGRESS_EVERY,
    PullProgress,
    Scrubber,
    auth_config,
    pull_image,
    stream_error,
)

PASSWORD = 'pa"ss w0rd/+secret'
AUTH = {"username": "tester", "password": PASSWORD}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def layer(status: str, layer_id: str = "0838720b7e5d", current: int | None = None, total: int = 0) -> dict:
    detail = {"current": current, "total": total} if current is not None else {}
    return {"status": status, "progressDetail": detail, "id": layer_id}


def test_one_line_per_layer_state_and_the_bytes_at_most_every_couple_of_seconds() -> None:
    lines: list[str] = []
    clock = Clock()
    progress = PullProgress(lines.append, Scrubber(AUTH), clock)
    progress.take({"status": "Pulling from team/image", "id": "v1"})
    progress.take(layer("Pulling fs layer"))
    for step in range(200):  # 200 byte events over 4 s
        progress.take(layer("Downloading", current=(step + 1) * 5_000_000, total=1_000_000_000))
        clock.now += 0.02
    progress.take(layer("Download complete"))
    progress.take(layer("Download complete"))  # Podman repeats a state: one line
    progress.take(layer("Extracting", current=10, total=1_000_000_000))
    progress.take(layer("Pull complete"))
    progress.take({"status": "Digest: sha256:" + "a" * 64})
    byte_lines = [line for line in lines if line.startswith(("downloading", "extracting"))]
    assert len(byte_lines) == 2, lines  # at 0 s and at 2 s; the extraction's first event falls within 2 s
    assert byte_lines[0] == "downloading 1 layer: 5.0 MB of 1.00 GB"
    assert [line for line in lines if line not in byte_lines] == [
        "v1: Pulling from team/image", "0838720b7e5d: Pulling fs layer", "0838720b7e5d: Download complete",
        "0838720b7e5d: Pull complete", "Digest: sha256:" + "a" * 64]
    assert progress.digest == "sha256:" + "a" * 64
    assert PROGRESS_EVERY == 2.0


def test_bytes_lines_sum_the_layers_that_download_at_once() -> None:
    lines: list[str] = []
    clock = Clock()
    progress = PullProgress(lines.append, Scrubber(None), clock)
    progress.take(layer("Downloading", "aaa", current=1_500, total=3_000))
    clock.now += PROGRESS_EVERY
    progress.take(layer("Downloading", "bbb", current=2_000_000, total=4_000_000))
    assert lines == ["downloading 1 layer: 1.5 kB of 3.0 kB", "downloading 2 layers: 2.0 MB of 4.0 MB"]


def test_every_form_of_a_secret_an_engine_could_echo_is_scrubbed() -> None:
    scrub = Scrubber(AUTH, {"identitytoken": "tok-123456", "registrytoken": "reg-abcdef"})
    basic = base64.b64encode(f"tester:{PASSWORD}".encode()).decode()
    text = (f"plain {PASSWORD} json {PASSWORD.replace(chr(34), chr(92) + chr(34))} url pa%22ss%20w0rd%2F%2Bsecret "
            f"basic {basic} tokens tok-123456 reg-abcdef user tester")
    scrubbed = scrub(text)
    for secret in (PASSWORD, basic, "tok-123456", "reg-abcdef", "w0rd", "pa%22ss"):
        assert secret not in scrubbed
    assert scrubbed.count("***") == 6 and "user tester" in scrubbed


def test_the_auth_config_names_the_registry_and_decodes_a_lone_auth() -> None:
    assert auth_config(None, "reg.example.com") is None  # the engine client's own credentials
    assert auth_config(AUTH, "reg.example.com:5000") == {**AUTH, "serveraddress": "reg.example.com:5000"}
    given = {**AUTH, "serveraddress": "other.example.com"}
    assert auth_config(given, "reg.example.com") == given
    encoded = base64.b64encode(f"tester:{PASSWORD}".encode()).decode()
    assert auth_config({"auth": encoded}, "r") == {"auth": encoded, **AUTH, "serveraddress": "r"}


def test_bad_credentials_are_refused_without_their_values() -> None:
    with pytest.raises(ImageError) as unknown:
        auth_config({"username": "tester", "passwd": PASSWORD}, "r")
    assert "['passwd']" in str(unknown.value) and "password" in str(unknown.value)
    assert PASSWORD not in str(unknown.value)
    with pytest.raises(ImageError, match="not the base64 of 'username:password'") as bad:
        auth_config({"auth": "bm90LWEtcGFpcg=="}, "r")  # "not-a-pair": no colon
    assert "bm90LWEtcGFpcg" not in str(bad.value)


def test_error_items_of_a_stream_are_read_in_both_engines_shapes() -> None:
    assert stream_error({"status": "Pulling fs layer", "id": "x"}) is None
    podman = {"progressDetail": {}, "errorDetail": {"message": "reading manifest: manifest unknown"},
              "error": "reading manifest: manifest unknown"}
    assert stream_error(podman) == "reading manifest: manifest unknown"
    assert stream_error({"error": "unauthorized: authentication required"}) == "unauthorized: authentication required"


def test_an_empty_image_name_says_what_to_give() -> None:
    lines: list[str] = []
    no_engine: Any = None  # never reached: the name is refused first
    with pytest.raises(ImageError, match="environment.image is empty"):
        pull_image(no_engine, ImageSource("  ", registry_auth=AUTH), lines.append)
    assert lines == []
