"""Determined's own client and Stalwart's see one cluster (issue 34, acceptance 2 to 4): the real SDK's workflow in a
script, experiments made by either client shown by the other (and the web UI's list), the same refusals for the
same user, and the `det` commands Stalwart does not serve yet answered with a message, never a traceback."""

from __future__ import annotations

import io
import json
import pathlib
import re
import subprocess
import tarfile
import uuid

import pytest
import yaml

import det_client
from det_cluster import DetMaster

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[3]
DIGITS = REPO / "examples" / "digits"
SDK_SCRIPT = """
import sys
from determined.experimental import client

master, config, model_dir, out = sys.argv[1:]
client.login(master=master, user="admin", password="")
created = client.create_experiment(config=config, model_dir=model_dir)
print("CREATED", created.id, flush=True)
exp = client.get_experiment(created.id)
print("STATE", exp.wait(interval=1).name)
print("TRIALS", [t.id for t in exp.list_trials()])
best = exp.top_checkpoint()
best.download(out)
print("CHECKPOINT", best.uuid)
"""


def _digits_config(directory: pathlib.Path, name: str, batches: int = 20) -> pathlib.Path:
    cfg = yaml.safe_load((DIGITS / "const.yaml").read_text())
    cfg.update(name=name, min_validation_period={"batches": batches})
    cfg["searcher"]["max_length"] = {"batches": batches}
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _no_traceback(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def admin_dir(det_master: DetMaster, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    config_dir = tmp_path_factory.mktemp("det-admin")
    assert det_master.det(config_dir, "user", "login", "admin", stdin="\n").returncode == 0
    return config_dir


def test_the_real_sdk_creates_waits_lists_trials_and_downloads_the_top_checkpoint(det_master, tmp_path):
    name = f"sdk-digits-{uuid.uuid4().hex[:6]}"
    script = tmp_path / "workflow.py"
    script.write_text(SDK_SCRIPT)
    out = tmp_path / "best"
    done = subprocess.run([det_client.python(), str(script), det_master.det_url, str(_digits_config(tmp_path, name)),
                           str(DIGITS), str(out)], env=det_client.env(det_master.det_url, tmp_path / "cfg"),
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    exp_id = int(re.search(r"CREATED (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert "STATE COMPLETED" in done.stdout
    checkpoint = re.search(r"CHECKPOINT (\S+)", done.stdout).group(1)  # type: ignore[union-attr]
    with det_master.client() as c:
        trial_ids = [t.id for t in c.experiment_trials(exp_id).trials]
        archive = c.download_checkpoint(checkpoint)
    assert f"TRIALS {trial_ids}" in done.stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        want = {m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers()  # type: ignore[union-attr]
                if m.isfile()}
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == want and "metadata.json" in got


def test_each_client_shows_the_others_experiments_and_refuses_the_same_user_alike(det_master, admin_dir, tmp_path):
    by_det = f"by-det-{uuid.uuid4().hex[:6]}"
    made = det_master.det(admin_dir, "e", "create", "--paused", str(_digits_config(tmp_path, by_det)), str(DIGITS))
    det_id = int(re.search(r"Created experiment (\d+)", made.stdout).group(1))  # type: ignore[union-attr]
    assert by_det in _no_traceback(det_master.cli("e", "list"))
    with det_master.client() as c:  # the web UI's experiments list
        page = c.get("/ui/experiments", limit=100)
    assert any(e["id"] == det_id and e["name"] == by_det for e in page["experiments"]), page
    by_stalwart = f"by-stalwart-{uuid.uuid4().hex[:6]}"
    done = det_master.cli("e", "create", "--paused", str(_digits_config(tmp_path, by_stalwart)), str(DIGITS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert by_stalwart in _no_traceback(det_master.det(admin_dir, "e", "list", "--all"))

    other = f"other-{uuid.uuid4().hex[:6]}"
    det_master.make_user(other, "Other-pass-1")
    as_other = {"STALWART_USER": other, "STALWART_PASSWORD": "Other-pass-1"}
    refused_here = det_master.cli("e", "kill", str(det_id), **as_other)
    other_dir = tmp_path / "other"
    assert det_master.det(other_dir, "user", "login", other, stdin="Other-pass-1\n").returncode == 0
    refused_there = det_master.det(other_dir, "e", "kill", str(det_id))
    assert refused_here.returncode != 0 and refused_there.returncode != 0
    assert "edit_experiments" in refused_here.stdout + refused_here.stderr
    assert "edit_experiments" in _no_traceback(refused_there)
    with det_master.client() as c:
        assert c.get_experiment(det_id).experiment.state == "PAUSED"


NOT_SERVED_YET = [
    ("agent", "list"), ("slot", "list"), ("job", "list"), ("task", "list"), ("cmd", "run", "true"),
    ("notebook", "start"), ("shell", "start"), ("model", "list"), ("workspace", "list"), ("user", "list"),
    ("template", "list"), ("master", "config"), ("e", "label", "add", "{exp}", "mine"),
    ("tensorboard", "start", "{exp}"),
]


def test_other_common_commands_work_or_say_they_are_not_served_yet(det_master, admin_dir, tmp_path):
    made = det_master.det(admin_dir, "e", "create", "--paused", str(_digits_config(tmp_path, "plain")), str(DIGITS))
    exp_id = re.search(r"Created experiment (\d+)", made.stdout).group(1)  # type: ignore[union-attr]
    answers = {}
    for args in [("master", "info"), ("e", "config", exp_id), ("version",), *NOT_SERVED_YET]:
        done = det_master.det(admin_dir, *(a.format(exp=exp_id) for a in args))
        said = _no_traceback(done)
        answers[" ".join(args)] = done.returncode
        if done.returncode != 0:
            assert "Stalwart does not serve" in said and "use `stalwart`" in said, (args, said)
    assert answers["master info"] == answers["version"] == 0
    assert json.loads(json.dumps(answers)) and sum(code != 0 for code in answers.values()) >= 10
