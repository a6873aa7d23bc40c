"""Determined 0.38.1 modules that trial code imports, as Stalwart's compat package provides them.

Each probe runs in a real Python process with the compat path first on PYTHONPATH, as the launcher starts a
trial. The expected values are read off Determined's source (release 0.38.1, harness/determined/...; the
file is named at each test).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from stalwart.harness.compat import COMPAT_PATH

_DROP = ("STALWART_", "DET_", "RANK", "LOCAL_RANK", "HOROVOD_", "PYTHONPATH")


def trial_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    return {**env, "PYTHONPATH": str(COMPAT_PATH), **extra}


def in_trial(code: str, **env: str) -> object:
    """Run `code` as a trial process would (compat first on the path); it prints one JSON value last."""
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=trial_env(**env), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1])


def test_check_raises_check_failed_error_with_determineds_messages() -> None:
    # harness/determined/common/check.py
    got = in_trial("""
        import json
        from determined.common import check
        calls = [("check_true", (0, "why")), ("check_false", ([1],)), ("check_none", (3, "r")),
                 ("check_not_none", (None,)), ("check_eq", (1, 2, "r")), ("check_not_eq", (1, 1)),
                 ("check_gt", (1, 2)), ("check_gt_eq", (1, 2, "r")), ("check_lt", (2, 1)), ("check_lt_eq", (2, 1)),
                 ("check_eq_len", ([1], [1, 2], "r")), ("check_len", ([1], 2, "r")), ("check_len", ([1], 2)),
                 ("check_in", ("x", {"a": 1, "b": 2}, "r")), ("check_in", ("x", ["a"])),
                 ("check_not_in", ("a", ["a"], "r")), ("check_type", (True, int, "r")),
                 ("check_isinstance", (1, (str, float))), ("check_not_isinstance", (True, int, "r")),
                 ("check_issubclass", (bool, str)), ("eq", (1, 2)), ("len_eq", ("ab", 1))]
        out = []
        for name, args in calls:
            try:
                getattr(check, name)(*args)
                out.append(None)
            except check.CheckFailedError as err:
                out.append(str(err))
        passing = [check.check_true(1), check.check_eq([1], [1]), check.check_isinstance(True, int),
                   check.check_len("ab", 2), check.check_in("a", {"a": 1}), check.check_type(1, int)]
        print(json.dumps([out, passing]))
    """)
    assert got == [[
        "CHECK FAILED! Got 0, expected True: why",
        "CHECK FAILED! Got [1], expected False",
        "CHECK FAILED! Got 3, expected None: r",
        "CHECK FAILED! Got None, expected non-None",
        "CHECK FAILED! Got 1, expected 2: r",
        "CHECK FAILED! Got 1, expected value != 1",
        "CHECK FAILED! Got 1, expected value > 2",
        "CHECK FAILED! Got 1, expected value >= 2: r",
        "CHECK FAILED! Got 2, expected value < 1",
        "CHECK FAILED! Got 2, expected value <= 1",
        "CHECK FAILED! Expected lengths 1 and 2 to be equal; values: [1], [1, 2]: r",
        "CHECK FAILED! Got length 1, expected length 2: r. Values: [1]",
        "CHECK FAILED! Got length 1, expected length 2. Values: [1]",
        "CHECK FAILED! 'x' is not in ['a', 'b']: r",
        "CHECK FAILED! 'x' is not in ['a']",
        "CHECK FAILED! Got a, expected value not in ['a']: r",
        "CHECK FAILED! True has type <class 'bool'>, expected type <class 'int'>: r",
        "CHECK FAILED! 1 has type <class 'int'>, expected isinstance of (<class 'str'>, <class 'float'>)",
        "CHECK FAILED! True has type <class 'bool'>, expected not isinstance of <class 'int'>: r",
        "CHECK FAILED! <class 'bool'> has type <class 'type'>, expected issubclass of <class 'str'>",
        "CHECK FAILED! Got 1, expected 2",
        "CHECK FAILED! Got length 2, expected length 1. Values: ab",
    ], [None] * 6]


def test_common_util_reads_yaml_as_yaml_1_2_and_formats_as_determined() -> None:
    # harness/determined/common/util.py (ruamel.yaml's safe, pure YAML: YAML 1.2 scalars, sorted keys)
    got = in_trial("""
        import io, json, random
        from determined.common import util
        loaded = util.yaml_safe_load("a: yes\\nb: 1e3\\nc: 017\\nd: 0o17\\ne: 1:20\\nf: TRUE\\ng: ~\\nh: 0x1F\\n")
        stream = io.StringIO()
        util.yaml_safe_dump({"k": 1}, stream)
        @util.preserve_random_state
        def draw():
            return random.random()
        random.seed(5)
        first = draw()
        try:
            util.get_max_retries_config()
            master_only = None
        except NotImplementedError as err:
            master_only = str(err)
        print(json.dumps({
            "loaded": loaded,
            "dumped": util.yaml_safe_dump({"b": [1, 2], "a": {"y": "yes", "x": "1e3", "n": None}}),
            "block": util.yaml_safe_dump({"b": [1, 2]}, default_flow_style=False),
            "stream": stream.getvalue(),
            "sizes": [util.sizeof_fmt(v) for v in (0, 1023, 1024, 123456789, -2048, 2**90)],
            "bools": [util.strtobool(v) for v in ("", "No", "OFF", "y", "maybe", "0", "1")],
            "chunks": list(util.chunks("ABCDEFG", 3)),
            "ts": str(util.parse_protobuf_timestamp("2023-08-22T22:06:45.242391275Z")),
            "is_ts": [util.is_protobuf_timestamp(t) for t in ("2023-08-22T22:06:45.2Z", "2023-08-22T22:06:45+00:00")],
            "random_kept": first == draw(),
            "master_only": master_only,
        }))
    """)
    assert got["loaded"] == {"a": "yes", "b": 1000.0, "c": 17, "d": 15, "e": "1:20", "f": True, "g": None, "h": 31}
    assert got["dumped"] == "a: {n: null, x: '1e3', y: yes}\nb: [1, 2]\n"
    assert got["block"] == "b:\n- 1\n- 2\n" and got["stream"] == "{k: 1}\n"
    assert got["sizes"] == ["0.0B", "1023.0B", "1.0KB", "117.7MB", "-2.0KB", "1024.0YB"]
    assert got["bools"] == [False, False, False, True, True, False, True]
    assert got["chunks"] == ["ABC", "DEF", "G"]
    assert got["ts"] == "2023-08-22 22:06:45+00:00" and got["is_ts"] == [True, False]
    assert got["random_kept"] is True
    assert "Determined's own CLI and REST session" in got["master_only"]
    assert "determined.experimental.client" in got["master_only"]


def test_make_metrics_and_calculate_batch_sizes_give_determineds_values() -> None:
    # harness/determined/util.py: make_metrics, calculate_batch_sizes (and det.errors.InvalidExperimentException)
    got = in_trial("""
        import json
        import numpy as np
        import determined as det
        from determined import util
        from determined.common import check
        metrics = util.make_metrics(4, [{"loss": 1.0, "acc": None, "v": [1, 2]}, {"loss": np.float32(2), "acc": 0.5,
                                                                                  "v": [3]}])
        sizes = [util.calculate_batch_sizes({"global_batch_size": g}, s, "PyTorchTrial") for g, s in
                 ((32, 4), (33, 4), (5, 0))]
        errors = []
        for hparams, slots in (({}, 1), ({"global_batch_size": 3.0}, 1), ({"global_batch_size": 2}, 4)):
            try:
                util.calculate_batch_sizes(hparams, slots, "PyTorchTrial")
            except det.errors.InvalidExperimentException as err:
                errors.append(str(err))
        try:
            util.make_metrics(None, [{"a": 1}, {"b": 2}])
        except check.CheckFailedError as err:
            inconsistent = str(err)
        print(json.dumps({"avg": metrics["avg_metrics"], "n": metrics["num_inputs"],
                          "no_n": "num_inputs" in util.make_metrics(None, [{"a": 1}]),
                          "sizes": sizes, "errors": errors, "inconsistent": inconsistent}))
    """)
    assert got["avg"] == {"loss": 1.5, "acc": 0.5, "v": None} and got["n"] == 4 and got["no_n"] is False
    assert got["sizes"] == [[8, 32], [8, 32], [5, 5]]
    assert got["errors"] == [
        "Please specify an integer `global_batch_size` hyperparameter in your experiment config.  It is a required "
        "hyperparameter for PyTorchTrial-based training.",
        "The `global_batch_size` hyperparameter must be an integer value, not float",
        "Please set the `global_batch_size` hyperparameter to be greater or equal to the number of slots. "
        "Current batch_size: 2, slots_per_trial: 4.",
    ]
    assert got["inconsistent"].startswith("CHECK FAILED! Got dict_keys(['a', 'b']), expected dict_keys(['a'])")
    assert got["inconsistent"].endswith(": inconsistent training metrics: index: 0")


def test_util_json_timing_masking_and_small_helpers() -> None:
    # harness/determined/util.py: json_encode, humanize_float, make_timing_log, mask_config_dict, merge_dicts, ...
    got = in_trial("""
        import datetime, enum, json, uuid
        import numpy as np
        from determined import util
        class Color(enum.Enum):
            RED = 1
        config = {"checkpoint_storage": {"type": "s3", "access_key": "k", "secret_key": "s", "bucket": "b"},
                  "environment": {"registry_auth": {"password": "p"}}, "data": {"secrets": {"a": 1}}}
        print(json.dumps({
            "json": util.json_encode({"i": np.int64(3), "f": [float("nan"), float("inf"), -float("inf")],
                                      "a": np.arange(2), "b": b"x", "d": datetime.datetime(2020, 1, 2, 3, 4, 5),
                                      "e": Color.RED, "u": uuid.UUID(int=5)}, sort_keys=True),
            "humane": [util.humanize_float(n) for n in (0, 1.33333333, 3333.3333, 0.000123456, 12345.678)],
            "timing": [util.make_timing_log("trained", 2.5, 1000, 31), util.make_timing_log("x", 0, 1, 1)],
            "masked": util.mask_config_dict(config), "original_kept": config["checkpoint_storage"]["access_key"],
            "merged": util.merge_dicts({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 5}, "e": {"x": 1}}),
            "dups": sorted(util.filter_duplicates([3, 1, 3, 2, 1, 1])),
            "legacy": [util.match_legacy_trial_class(a) for a in ("model_def:Trial", "python3 train.py")],
            "scalar": [util.is_numerical_scalar(v) for v in (1, np.float32(2), np.array(3.0), np.array([1]), "1")],
        }))
    """)
    assert got["json"] == ('{"a": [0, 1], "b": "x", "d": "2020-01-02T03:04:05", "e": "RED", '
                           '"f": ["NaN", "Infinity", "-Infinity"], "i": 3, '
                           '"u": "00000000-0000-0000-0000-000000000005"}')
    assert got["humane"] == [0, 1.333, 3333.0, 0.0001235, 12346.0]
    assert got["timing"] == ["trained: 1000 records in 2.5s (400.0 records/s), in 31 batches (12.4 batches/s)",
                             "x: 1 records in 0s (inf records/s), in 1 batches (inf batches/s)"]
    assert got["masked"] == {"checkpoint_storage": {"type": "s3", "access_key": "********",
                                                    "secret_key": "********", "bucket": "b"},
                             "environment": {"registry_auth": {"password": "********"}},
                             "data": {"secrets": {"a": "********"}}}
    assert got["original_kept"] == "k"
    assert got["merged"] == {"a": {"b": 5, "c": 2}, "d": 1, "e": {"x": 1}}
    assert got["dups"] == [1, 3] and got["legacy"] == [True, False]
    assert got["scalar"] == [True, True, True, False, False]


def test_forward_signals_reaches_the_child_and_its_children() -> None:
    # harness/determined/util.py: forward_signals(p, *signums, signal_children=...)
    got = in_trial("""
        import json, os, signal, subprocess, sys, time
        from determined import util
        spawn = "import subprocess, time; print(subprocess.Popen(['sleep', '30']).pid, flush=True); time.sleep(30)"
        child = subprocess.Popen([sys.executable, "-c", spawn], stdout=subprocess.PIPE, text=True)
        grandchild = int(child.stdout.readline())
        with util.forward_signals(child, signal.SIGTERM, signal_children=True):
            os.kill(os.getpid(), signal.SIGTERM)
            code = child.wait(timeout=10)
        def running(pid):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
            except FileNotFoundError:
                return False
        deadline = time.time() + 5
        while running(grandchild) and time.time() < deadline:
            time.sleep(0.05)
        grandchild_alive = running(grandchild)
        print(json.dumps({"code": code, "handler_back": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
                          "grandchild_alive": grandchild_alive}))
    """)
    assert got == {"code": -15, "handler_back": True, "grandchild_alive": False}


def _import_error(statement: str) -> object:
    """The ImportError's message when a trial process runs `statement` (None: it imported)."""
    return in_trial(f"""
        import json
        try:
            {statement}
            message = None
        except ImportError as err:
            message = str(err)
        print(json.dumps(message))
    """)


