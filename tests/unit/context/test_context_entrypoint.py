"""Tests for checking that an entrypoint's file is in the context."""

from __future__ import annotations

import pytest

from stalwart.context import check_entrypoint

NAMES = {
    "train.py",
    "model_def.py",
    "run.sh",
    "scripts/launch.sh",
    "pkg/__init__.py",
    "pkg/trainer.py",
    "pkg/cli/__main__.py",
    "nested/deep/mod.py",
}


@pytest.mark.parametrize(
    "entrypoint",
    [
        "model_def:MyTrial",
        "pkg.trainer:Trainer",
        "pkg:Trial",
        "nested.deep.mod:Trial",
        "python3 train.py",
        "python train.py --epochs 3",
        "python3.11 ./train.py",
        "/usr/bin/python3 train.py",
        "/opt/conda/bin/python -u -W ignore train.py",
        "python3 -X dev -B train.py",
        ["python3", "train.py", "--lr", "0.1"],
        "python3 -m pkg.trainer",
        "python3 -m pkg.cli --flag",
        "python3 -mpkg.trainer",
        "python3 -m determined.launch.torch_distributed python3 train.py",
        "python3 -m determined.launch.torch_distributed --nproc_per_node 2 -- python3 train.py",
        "python3 -m determined.launch.horovod --autohorovod --trial model_def:MyTrial",
        "python3 -m determined.launch.torch_distributed -- --trial pkg.trainer:T",
        "python3 -m determined.launch.deepspeed --trial=model_def:T",
        "./run.sh",
        "run.sh",
        "scripts/launch.sh --fast",
        "sh run.sh",
        "bash -x -o pipefail scripts/launch.sh",
        "FOO=1 BAR=2 python3 train.py",
        "env -u HOME FOO=1 python3 train.py",
    ],
)
def test_present_entrypoints(entrypoint):
    assert check_entrypoint(entrypoint, NAMES) == []


@pytest.mark.parametrize(
    "entrypoint",
    [
        "echo hi",
        "bash -c 'python3 missing.py'",
        "bash -lc 'anything'",
        "python3 -c 'import missing'",
        "python3",
        "python3 -",
        "python3 /abs/path/train.py",
        "python3 ../outside.py",
        "python3 $HOME/train.py",
        "/abs/run.sh",
        "python3 -m some_installed_module --config conf/x.yaml",
        "python3 -m http.server 8000",
        "torchrun --nproc_per_node 2 train.py",
        "FOO=1",
    ],
)
def test_unchecked_entrypoints(entrypoint):
    assert check_entrypoint(entrypoint, NAMES) == []


@pytest.mark.parametrize(
    "entrypoint, missing",
    [
        ("python3 missing.py", "'missing.py'"),
        (["python3", "missing.py"], "'missing.py'"),
        ("python -u ./missing.py", "'./missing.py'"),
        ("/usr/local/bin/python3 missing.py", "'missing.py'"),
        ("./missing.sh", "'./missing.sh'"),
        ("missing.sh", "'missing.sh'"),
        ("bin/tool", "'bin/tool'"),
        ("sh missing.sh", "'missing.sh'"),
        ("bash -e missing.sh arg", "'missing.sh'"),
        ("python3 -m determined.launch.torch_distributed python3 missing.py", "'missing.py'"),
        ("python3 -m determined.launch.torch_distributed -- python3 missing.py", "'missing.py'"),
        ("python3 -m determined.launch.torch_distributed --x 1 -- ./missing.sh", "'./missing.sh'"),
    ],
)
def test_missing_scripts(entrypoint, missing):
    problems = check_entrypoint(entrypoint, NAMES)
    assert len(problems) == 1
    assert problems[0].startswith(f"entrypoint: {missing} is not in the context directory (")


def test_message_lists_the_files_there():
    (problem,) = check_entrypoint("python3 missing.py", NAMES)
    assert problem == (
        "entrypoint: 'missing.py' is not in the context directory (files there: "
        "model_def.py, nested/, pkg/, run.sh, scripts/, train.py)"
    )


def test_message_lists_at_most_ten_files():
    names = {f"f{i:02}.py" for i in range(25)}
    (problem,) = check_entrypoint("python3 train.py", names)
    assert problem.endswith("(files there: f00.py, f01.py, f02.py, f03.py, f04.py, f05.py, "
                            "f06.py, f07.py, f08.py, f09.py, ...)")


def test_message_lists_the_nearest_existing_directory():
    (problem,) = check_entrypoint("python3 pkg/missing.py", NAMES)
    assert "files there: pkg/__init__.py, pkg/cli/, pkg/trainer.py)" in problem


def test_message_for_an_empty_context():
    assert check_entrypoint("python3 train.py", set()) == [
        "entrypoint: 'train.py' is not in the context directory (the context directory is empty)"
    ]


@pytest.mark.parametrize(
    "entrypoint, module",
    [
        ("missing_def:Trial", "'missing_def'"),
        ("pkg.missing:Trial", "'pkg.missing'"),
        ("python3 -m determined.launch.horovod --trial missing_def:T", "'missing_def'"),
    ],
)
def test_missing_trial_class_module(entrypoint, module):
    (problem,) = check_entrypoint(entrypoint, NAMES)
    assert problem.startswith(f"entrypoint: trial class module {module} is not in the context")
    assert "expected " in problem and ".py or " in problem and "/__init__.py" in problem


def test_local_module_run_with_dash_m_must_exist():
    (problem,) = check_entrypoint("python3 -m pkg.missing", NAMES)
    assert problem.startswith(
        "entrypoint: module 'pkg.missing' is not in the context directory "
        "(expected pkg/missing.py or pkg/missing/__main__.py; files there: pkg/__init__.py"
    )


def test_a_package_without_main_cannot_be_run_with_dash_m():
    assert check_entrypoint("python3 -m pkg", NAMES) != []


def test_names_with_directory_entries_and_dot_slash():
    names = ["./", "./src/", "./src/train.py", "data/"]
    assert check_entrypoint("python3 src/train.py", names) == []
    (problem,) = check_entrypoint("python3 train.py", names)
    assert "files there: data/, src/)" in problem


def test_names_from_validate_archive(tmp_path):
    from stalwart.context import pack_context, validate_archive

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("")
    names = validate_archive(pack_context(tmp_path).data)
    assert names == ["pkg/", "pkg/train.py"]
    assert check_entrypoint("python3 pkg/train.py", names) == []
    assert check_entrypoint("python3 -m pkg.train", names) == []
    assert check_entrypoint("python3 pkg/other.py", names) != []


def test_unparsable_and_empty_entrypoints():
    (problem,) = check_entrypoint("python3 'unterminated", NAMES)
    assert problem.startswith("entrypoint: cannot parse")
    assert check_entrypoint("", NAMES) == ["entrypoint: it is empty"]
    assert check_entrypoint([], NAMES) == ["entrypoint: it is empty"]
