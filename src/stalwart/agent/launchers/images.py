"""Pulling a container's image through the Docker Engine API (Docker's own, or Podman's compatible one).

`pull_image` makes an image present on the engine: nothing to do when it is there already (unless the config
forces a pull), else a pull with the registry's credentials (Determined's `registry_auth`). The pull's progress
reaches the task's log as readable lines (`PullProgress`): one per layer's change of state, the bytes downloaded
or extracted at most every `PROGRESS_EVERY` seconds, and a last line naming the image's digest. A failed pull
raises `ImageError` with the registry's own words, the image's name and what to check; Docker answers such a
failure as an HTTP error, Podman as an `error` item in the stream, and both end the same way here.

The credentials' secrets (password, auth, tokens, and the encodings of them an engine could echo) are scrubbed
from every line and error (`***`), and no error's cause is chained: nothing of them reaches a log.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import docker
import docker.auth
import docker.errors
import docker.utils

from stalwart.agent.launchers.base import ImageError, ImageSource

log = logging.getLogger(__name__)

PROGRESS_EVERY = 2.0  # seconds between two lines of bytes downloaded or extracted
AUTH_KEYS = ("username", "password", "auth", "email", "serveraddress", "identitytoken", "registrytoken")
SECRET_KEYS = ("password", "auth", "identitytoken", "registrytoken")
_BYTE_PHASES = {"Downloading": "downloading", "Extracting": "extracting"}  # per-chunk events: throttled

# What a registry's or engine's message says, lower-cased, and what the user should check then.
_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("invalid reference format", "repository name must", "invalid repository name"),
     "check environment.image: it is not a valid image name"),
    (("unauthorized", "authentication required", "no basic auth credentials", "incorrect username or password"),
     "check environment.registry_auth: the registry {registry} refused its credentials"),
    (("denied",),
     "check environment.image and environment.registry_auth: {registry} has no such image, or refuses these"
     " credentials access to it"),
    (("manifest unknown", "name unknown", "not found"),
     "check environment.image: {registry} has no such image or tag"),
    (("connection refused", "no such host", "dial tcp", "i/o timeout", "network is unreachable", "pinging",
      "http response to https client", "certificate", "tls:"),
     "check that this agent reaches the registry {registry}, and that its container engine trusts it"
     " (insecure-registries for plain HTTP)"),
)


class Scrubber:
    """Replaces the credentials' secrets, and the encodings of them an engine could echo, by `***` in a text."""

    def __init__(self, *auths: Mapping[str, str] | None) -> None:
        secrets: set[str] = set()
        for auth in auths:
            if not auth:
                continue
            secrets.update(str(auth[key]) for key in SECRET_KEYS if auth.get(key))
            if auth.get("username") and auth.get("password"):
                secrets.add(base64.b64encode(f"{auth['username']}:{auth['password']}".encode()).decode())
            secrets.add(docker.auth.encode_header(dict(auth)).decode())  # the X-Registry-Auth header itself
        variants = {form for secret in secrets for form in _encodings(secret)}
        self._secrets = sorted((s for s in variants if s), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _encodings(secret: str) -> tuple[str, ...]:
    """The secret as it is, JSON-escaped and URL-quoted: the forms an engine's message could carry it in."""
    return secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)