def test_rest_bindings_are_refused_with_the_sdk_to_use() -> None:
    got = _import_error("from determined.common.api import bindings")
    assert "Determined's generated REST client" in got and "not part of Stalwart" in got
    assert "determined.experimental.client" in got and "stalwart.experimental.client" in got


def test_deepspeed_trial_is_refused_with_why() -> None:
    got = _import_error("from determined.pytorch.deepspeed import DeepSpeedTrial")
    assert "not implemented by Stalwart" in got and "torch than the 2.13" in got and "PyTorchTrial" in got


def _wrap_rank(rank: str, *cmd: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "determined.launch.wrap_rank", rank, "--", *cmd],
                          env=trial_env(**env), capture_output=True, text=True, timeout=60)


def test_wrap_rank_takes_a_number_or_an_environment_variable() -> None:
    # harness/determined/launch/wrap_rank.py: RANK is digits, else comma-separated variable names tried in order
    script = "import os, sys; print('out', os.environ.get('RANK')); print('err', file=sys.stderr); sys.exit(3)"
    by_number = _wrap_rank("2", sys.executable, "-c", script)
    assert by_number.returncode == 3
    assert by_number.stdout == "[rank=2] out None\n" and by_number.stderr == "[rank=2] err\n"

    by_name = _wrap_rank("RANK", sys.executable, "-c", script, RANK="5")
    assert (by_name.returncode, by_name.stdout) == (3, "[rank=5] out 5\n")

    first_set = _wrap_rank("LOCAL_RANK,RANK", "echo", "-x", RANK="5", LOCAL_RANK="1")
    assert (first_set.returncode, first_set.stdout) == (0, "[rank=1] -x\n")

    missing = _wrap_rank("LOCAL_RANK", "echo", "never")
    assert missing.returncode == 1 and missing.stdout == ""
    assert "rank environment variable is set to LOCAL_RANK, but it is not in os.environ" in missing.stderr


