"""Smaller things of issue 26, each run as a user runs it (the `stalwart` program in its own process, its output
piped as a script reads it): piped output is never wrapped for width, `e create --test-mode --local` keeps its
checkpoints under $STALWART_HOME, and the 95 MiB refusal names each of the largest files once. No master is
involved: each of these happens before (or without) one."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import yaml

from stalwart.testing import free_port

LONG_NAME = "a_file_name_long_enough_that_eighty_columns_could_never_hold_the_warning_that_names_it.bin"
SAVES_A_CHECKPOINT = """
from stalwart import core

with core.init() as ctx:
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
        (path / "weights.txt").write_text("w")
    print("saved", uuid, flush=True)
"""


def _env(tmp_path: pathlib.Path, **extra: str) -> dict[str, str]:
    """No master anywhere (a closed port), a home of the test's own, and a $HOME that must stay empty."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("STALWART_MASTER", "DET_MASTER", "STALWART_HOME", "XDG_DATA_HOME", "COLUMNS")}
    env.update(STALWART_MASTER=f"http://127.0.0.1:{free_port()}", HOME=str(tmp_path / "user-home"),
               STALWART_HOME=str(tmp_path / "stalwart-home"), **extra)
    return env


def _stalwart(env: dict[str, str], *args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def _config(tmp_path: pathlib.Path, entrypoint: str) -> pathlib.Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "small", "entrypoint": entrypoint, "searcher": {
        "name": "single", "metric": "loss", "max_length": {"batches": 1}}}))
    return path


def test_piped_messages_are_not_wrapped_at_80_columns(tmp_path: pathlib.Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    (ctx / LONG_NAME).symlink_to(tmp_path / "nowhere")  # skipped, with a warning that names it
    res = _stalwart(_env(tmp_path), "e", "create", str(_config(tmp_path, "python3 train.py")), str(ctx))
    assert res.returncode != 0  # no master answers: what matters is how the messages before that read
    warning = next(line for line in res.stderr.splitlines() if line.startswith("warning: skipped"))
    assert warning.startswith(f"warning: skipped {LONG_NAME}: it ") and len(warning) > 120, res.stderr
    error = next(line for line in res.stderr.splitlines() if line.startswith("Error: "))
    assert "127.0.0.1" in error and len(error) > 80, res.stderr  # one line, however long


def test_piped_tables_and_long_lines_keep_every_line_whole(tmp_path: pathlib.Path) -> None:
    deep = tmp_path / ("a-context-directory-with-a-long-path-" * 3) / "ctx"
    deep.mkdir(parents=True)
    res = _stalwart(_env(tmp_path), "e", "create", str(_config(tmp_path, "true")), str(deep), "--test-mode",
                    "--local")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"Running 'true' locally in {deep} (no master)..." in res.stdout.splitlines()
    cell = "x" * 300
    table = subprocess.run([sys.executable, "-c", "from stalwart.cli import output\n"
                            f"output.table(['Name', 'Note'], [['{cell}', 'a note with spaces ' * 12]])"],
                           capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert table.returncode == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if "xxx" in line]
    assert cell in row and ("a note with spaces " * 12).strip() in row


def test_test_mode_local_keeps_its_checkpoints_under_stalwart_home(tmp_path: pathlib.Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(SAVES_A_CHECKPOINT)
    env = _env(tmp_path)
    res = _stalwart(env, "e", "create", str(_config(tmp_path, "python3 train.py")), str(ctx), "--test-mode",
                    "--local")
    assert res.returncode == 0, res.stdout + res.stderr
    uuid = next(line.split()[1] for line in res.stdout.splitlines() if line.startswith("saved "))
    saved = pathlib.Path(env["STALWART_HOME"]) / "local" / "checkpoints" / uuid / "weights.txt"
    assert saved.read_text() == "w"
    user_home = pathlib.Path(env["HOME"])
    assert not (user_home / ".local").exists(), sorted(str(p) for p in user_home.rglob("*"))


def test_without_stalwart_home_a_local_run_keeps_the_xdg_data_directory(tmp_path: pathlib.Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(SAVES_A_CHECKPOINT)
    env = _env(tmp_path, XDG_DATA_HOME=str(tmp_path / "data"))
    del env["STALWART_HOME"]
    res = _stalwart(env, "e", "create", str(_config(tmp_path, "python3 train.py")), str(ctx), "--test-mode",
                    "--local")
    assert res.returncode == 0, res.stdout + res.stderr
    uuid = next(line.split()[1] for line in res.stdout.splitlines() if line.startswith("saved "))
    assert (tmp_path / "data" / "stalwart" / "checkpoints" / uuid / "weights.txt").is_file()


def test_the_95_mib_refusal_names_each_largest_file_once(tmp_path: pathlib.Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    for name, mib in (("weights.bin", 60), ("data.npy", 40)):
        with open(ctx / name, "wb") as f:
            f.truncate(mib * 1024 * 1024)  # sparse: no real disk used
    res = _stalwart(_env(tmp_path), "e", "create", str(_config(tmp_path, "python3 train.py")), str(ctx))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "over the 95 MiB limit" in res.stderr and ".detignore" in res.stderr
    assert res.stderr.count("weights.bin") == 1 and res.stderr.count("data.npy") == 1, res.stderr
    assert "  - weights.bin (60 MiB)\n  - data.npy (40 MiB)" in res.stderr