class PullProgress:
    """Turns a pull's stream of progress items into lines for the task's log (see the module's docstring)."""

    def __init__(self, report: Callable[[str], object], scrub: Callable[[str], str],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._report = report
        self._scrub = scrub
        self._clock = clock
        self._seen: set[tuple[str, str]] = set()
        self._bytes: dict[str, dict[str, tuple[int, int]]] = {phase: {} for phase in _BYTE_PHASES.values()}
        self._last_bytes_line = -math.inf
        self.digest: str | None = None  # the digest the engine named (Docker does; Podman does not)

    def take(self, item: Mapping[str, Any]) -> None:
        """Read one item of the stream (an error item is the caller's: see `stream_error`)."""
        status = str(item.get("status") or "").strip()
        layer = str(item.get("id") or "").strip()
        if status in _BYTE_PHASES:
            self._take_bytes(_BYTE_PHASES[status], layer, item.get("progressDetail"))
            return
        if status.startswith("Digest:"):
            self.digest = status.removeprefix("Digest:").strip()
        if status and (layer, status) not in self._seen:  # Podman repeats some states
            self._seen.add((layer, status))
            self._line(f"{layer}: {status}" if layer else status)

    def _take_bytes(self, phase: str, layer: str, detail: object) -> None:
        if isinstance(detail, Mapping) and isinstance(detail.get("current"), int):
            total = detail.get("total")
            self._bytes[phase][layer] = (detail["current"], total if isinstance(total, int) else 0)
        now = self._clock()
        if now - self._last_bytes_line < PROGRESS_EVERY or not self._bytes[phase]:
            return
        self._last_bytes_line = now
        layers = self._bytes[phase].values()
        done, total = sum(c for c, _ in layers), sum(t for _, t in layers)
        count = len(self._bytes[phase])
        self._line(f"{phase} {count} layer{'s' if count > 1 else ''}: {_size(done)} of {_size(total)}")

    def _line(self, text: str) -> None:
        self._report(self._scrub(text))


def _size(count: int) -> str:
    """A number of bytes as Docker writes it (decimal units): 512 B, 34.3 kB, 1.1 MB, 2.04 GB."""
    if count < 1000:
        return f"{count} B"
    value = count / 1000
    for unit in ("kB", "MB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.2f} GB"


def stream_error(item: Mapping[str, Any]) -> str | None:
    """The error an item of a pull's stream carries (Podman reports a failed pull so), or None."""
    if not item.get("error") and not item.get("errorDetail"):
        return None
    detail = item.get("errorDetail")
    message = detail.get("message") if isinstance(detail, Mapping) else None
    return str(message or item.get("error") or "the engine reported an error without a message")


def pull_image(client: docker.DockerClient, source: ImageSource, report: Callable[[str], object],
               clock: Callable[[], float] = time.monotonic) -> None:
    """Make `source.image` present on the engine `client` speaks to (see the module's docstring)."""
    image = source.image.strip()
    if not image:
        raise ImageError("environment.image is empty: name an image, such as 'python:3.11' or "
                         "'registry.example.com/team/image:tag'")
    if not source.force_pull and _present(client, image):
        report(f"image {image} is present on this agent: not pulled (force_pull_image is false)")
        return
    repository, tag = docker.utils.parse_repository_tag(image)
    registry = _registry(repository, image)
    auth = auth_config(source.registry_auth, registry)
    scrub = Scrubber(source.registry_auth, auth)
    who = f" as {auth['username']}" if auth and auth.get("username") else ""
    report(scrub(f"pulling {image} from {registry}{who}"))
    log.info("pulling image %s", scrub(image))
    progress = PullProgress(report, scrub, clock)
    try:
        for item in client.api.pull(repository, tag or "latest", stream=True, decode=True, auth_config=auth):
            failure = stream_error(item)
            if failure is not None:
                raise _failed(image, registry, failure, scrub)
            progress.take(item)
    except docker.errors.APIError as error:
        raise _failed(image, registry, _explanation(error), scrub) from None
    digest = progress.digest or _digest(client, image, repository)
    report(scrub(f"pulled {image} ({digest})"))
    log.info("pulled image %s (%s)", scrub(image), digest)


def _present(client: docker.DockerClient, image: str) -> bool:
    api: Any = client.api  # docker's stubs leave inspect_image untyped: its answer is the engine's JSON
    try:
        api.inspect_image(image)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.APIError:
        return False  # e.g. a name the engine cannot parse: the pull says what is wrong with it
    return True


def _registry(repository: str, image: str) -> str:
    try:
        registry, _ = docker.auth.resolve_repository_name(repository)
    except docker.errors.DockerException as error:
        raise ImageError(f"cannot pull image {image}: {error} (check environment.image: it is not a valid image "
                         "name)") from None
    return str(registry)


def auth_config(registry_auth: Mapping[str, str] | None, registry: str) -> dict[str, str] | None:
    """The auth config to send with a pull from `registry` (Docker's keys; `serveraddress` defaults to the
    registry, a lone `auth` is decoded into username and password), or None: the engine's client's own."""
    if registry_auth is None:
        return None
    unknown = sorted(set(registry_auth) - set(AUTH_KEYS))
    if unknown:
        raise ImageError(f"environment.registry_auth has unknown keys {unknown}: use {list(AUTH_KEYS)}")
    auth = {key: str(value) for key, value in registry_auth.items() if value}
    if auth.get("auth") and not (auth.get("username") and auth.get("password")):
        try:
            username, sep, password = base64.b64decode(auth["auth"], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            sep = ""
        if not sep:
            raise ImageError("environment.registry_auth.auth is not the base64 of 'username:password': "
                             "fix it, or give username and password instead") from None
        auth.setdefault("username", username)
        auth.setdefault("password", password)
    auth.setdefault("serveraddress", registry)
    return auth


def _explanation(error: docker.errors.APIError) -> str:
    explanation = error.explanation
    if isinstance(explanation, bytes):
        explanation = explanation.decode(errors="replace")
    return str(explanation or error)


def _failed(image: str, registry: str, message: str, scrub: Callable[[str], str]) -> ImageError:
    lowered = message.lower()
    hint = next((h for words, h in _HINTS if any(w in lowered for w in words)),
                "check environment.image and environment.registry_auth")
    return ImageError(scrub(f"cannot pull image {image}: {message.strip()} ({hint.format(registry=registry)})"))


def _digest(client: docker.DockerClient, image: str, repository: str) -> str:
    """The pulled image's digest in `repository` (or its id): the engine must have the image now."""
    api: Any = client.api  # docker's stubs leave inspect_image untyped: its answer is the engine's JSON
    try:
        attrs = api.inspect_image(image)
    except docker.errors.APIError as error:
        raise ImageError(f"pulled image {image}, but the engine does not find it afterwards: "
                         f"{_explanation(error)}") from None
    digests = [str(d) for d in attrs.get("RepoDigests") or []]
    name = repository.rsplit("/", 1)[-1]
    mine = [d for d in digests if d.partition("@")[0].rsplit("/", 1)[-1] == name]
    chosen = (mine or digests)[:1]
    return chosen[0].partition("@")[2] if chosen else str(attrs.get("Id") or "no digest")
