"""The custom searcher worker's protocol, and `determined.searcher` as user code imports it."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from stalwart.config.experiment import load_experiment_config
from stalwart.harness.compat import COMPAT_PATH
from stalwart.harness.searcher_worker import Worker, serve

CONFIG = load_experiment_config(
    "entrypoint: python3 train.py\n"
    "searcher: {name: custom, metric: loss, unit: batches, search_method: 'mysearch:Two'}\n"
    "checkpoint_storage: {type: shared_fs, host_path: /tmp}\n").config

USER_CODE = '''
from determined import searcher

class Two(searcher.SearchMethod):
    def initial_operations(self, state):
        create = searcher.Create(7, {"lr": 0.1}, None)
        return [create, searcher.ValidateAfter(7, 10)]

    def on_validation_completed(self, state, request_id, metric, train_length):
        if metric > 1:
            raise ValueError("loss too high")
        return [searcher.Close(request_id)]

    def on_trial_closed(self, state, request_id):
        return [searcher.Shutdown()]
'''


def _talk(tmp_path, calls: list[dict]) -> list[dict]:
    (tmp_path / "mysearch.py").write_text(USER_CODE)
    sys.path[:0] = [str(tmp_path), str(COMPAT_PATH)]
    saved = {k: v for k, v in sys.modules.items() if k == "determined" or k.startswith("determined.")}
    for k in saved:
        del sys.modules[k]
    try:
        out = io.StringIO()
        serve(Worker("mysearch:Two"), io.StringIO("".join(json.dumps(c) + "\n" for c in calls)), out)
        return [json.loads(line) for line in out.getvalue().splitlines()]
    finally:
        sys.path.remove(str(tmp_path))
        sys.path.remove(str(COMPAT_PATH))
        sys.modules.pop("mysearch", None)
        for k in [k for k in sys.modules if k == "determined" or k.startswith("determined.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_worker_answers_each_call_and_reports_user_errors_as_text(tmp_path):
    replies = _talk(tmp_path, [
        {"call": "hello", "args": [CONFIG]},
        {"call": "initial_operations"},
        {"call": "on_validation_completed", "args": ["7", {"loss": 5.0, "batches": 10}, 10]},
        {"call": "snapshot"},
    ])
    assert [r["ok"] for r in replies] == [True, True, False, True]
    create = replies[1]["result"][0]
    assert create["type"] == "Create" and create["request_id"] == "7" and create["hparams"] == {"lr": 0.1}
    assert create["length"] == 10
    assert replies[2]["error"] == "ValueError: loss too high" and "Traceback" in replies[2]["traceback"]
    assert "trials" in replies[3]["result"]


def test_worker_needs_hello_first_and_names_a_missing_class(tmp_path):
    replies = _talk(tmp_path, [{"call": "initial_operations"}])
    assert not replies[0]["ok"] and "not loaded yet" in replies[0]["error"]
    bad = Worker("mysearch:Nope")
    (tmp_path / "mysearch.py").write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        out = io.StringIO()
        serve(bad, io.StringIO(json.dumps({"call": "hello", "args": [CONFIG]}) + "\n"), out)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mysearch", None)
    assert "has no attribute 'Nope'" in json.loads(out.getvalue())["error"]


def test_determined_searcher_runners_are_refused_with_what_to_do_instead():
    code = "from determined.searcher import RemoteSearchRunner"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(COMPAT_PATH), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 1
    assert "search_method" in res.stderr and "not implemented by Stalwart" in res.stderr
