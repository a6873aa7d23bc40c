"""No task runs as root unless the master allows it (issue 25, hole 6), on a real master and agent.

A link to uid 0 is refused when it is made; a root link that is already in the database (made before the rule
existed) starts nothing: the master refuses the start order, the task's log says why, and the command ends with
exit code 1 (a trial ends in ERROR once its restarts are used up), without its program having run.
"""

from __future__ import annotations

import base64
import pathlib
import sqlite3

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

OWNER, PASSWORD = "ann", "ann-secret-pw"
REFUSED = "the master refused to start this task as OS user root (uid 0, gid 0)"
CONFIG = """name: as-root
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 1}}
max_restarts: 0
"""


def _link_root_in_the_database(home: pathlib.Path) -> None:
    """A root link as one made before the rule (or by hand) sits in the database."""
    with sqlite3.connect(home / "master.db") as db:
        db.execute("UPDATE users SET agent_uid = 0, agent_gid = 0, agent_user = 'root', agent_group = 'root' "
                   "WHERE username = ?", (OWNER,))


def _context(tmp_path: pathlib.Path, marker: pathlib.Path) -> str:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(f"import os\nopen({str(marker)!r}, 'w').write(str(os.getuid()))\n")
    return base64.b64encode(pack_context(ctx).data).decode()


def test_a_root_link_starts_nothing_as_root(tmp_path) -> None:
    marker = tmp_path / "it-ran"
    with LocalTestCluster(tmp_path / "home") as cluster:
        admin = cluster.client()
        admin.create_user(OWNER, password=PASSWORD)
        with pytest.raises(InvalidRequest, match="agentUid 0 is root.*security.allow_root_tasks"):
            admin.link_agent_user(OWNER, uid=0, gid=0, user="root", group="root")
        _link_root_in_the_database(cluster.home)
        ann = cluster.client(session_token=None)
        ann.login(OWNER, PASSWORD)
        context = _context(tmp_path, marker)

        cmd = ann.create_command({"entrypoint": ["python3", "train.py"]}, context).command
        cluster.wait_for(lambda: ann.get_command(cmd.id).command.state == "TERMINATED", what="the command to end")
        ended = ann.get_command(cmd.id).command
        lines = [entry.log for entry in ann.stream_task_logs(f"command-{cmd.id}")]
        assert ended.exit_code == 1, ended
        assert any(REFUSED in line and "allow_root_tasks" in line for line in lines), lines

        created = ann.create_experiment(CONFIG, context).experiment
        assert created is not None
        cluster.wait_for(lambda: ann.get_experiment(created.id).experiment.state.value == "ERROR",
                         what="the experiment to fail")
        trial_id = ann.get_experiment(created.id).trials[0].id
        logs = [entry.log for entry in ann.stream_trial_logs(trial_id)]
        assert any(REFUSED in line for line in logs), logs
        assert not marker.exists(), "the task's program ran"
        _assert_no_link_can_be_made_to_gid_0(admin)


def _assert_no_link_can_be_made_to_gid_0(admin: Client) -> None:
    with pytest.raises(InvalidRequest, match="agentGid 0 is root"):
        admin.link_agent_user(OWNER, uid=1001, gid=0, user="ann", group="root")
