"""Which Python an image has, and how Stalwart's harness runs in it: a read-only bundle built for that Python.

A short probe container (no network, no capabilities, not root) prints the image's `python3` major.minor;
the answer is kept per image id, so each image is probed once per agent. An image whose Python Stalwart
supports gets the harness bundle for that version (`agent/harness_bundle.py`) mounted read-only at its mount
point and put on PYTHONPATH; any other image is refused with an `ImageError` that names the image, its
Python (or that it has none) and the versions Stalwart supports.
"""

from __future__ import annotations

import pathlib
import re
import threading
from typing import Any

from stalwart.agent import harness_bundle
from stalwart.agent.launchers.base import Harness, ImageError, Mount

PROBE = "import sys; print('%d.%d' % sys.version_info[:2])"
PROBE_USER = "65534:65534"  # nobody: the probe needs no privilege
PROBE_TIMEOUT = 60  # seconds


def _probe(api: Any, image: str) -> tuple[tuple[int, int] | None, str]:
    """The image's python3 version (None when it has none that runs) and what the probe printed."""
    from docker.errors import APIError

    body = {"Image": image, "Entrypoint": ["python3", "-c", PROBE], "User": PROBE_USER, "Env": [],
            "Labels": {"ai.stalwart.probe": "python"},
            "HostConfig": {"NetworkMode": "none", "CapDrop": ["ALL"], "SecurityOpt": ["no-new-privileges"],
                           "LogConfig": {"Type": "json-file", "Config": {}}}}  # readable back, whatever the default
    container_id = api.create_container_from_config(body, None)["Id"]
    try:
        try:
            api.start(container_id)
            status = int(api.wait(container_id, timeout=PROBE_TIMEOUT)["StatusCode"])
            said = api.logs(container_id, stdout=True, stderr=True).decode(errors="replace").strip()
        except APIError as err:  # an image without python3: the engine cannot start the container
            return None, str(err.explanation or err)
        found = re.fullmatch(r"(\d+)\.(\d+)", said)
        if status != 0 or not found:
            return None, said[-300:]
        return (int(found.group(1)), int(found.group(2))), said
    finally:
        api.remove_container(container_id, force=True)


class ImagePythons:
    """The Python of each image an engine has, probed once per image id: (major, minor), or None and why."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, int] | None, str]] = {}
        self._lock = threading.Lock()

    def version(self, api: Any, image: str) -> tuple[tuple[int, int] | None, str]:
        from docker.errors import APIError, NotFound

        try:
            image_id = str(api.inspect_image(image)["Id"])
        except NotFound:
            raise ImageError(f"image {image} is not present on this agent: it must be pulled first") from None
        except APIError as err:
            raise ImageError(f"image {image}: the container engine says {err.explanation or err}") from None
        with self._lock:
            if image_id in self._known:
                return self._known[image_id]
        found = _probe(api, image)
        with self._lock:
            self._known[image_id] = found
        return found


def harness_in(image: str, version: tuple[int, int] | None, why: str, work_root: pathlib.Path) -> Harness:
    """The harness for `image`, whose python3 is `version` (None: none that runs, `why`); ImageError when the
    harness cannot run there."""
    supported = harness_bundle.supported_text()
    if version is None:
        raise ImageError(f"image {image} has no python3 that runs ({why or 'it printed nothing'}), so Stalwart's "
                         f"harness cannot run in it; use an image with CPython {supported}")
    if version not in harness_bundle.SUPPORTED:
        raise ImageError(f"image {image} has Python {harness_bundle.version_text(version)}, which Stalwart's "
                         f"harness does not support; use an image with CPython {supported}")
    try:
        bundle = harness_bundle.bundle_dir(harness_bundle.cache_root(work_root), version)
    except harness_bundle.BundleError as err:
        raise ImageError(f"image {image} (Python {harness_bundle.version_text(version)}): {err}") from None
    mount_point = harness_bundle.MOUNT_POINT
    return Harness(("python3",), {"PYTHONPATH": mount_point}, (Mount(str(bundle), mount_point, read_only=True),))
