"""What the container end-to-end tests share: a cluster whose agents run Docker or Podman containers, tiny trial
contexts, and what Stalwart left in an engine (containers carrying its labels).

The agents run as root and tasks have no linked OS user, so the master's config lets tasks run as root
(`security.allow_root_tasks`); the tests of non-root users link one (test_container_security.py).
"""

from __future__ import annotations

import pathlib
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

import docker
import yaml

from stalwart.testing import LocalTestCluster

ALLOW_ROOT = "security:\n  allow_root_tasks: true\n"
LABEL = "ai.stalwart.allocation"

IMAGE_ONLY_TRIAL = textwrap.dedent('''\
    """Imports a package only the image has, reports one metric and completes."""
    import stalwart_image_only
    from stalwart import core

    print("MARKER", stalwart_image_only.MARKER, flush=True)
    with core.init() as ctx:
        ctx.train.report_training_metrics(1, {"loss": 1.0})
        for op in ctx.searcher.operations():
            op.report_completed(1.0)
''')


def trial_context(tmp: pathlib.Path, script: str = IMAGE_ONLY_TRIAL) -> pathlib.Path:
    ctx = tmp / "context"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "train.py").write_text(script)
    return ctx


def trial_config(image: str | None, **top: object) -> str:
    cfg: dict[str, object] = {
        "name": "in-a-container", "entrypoint": "python3 train.py", "max_restarts": 0,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
    }
    if image is not None:
        cfg["environment"] = {"image": image}
    cfg.update(top)
    return yaml.safe_dump(cfg)


@contextmanager
def container_cluster(home: pathlib.Path, runtime: str, engine_url: str | None, *, agents: int = 1,
                      master_config: str = ALLOW_ROOT, slots: int = 1) -> Iterator[LocalTestCluster]:
    with LocalTestCluster(home, runtime=runtime, engine_url=engine_url, agents=agents, slots=slots,
                          master_config=master_config) as c:
        yield c


def stalwart_containers(engine_url: str, cluster: LocalTestCluster | None = None) -> list[str]:
    """Names of the containers (running or not) in the engine that carry Stalwart's labels (of the cluster's
    agents only, when given: tests run side by side)."""
    client = docker.DockerClient(base_url=engine_url)
    try:  # one list call: the high-level list inspects each container after, racing the agent's removals
        found = client.api.containers(all=True, filters={"label": LABEL})
    finally:
        client.close()
    names = {c["Id"]: c["Names"][0].lstrip("/") for c in found}
    if cluster is None:
        return list(names.values())
    home = str(cluster.home)
    return [names[c["Id"]] for c in found
            if any(str(m.get("Source", "")).startswith(home) for m in c.get("Mounts") or [])]
