"""The trial images the container tests run (trial_images.py) hold what they claim and no Stalwart: the image-only
package imports in both engines, torch and scikit-learn import (and compute) in Docker, and `import stalwart`
fails in each: a trial there has Stalwart only through what the agent mounts."""

from __future__ import annotations

import docker
import pytest

from trial_images import MARKER, image_only_image, torch_image

NO_NETWORK = {"network_mode": "none", "user": "1000:1000"}  # as a trial runs: no root


def run_python(engine_url: str, image: str, code: str) -> tuple[int, str]:
    """Run `python3 -c code` in a new container of `image`; its exit code and its output (both streams)."""
    client = docker.DockerClient(base_url=engine_url, version="1.41", timeout=300)
    container = client.containers.create(image, ["python3", "-c", code], **NO_NETWORK)
    try:
        container.start()
        status = int(container.wait(timeout=300)["StatusCode"])
        return status, container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        container.remove(force=True)
        client.close()


ABSENT = ("stalwart", "pydantic", "yaml")  # Stalwart and its own dependencies: only the agent's mount brings them
REPORT_ABSENT = f"""
for name in {ABSENT!r}:
    try:
        __import__(name)
    except ModuleNotFoundError as error:
        print(error)
"""


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_the_image_only_package_imports_and_stalwart_does_not(engine: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(f"{engine}_url")
    image = image_only_image([url])
    status, out = run_python(url, image, "import stalwart_image_only, sys\n"
                                         "print(stalwart_image_only.MARKER, sys.version_info[:2])" + REPORT_ABSENT)
    assert (status, out.splitlines()) == (0, [f"{MARKER} (3, 11)", *(f"No module named {n!r}" for n in ABSENT)])


@pytest.mark.timeout(600)  # the first test to need the torch image builds it (minutes under CI's load)
def test_torch_and_sklearn_run_in_the_torch_image_and_stalwart_is_not_there(docker_url: str) -> None:
    image = torch_image(docker_url)
    status, out = run_python(docker_url, image, (
        "import torch, sklearn, numpy\n"
        "from sklearn.datasets import load_digits\n"
        "x = torch.tensor(load_digits().data[:4], dtype=torch.float32)\n"
        "print(torch.__version__.split('+')[0], sklearn.__version__, tuple((x @ x.T).shape))" + REPORT_ABSENT))
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0].endswith(" (4, 4)") and lines[1:] == [f"No module named {n!r}" for n in ABSENT], out
