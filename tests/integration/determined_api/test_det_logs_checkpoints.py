"""The real `det` 0.38.1 and its SDK read trial logs and checkpoints from a Stalwart master's Determined listener.

One scripted experiment (made with Stalwart's own client: the same data both APIs serve) logs lines at several
levels and stores three checkpoints, two of them validated; `det trial logs` (all, --head, --tail, --level, -f),
`det e list-checkpoints [--best 1]`, `det checkpoint download` (through the master and straight from the shared file
system) and the SDK's `top_checkpoint().download()` read them back, and the files they fetch equal the stored ones.
"""

from __future__ import annotations

import filecmp
import json
import pathlib
import re
import subprocess
import tarfile
import tempfile
import time
import uuid as uuid_module
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import yaml

import det_client
from det_cluster import DetMaster
from integration.helpers import one_file_context_b64
from stalwart.client import Client
from stalwart.storage import make_storage

pytestmark = pytest.mark.integration

SCRIPTED_TRIAL = """import logging, os, sys, time
from determined import core

logging.basicConfig(level=logging.INFO, stream=sys.stdout)
PLAN = [("training", 1, {"loss": 1.0}), ("training", 2, {"loss": 0.5}), ("validation", 2, {"score": 0.7}),
        ("checkpoint", 2), ("validation", 4, {"score": 0.9}), ("checkpoint", 4), ("checkpoint", 5)]

with core.init() as ctx:
    for i in range(int(ctx.info.trial.hparams["ticks"])):
        print(f"tick {i}", flush=True)
        time.sleep(float(ctx.info.trial.hparams["tick_s"]))
    logging.warning("a warning line")
    logging.error("an error line")
    for op in ctx.searcher.operations():
        for kind, steps, *metrics in PLAN:
            if kind == "training":
                ctx.train.report_training_metrics(steps, metrics[0])
            elif kind == "validation":
                ctx.train.report_validation_metrics(steps, metrics[0])
            else:
                with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
                    (path / "state.txt").write_text(f"steps {steps}")
                    os.makedirs(path / "sub" / "deeper")
                    (path / "sub" / "deeper" / "weights.bin").write_bytes(bytes(range(256)) * (steps + 1))
            op.report_progress(steps)
        op.report_completed(0.0)
    print("the end", flush=True)
"""


def config(name: str, ticks: int, tick_s: float) -> str:
    return yaml.safe_dump({
        "name": name, "entrypoint": "python3 scripted.py", "max_restarts": 0,
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": 5},
        "hyperparameters": {"ticks": ticks, "tick_s": tick_s},
        "checkpoint_storage": {"save_trial_latest": 10},  # keep every checkpoint
    })


@dataclass(frozen=True)
class Scripted:
    """The finished experiment: its trial, its checkpoints' uuids by steps, and a logged-in `det` config dir."""

    master: DetMaster
    exp_id: int
    trial_id: int
    uuids: dict[int, str]
    config_dir: pathlib.Path

    def det(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.master.det(self.config_dir, *args, timeout=timeout)

    def get(self, path: str, **params: object) -> httpx.Response:
        return httpx.get(self.master.det_url + path, params=params,  # type: ignore[arg-type]  # httpx's params type
                         headers={"Authorization": f"Bearer {self.master.admin_token}"}, timeout=60)


def create(master: DetMaster, name: str, ticks: int, tick_s: float) -> tuple[int, int]:
    """The experiment's id and its trial's, once the trial exists."""
    with master.client() as c:
        exp = c.create_experiment(config(name, ticks, tick_s), one_file_context_b64("scripted.py", SCRIPTED_TRIAL))
        assert exp.experiment is not None
        deadline = time.monotonic() + 60
        while not (detail := c.get_experiment(exp.experiment.id)).trials:
            assert time.monotonic() < deadline, "the experiment made no trial"
            time.sleep(0.2)
    return exp.experiment.id, detail.trials[0].id


def logged_in(master: DetMaster, config_dir: pathlib.Path) -> pathlib.Path:
    done = master.det(config_dir, "user", "login", "admin", stdin="\n")
    assert done.returncode == 0, done.stderr
    return config_dir


@pytest.fixture(scope="module")
def scripted(det_master: DetMaster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scripted]:
    exp_id, trial_id = create(det_master, "det-logs-checkpoints", 3, 0.0)
    with det_master.client() as c:
        deadline = time.monotonic() + 180
        while not (detail := c.get_experiment(exp_id)).experiment.state.terminal:
            assert time.monotonic() < deadline, "the scripted experiment did not end"
            time.sleep(0.3)
        assert detail.experiment.state.value == "COMPLETED"
        uuids = {c.steps_completed or 0: c.uuid for c in c.experiment_checkpoints(exp_id).checkpoints}
    assert sorted(uuids) == [2, 4, 5]
    yield Scripted(det_master, exp_id, trial_id, uuids, logged_in(det_master, tmp_path_factory.mktemp("det-config")))


LINE = re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\] {10}(\[rank=\d+\] )?\|\| (TRACE|DEBUG|INFO|WARNING|"
                  r"ERROR|CRITICAL): (.*)$")


