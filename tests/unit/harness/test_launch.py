"""The launcher turns Determined entrypoints into argv the way Determined does."""

from stalwart.harness.launch import command_for


def test_string_runs_under_sh_and_list_runs_as_argv():
    assert command_for("python3 train.py --x 1", False) == ["sh", "-c", "python3 train.py --x 1"]
    assert command_for(["python3", "train.py"], False) == ["python3", "train.py"]


def test_startup_hook_is_sourced_first():
    assert command_for("python3 train.py", True) == ["sh", "-c", ". ./startup-hook.sh && python3 train.py"]
    argv = command_for(["python3", "train.py"], True)
    assert argv[:3] == ["sh", "-c", '. ./startup-hook.sh && exec "$@"'] and argv[-2:] == ["python3", "train.py"]


def test_trial_class_entrypoints_run_the_pytorch_harness_through_determineds_launcher():
    assert command_for("model_def:MyTrial", False) == [
        "python3", "-m", "determined.launch.torch_distributed", "--trial", "model_def:MyTrial"]
    assert command_for("pkg.mod:Outer.Inner", False)[-1] == "pkg.mod:Outer.Inner"