def _trial_info(tmp_path: pathlib.Path, storage: pathlib.Path) -> pathlib.Path:
    config = {"checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)}}
    info = {"master_url": "http://127.0.0.1:1", "cluster_id": "c", "agent_id": "a", "task_id": "t",
            "allocation_id": "alloc-1", "session_token": "x", "latest_checkpoint": None,
            "trial": {"trial_id": 3, "experiment_id": 7, "trial_seed": 1, "hparams": {}, "config": config}}
    path = tmp_path / "info.json"
    path.write_text(json.dumps(info))
    return path


def test_tensorboard_base_path_is_the_trials_and_the_metric_writer_fills_it(tmp_path: pathlib.Path) -> None:
    # harness/determined/tensorboard/build.py (paths), base.py (get_metric_writer), metric_writers/callback.py
    storage = tmp_path / "storage"
    got = in_trial("""
        import json
        from determined import tensorboard
        writer = tensorboard.get_metric_writer()
        writer.on_train_step_end(4, {"loss": 0.25, "avg_only": 2.0, "name": "text"},
                                 batch_metrics=[{"loss": 1.0}, {"loss": 0.5}])
        writer.on_validation_step_end(4, {"loss": 0.75, "validation_acc": 0.9})
        print(json.dumps({"base": str(tensorboard.get_base_path({})),
                          "explicit": str(tensorboard.get_base_path({"base_path": "/data"})),
                          "sync": str(tensorboard.get_sync_path("c", "7", "3"))}))
    """, STALWART_INFO_FILE=str(_trial_info(tmp_path, storage)), DET_ALLOCATION_ID="alloc-1")
    trial_dir = storage / "tensorboard" / "experiment" / "7" / "trial" / "3"
    assert got == {"base": str(trial_dir), "explicit": "/data/tensorboard-alloc-1-0",
                   "sync": "c/tensorboard/experiment/7/trial/3"}

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(trial_dir))
    events.Reload()
    scalars = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    assert scalars == {"Determined/loss": [(2, 1.0), (3, 0.5)], "Determined/avg_only": [(4, 2.0)],
                       "Determined/val_loss": [(4, 0.75)], "Determined/validation_acc": [(4, pytest.approx(0.9))]}


def test_tensorboard_off_cluster_paths_and_rank_aware_names() -> None:
    # harness/determined/tensorboard/build.py get_base_path; tensorboard/util.py get_rank_aware_path
    got = in_trial("""
        import json, pathlib
        from determined import tensorboard
        from determined.tensorboard import util
        names = ["h/ip-1.input_pipeline.pb", "a/w.1619499959628.pt.trace.json", "w.pt.trace.json.gz", "e.tfevents"]
        try:
            tensorboard.build("c", "1", "2", {"type": "shared_fs"})
        except NotImplementedError as err:
            refused = str(err)
        print(json.dumps({"base": str(tensorboard.get_base_path({})),
                          "ranked": [str(util.get_rank_aware_path(pathlib.Path(n), 3)) for n in names],
                          "refused": refused}))
    """, DET_ALLOCATION_ID="a1", HOROVOD_RANK="2")
    assert got["base"] == "/tmp/tensorboard-a1-2"
    assert got["ranked"] == ["h/ip-1#3.input_pipeline.pb", "a/w#3.1619499959628.pt.trace.json",
                             "w#3.pt.trace.json.gz", "e.tfevents"]
    assert "core_context.train.get_tensorboard_path()" in got["refused"]