def log_texts(output: str) -> list[str]:
    """The text of each log line `det trial logs` printed (each in the real master's format)."""
    out = []
    for line in output.splitlines():
        if line.startswith("Trial log stream ended"):
            continue
        found = LINE.match(line)
        assert found, f"not in the real master's format: {line!r}"
        out.append(f"{found.group(2)}: {found.group(3)}")
    return out


def test_trial_logs_print_every_line_in_the_real_masters_format(scripted: Scripted) -> None:
    done = scripted.det("trial", "logs", str(scripted.trial_id))
    assert done.returncode == 0, done.stderr
    texts = log_texts(done.stdout)
    for expected in ("INFO: tick 0", "INFO: tick 2", "WARNING: WARNING:root:a warning line",
                     "ERROR: ERROR:root:an error line", "INFO: the end"):
        assert expected in texts
    assert texts.index("INFO: tick 0") < texts.index("INFO: tick 2") < texts.index("INFO: the end")
    with scripted.master.client() as c:
        stored = list(c.stream_trial_logs(scripted.trial_id))
    assert len(texts) == len(stored)


def test_head_tail_and_level_filters(scripted: Scripted) -> None:
    everything = log_texts(scripted.det("trial", "logs", str(scripted.trial_id)).stdout)
    tail = scripted.det("trial", "logs", "--tail", "3", str(scripted.trial_id))
    assert tail.returncode == 0, tail.stderr
    assert log_texts(tail.stdout) == everything[-3:]
    head = scripted.det("trial", "logs", "--head", "2", str(scripted.trial_id))
    assert log_texts(head.stdout) == everything[:2]
    warnings = scripted.det("trial", "logs", "--level", "WARNING", str(scripted.trial_id))
    assert warnings.returncode == 0, warnings.stderr
    assert log_texts(warnings.stdout) == [t for t in everything if t.startswith(("WARNING", "ERROR", "CRITICAL"))]
    assert len(log_texts(warnings.stdout)) == 2


def test_stream_lines_are_determineds_trial_logs_responses(scripted: Scripted) -> None:
    answer = scripted.get(f"/api/v1/trials/{scripted.trial_id}/logs", searchText="tick", limit=2,
                          orderBy="ORDER_BY_DESC")
    assert answer.status_code == 200, answer.text
    assert answer.headers["transfer-encoding"] == "chunked"
    lines = [json.loads(line)["result"] for line in answer.text.splitlines()]
    assert [r["log"].strip() for r in lines] == ["tick 2", "tick 1"]  # the last two, newest first
    first = lines[0]
    assert isinstance(first["id"], str) and first["trialId"] == scripted.trial_id
    assert first["level"] == "LOG_LEVEL_INFO" and first["message"].endswith("|| INFO: tick 2\n")


def test_time_and_level_filters_of_the_stream(scripted: Scripted) -> None:
    path = f"/api/v1/trials/{scripted.trial_id}/logs"
    lines = [json.loads(line)["result"] for line in scripted.get(path).text.splitlines()]
    tick_2 = next(r for r in lines if r["log"].strip() == "tick 2")
    answer = scripted.get(path, timestampAfter=tick_2["timestamp"])
    after = [json.loads(line)["result"] for line in answer.text.splitlines()]
    got = {r["id"] for r in after}  # strictly after it (the line's own time has more digits than it shows)
    assert {r["id"] for r in lines if r["timestamp"] > tick_2["timestamp"]} <= got
    assert got <= {r["id"] for r in lines if r["timestamp"] >= tick_2["timestamp"]} and "tick 0" not in answer.text
    bad = scripted.get(path, levels="LOG_LEVEL_LOUD")
    assert bad.status_code == 400 and "LOG_LEVEL_LOUD" in bad.json()["error"]["error"]
    bad = scripted.get(path, timestampAfter="yesterday")
    assert bad.status_code == 400 and "timestampAfter" in bad.json()["error"]["error"]
    assert scripted.get(path, follow="true", orderBy="ORDER_BY_DESC", limit=3).status_code == 400


