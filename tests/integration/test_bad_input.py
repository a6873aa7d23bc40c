"""Bad input gets one clear error naming the problem, and nothing already stored changes."""

from __future__ import annotations

import base64
import io
import json
import tarfile

import httpx
import pytest

from integration.helpers import DIGITS, create, digits_config, first_trial, live_run, metrics, wait_state
from stalwart.api.errors import ContextError, InvalidRequest, InvalidStateError
from stalwart.client import Client

pytestmark = pytest.mark.integration


def _count(c) -> int:
    return c.client().get("/experiments")["total"]


def _create_cli(c, tmp_path, text: str, context=DIGITS):
    cfg = tmp_path / "exp.yaml"
    cfg.write_text(text)
    return c.cli("e", "create", str(cfg), str(context))


@pytest.mark.parametrize("text, expected", [
    ("name: [unclosed\nsearcher: {}", "malformed YAML at line"),
    (digits_config().replace("metric:", "metirc:"), "searcher.metirc: unknown key; did you mean 'metric'?"),
    (digits_config().replace("max_restarts: 2", "max_restarts: many"), "max_restarts:"),
    (digits_config() + "resources:\n  slots_per_trial: two\n", "resources.slots_per_trial:"),
    (digits_config().replace("metric: validation_accuracy", "smaller_is_better: false"), "searcher.metric: required"),
    (digits_config().replace("python3 train.py", "python3 missing_script.py"),
     "'missing_script.py' is not in the context"),
    (digits_config(searcher={"name": "grid", "metric": "m"},
                   hyperparameters={"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}}),
     "hyperparameters.lr.count: required for the grid searcher"),
    (digits_config(searcher={"name": "random", "metric": "m", "max_trials": 2},
                   hyperparameters={"lr": {"type": "double", "minval": 1.0, "maxval": 0.1}}),
     "hyperparameters.lr.minval: must be less than maxval"),
    (digits_config(searcher={"name": "random", "metric": "m", "max_trials": 2},
                   hyperparameters={"act": {"type": "categorical", "vals": []}}), "hyperparameters.act.vals:"),
])
def test_invalid_configs_are_refused_before_anything_is_stored(cluster, tmp_path, text, expected):
    before = _count(cluster)
    res = _create_cli(cluster, tmp_path, text)
    assert res.returncode == 2, res.stdout + res.stderr
    assert expected in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert _count(cluster) == before


def test_context_over_95_mib_is_refused_naming_the_largest_files(cluster, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    with open(ctx / "weights.bin", "wb") as f:
        f.truncate(96 * 1024 * 1024)  # sparse: no real disk used
    res = _create_cli(cluster, tmp_path, digits_config(), ctx)
    assert res.returncode == 2
    assert "95 MiB" in res.stderr and "weights.bin" in res.stderr and ".detignore" in res.stderr
    assert _count(cluster) == 0


def _archive(member: tarfile.TarInfo, data: bytes = b"x") -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        ok = tarfile.TarInfo("train.py")
        ok.size = 1
        tar.addfile(ok, io.BytesIO(b"#"))
        if member.isreg():
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        else:
            tar.addfile(member)
    return base64.b64encode(buf.getvalue()).decode()


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize("member", [
    tarfile.TarInfo("../escape.py"),
    tarfile.TarInfo("/etc/evil.py"),
    tarfile.TarInfo("a/../../escape.py"),
    _link("passwd", "/etc/passwd"),
    _link("hard", "/etc/shadow", tarfile.LNKTYPE),
])
def test_hostile_context_archives_are_refused(cluster, member):
    with pytest.raises(ContextError):
        cluster.client().post("/experiments", {"config": digits_config(), "context": _archive(member)})
    assert _count(cluster) == 0


def test_bad_metric_reports_are_refused_and_nothing_is_stored(cluster):
    c = cluster
    exp_id = create(c, digits_config(hyperparameters__batch_sleep=0.05))
    trial_id = first_trial(c, exp_id)
    run = c.wait_for(lambda: live_run(c, trial_id), what="the trial to run")
    token = _token_of(c, run["id"])
    as_trial = Client(c.url, allocation_token=token)

    def post_raw(body: dict) -> httpx.Response:  # httpx itself refuses to encode NaN, a buggy client may not
        return httpx.post(f"{c.url}/api/v1/trials/{trial_id}/metrics", content=json.dumps(body),
                          headers={"x-allocation-token": token, "content-type": "application/json"})

    resp = post_raw({"reports": [
        {"group": "validation", "steps_completed": 7, "metrics": {"validation_accuracy": 0.5}},
        {"group": "training", "steps_completed": 2**63, "metrics": {"loss": float("nan")}},
    ]})
    assert resp.status_code == 400
    assert "reports[1].steps_completed: expected an integer in 0..9223372036854775807" in resp.text
    assert 7 not in [m["steps_completed"] for m in metrics(c, trial_id, "validation")]
    with pytest.raises(InvalidRequest, match="metadata.steps_completed: required"):
        as_trial.post("/checkpoints", {"uuid": "6f1c7a4e-59a3-4b8e-9d0c-3f6f2a1d7e10", "trial_id": trial_id,
                                       "resources": {}, "metadata": {}})
    c.cli("e", "kill", str(exp_id), check=True)
    wait_state(c, exp_id, "CANCELED")
    with pytest.raises(InvalidStateError, match="already CANCELED"):
        c.client().post(f"/experiments/{exp_id}/kill")
    res = c.cli("e", "pause", str(exp_id))
    assert res.returncode == 4 and "only an ACTIVE experiment can be paused" in res.stderr
    res = c.cli("e", "describe", "999")
    assert res.returncode == 3 and "experiment 999 not found" in res.stderr and "Traceback" not in res.stderr


def _token_of(c, allocation_id: str) -> str:
    from integration.test_trust import _trial_env

    return _trial_env(allocation_id)["STALWART_ALLOCATION_TOKEN"]


def test_a_searcher_metric_no_validation_reports_errors_only_a_searcher_that_needs_it(cluster):
    # Determined's rule: `single` ignores validations, so its trial trains on and the experiment completes
    c = cluster
    single = create(c, digits_config(searcher__metric="val_f1"))
    d = wait_state(c, single, {"ERROR", "COMPLETED"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    assert d["trials"][0]["state"] == "COMPLETED"
    # ASHA ranks trials by the metric: the experiment ends in ERROR naming it; the master fails no trial for it
    asha = create(c, digits_config(searcher={"name": "adaptive_asha", "metric": "val_f1", "max_trials": 1,
                                             "max_time": 400, "time_metric": "batches"}))
    d = wait_state(c, asha, {"ERROR", "COMPLETED"})
    assert d["experiment"]["state"] == "ERROR"
    msg = d["experiment"]["error_message"]
    assert "searcher metric 'val_f1'" in msg and "validation_accuracy, validation_loss" in msg
    assert d["trials"][0]["restarts"] == 0
