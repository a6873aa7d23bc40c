"""The launcher turns Determined entrypoints into argv the way Determined does."""

import pytest

from stalwart.harness.launch import command_for


def test_string_runs_under_sh_and_list_runs_as_argv():
    assert command_for("python3 train.py --x 1", False) == ["sh", "-c", "python3 train.py --x 1"]
    assert command_for(["python3", "train.py"], False) == ["python3", "train.py"]


def test_startup_hook_is_sourced_first():
    assert command_for("python3 train.py", True) == ["sh", "-c", ". ./startup-hook.sh && python3 train.py"]
    argv = command_for(["python3", "train.py"], True)
    assert argv[:3] == ["sh", "-c", '. ./startup-hook.sh && exec "$@"'] and argv[-2:] == ["python3", "train.py"]


def test_trial_class_entrypoints_are_refused_with_a_clear_message():
    with pytest.raises(SystemExit, match="names a Trial class"):
        command_for("model_def:MyTrial", False)