def test_another_user_is_answered_as_by_stalwarts_own_routes(scripted: Scripted) -> None:
    """The same permission on the same object: a user other than the owner (no role; this cluster is not in rbac
    mode, so may view) gets what Stalwart's own route for the same read gives (rbac refusals: the conformance
    suite, over both route tables)."""
    name = f"nv-{uuid_module.uuid4().hex[:8]}"
    scripted.master.make_user(name, "Viewless-pass-1")
    with Client(scripted.master.url) as c:
        token = c.login(name, "Viewless-pass-1").token
    headers = {"Authorization": f"Bearer {token}"}
    pairs = [(f"/api/v1/trials/{scripted.trial_id}/logs",) * 2,
             (f"/api/v1/experiments/{scripted.exp_id}/checkpoints",) * 2,
             (f"/api/v1/checkpoints/{scripted.uuids[2]}",) * 2,
             (f"/checkpoints/{scripted.uuids[2]}", f"/api/v1/checkpoints/{scripted.uuids[2]}/download")]
    for det_path, own_path in pairs:
        det = httpx.get(scripted.master.det_url + det_path, headers=headers)
        own = httpx.get(scripted.master.url + own_path, headers=headers)
        assert det.status_code == own.status_code, (det_path, det.text, own.text)
        assert det.status_code == 200, det.text


def test_a_filter_stalwart_cannot_apply_is_a_clear_400_never_ignored(scripted: Scripted) -> None:
    answer = scripted.get(f"/api/v1/trials/{scripted.trial_id}/logs", sources="master")
    assert answer.status_code == 400
    assert "sources" in answer.json()["error"]["error"]
    done = scripted.det("trial", "logs", "--source", "master", str(scripted.trial_id))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "sources: Stalwart does not filter trial logs by this yet" in done.stderr + done.stdout


def test_follow_returns_once_the_trial_is_over_and_its_lines_are_sent(scripted: Scripted) -> None:
    exp_id, trial_id = create(scripted.master, "det-logs-follow", 12, 0.5)
    started = time.monotonic()
    done = scripted.det("trial", "logs", "-f", str(trial_id), timeout=180)
    assert done.returncode == 0, done.stderr
    texts = log_texts(done.stdout)
    assert [t for t in texts if t.startswith("INFO: tick")] == [f"INFO: tick {i}" for i in range(12)]
    assert texts[-1] == "INFO: the end" or "INFO: the end" in texts
    assert time.monotonic() - started >= 3  # it followed the trial, not a finished log
    with scripted.master.client() as c:
        assert c.get_experiment(exp_id).experiment.state.terminal


def test_list_checkpoints_all_and_best(scripted: Scripted) -> None:
    listed = scripted.det("e", "list-checkpoints", str(scripted.exp_id))
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if any(u in line for u in scripted.uuids.values())]
    assert [next(s for s, u in scripted.uuids.items() if u in row) for row in rows] == [2, 4, 5]  # by report time
    assert "0.9" in rows[1] and "COMPLETED" in rows[1]
    best = scripted.det("e", "list-checkpoints", "--best", "1", str(scripted.exp_id))
    assert best.returncode == 0, best.stderr
    assert scripted.uuids[4] in best.stdout and scripted.uuids[2] not in best.stdout


