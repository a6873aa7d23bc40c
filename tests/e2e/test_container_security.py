"""Who a container runs as (issue 28, acceptance 5), end to end on a Docker agent that runs as root.

With the master's defaults (no root tasks) a task whose owner has no OS user linked does not start as root: the
allocation fails with a message saying to link one. Linked to uid 4242, the trial runs as 4242 without
privileges to gain (no-new-privileges: a setuid-root program in the image gives no root), its work directory
and checkpoints its own. A bind mount of `/` is refused when the experiment is submitted.
"""

from __future__ import annotations

import pytest
import yaml
from container_trials import container_cluster, trial_config, trial_context

from integration.helpers import create, logs, wait_state
from stalwart.api.errors import StalwartError
from trial_images import image_only_image

pytestmark = pytest.mark.integration

WHO = '''import os
from stalwart import core
print("UIDS", os.getuid(), os.geteuid(), os.getgid(), flush=True)
status = open("/proc/self/status").read()
print("NNP", [l for l in status.splitlines() if l.startswith("NoNewPrivs")][0].split()[1], flush=True)
with core.init() as ctx:
    ctx.train.report_training_metrics(1, {"loss": 1.0})
    for op in ctx.searcher.operations():
        op.report_completed(1.0)
'''


def _text(c, trial_id: int) -> str:
    return "\n".join(line["log"] for line in logs(c, trial_id))


def test_no_root_container_without_a_link_then_the_linked_uid(tmp_path, docker_url):
    image = image_only_image([docker_url])
    with container_cluster(tmp_path / "home", "docker", docker_url, master_config="") as c:
        exp_id = create(c, trial_config(image), trial_context(tmp_path, WHO))
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        assert d["experiment"]["state"] == "ERROR"
        assert "link" in _text(c, d["trials"][0]["id"]).lower()  # it says how to fix it

        c.cli("user", "link-with-agent-user", "admin", "--agent-uid", "4242", "--agent-gid", "4242",
              "--agent-user", "trainer", "--agent-group", "trainers", check=True)
        exp_id = create(c, trial_config(image), trial_context(tmp_path, WHO))
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        text = _text(c, d["trials"][0]["id"])
        assert d["experiment"]["state"] == "COMPLETED", text[-3000:]
        assert "UIDS 4242 4242 4242" in text and "NNP 1" in text


def test_a_bind_mount_of_the_root_is_refused_at_submit(tmp_path, docker_url):
    cfg = yaml.safe_load(trial_config("any/image:1"))
    cfg["bind_mounts"] = [{"host_path": "/", "container_path": "/host"}]
    with container_cluster(tmp_path / "home", "docker", docker_url) as c, \
            pytest.raises(StalwartError, match=r"bind_mounts\[0\]\.host_path"):
        create(c, yaml.safe_dump(cfg), trial_context(tmp_path))