def test_checkpoint_order_states_and_paging(scripted: Scripted) -> None:
    path = f"/api/v1/experiments/{scripted.exp_id}/checkpoints"
    best = scripted.get(path, sortByAttr="SORT_BY_SEARCHER_METRIC").json()
    assert [c["uuid"] for c in best["checkpoints"]] == [scripted.uuids[s] for s in (4, 2, 5)]  # unvalidated last
    worst = scripted.get(path, sortByAttr="SORT_BY_SEARCHER_METRIC", orderBy="ORDER_BY_ASC").json()
    assert [c["uuid"] for c in worst["checkpoints"]] == [scripted.uuids[s] for s in (2, 4, 5)]
    page = scripted.get(path, sortByAttr="SORT_BY_BATCH_NUMBER", orderBy="ORDER_BY_DESC", limit=1, offset=1).json()
    assert [c["uuid"] for c in page["checkpoints"]] == [scripted.uuids[4]]
    assert page["pagination"] == {"offset": 1, "limit": 1, "startIndex": 1, "endIndex": 2, "total": 3}
    assert scripted.get(path, states="STATE_DELETED").json()["checkpoints"] == []
    one = best["checkpoints"][0]
    assert one["state"] == "STATE_COMPLETED" and one["metadata"]["steps_completed"] == 4
    assert one["training"]["searcherMetric"] == 0.9 and one["training"]["validationMetrics"]["avgMetrics"] == {
        "score": 0.9}
    assert one["training"]["experimentConfig"]["checkpoint_storage"]["type"] == "shared_fs"
    assert all(isinstance(size, str) for size in one["resources"].values())
    assert scripted.get(path, sortByAttr="SORT_BY_NOTHING").status_code == 400


def stored_files(scripted: Scripted, uuid: str, into: pathlib.Path) -> pathlib.Path:
    """A copy of the checkpoint's files as the storage holds them."""
    with scripted.master.client() as c:
        storage = c.get_checkpoint(uuid).checkpoint.storage
    assert storage is not None
    with make_storage(dict(storage)).restore_path(uuid, into / "scratch") as path:
        copy = into / "stored"
        subprocess.run(["cp", "-r", str(path), str(copy)], check=True)
    return copy


def assert_same_files(stored: pathlib.Path, downloaded: pathlib.Path) -> None:
    names = sorted(str(p.relative_to(stored)) for p in stored.rglob("*") if p.is_file())
    got = sorted(str(p.relative_to(downloaded)) for p in downloaded.rglob("*") if p.is_file())
    assert "sub/deeper/weights.bin" in names
    assert set(got) - set(names) <= {"metadata.json"}  # the client writes it where the checkpoint has none
    assert set(names) <= set(got)
    _match, mismatch, errors = filecmp.cmpfiles(stored, downloaded, names, shallow=False)
    assert not mismatch and not errors


@pytest.mark.parametrize("mode", ["master", "auto"])
def test_checkpoint_download_gives_the_stored_files(scripted: Scripted, tmp_path: pathlib.Path, mode: str) -> None:
    uuid = scripted.uuids[4]
    done = scripted.det("checkpoint", "download", "--mode", mode, "-o", str(tmp_path / "out"), uuid)
    assert done.returncode == 0, done.stderr
    assert_same_files(stored_files(scripted, uuid, tmp_path), tmp_path / "out")


def test_the_archive_members_are_relative_to_the_checkpoint_root(scripted: Scripted) -> None:
    answer = scripted.get(f"/checkpoints/{scripted.uuids[2]}")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/gzip"
    with tempfile.TemporaryFile() as raw:
        raw.write(answer.content)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as tar:
            names = {n.removeprefix("./") for n in tar.getnames()}
    assert {"state.txt", "sub/deeper/weights.bin"} <= names and not any(n.startswith(("/", "..")) for n in names)
    refused = httpx.get(f"{scripted.master.det_url}/checkpoints/{scripted.uuids[2]}",
                        headers={"Authorization": f"Bearer {scripted.master.admin_token}",
                                 "Accept": "application/zip"})
    assert refused.status_code == 400 and "application/gzip" in refused.json()["error"]["error"]
    assert httpx.get(f"{scripted.master.det_url}/checkpoints/{scripted.uuids[2]}").status_code == 401


SDK_SCRIPT = """import json, sys
from determined.experimental import client
client.login(sys.argv[1], "admin", "")
best = client.get_experiment(int(sys.argv[2])).top_checkpoint()
path = best.download(sys.argv[3], mode=client.DownloadMode.MASTER)
print(json.dumps({"uuid": best.uuid, "path": path}))
"""


def test_sdk_top_checkpoint_downloads_the_best(scripted: Scripted, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "sdk"
    done = subprocess.run([det_client.python(), "-c", SDK_SCRIPT, scripted.master.det_url, str(scripted.exp_id),
                           str(out)], env=det_client.env(scripted.master.det_url, tmp_path / "sdk-config"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said == {"uuid": scripted.uuids[4], "path": str(out)}
    assert_same_files(stored_files(scripted, scripted.uuids[4], tmp_path), out)
