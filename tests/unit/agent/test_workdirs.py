"""The agent's sweeper of ended allocations' work directories: after the exit is reported, newest `keep` kept."""

from __future__ import annotations

import os
import pathlib
import uuid

from stalwart.agent.workdirs import WorkDirSweeper


def _alloc_dir(root: pathlib.Path, mtime: float | None = None) -> str:
    allocation_id = uuid.uuid4().hex
    workdir = root / allocation_id / "workdir"
    workdir.mkdir(parents=True)
    (workdir / "train.py").write_text("print(1)\n")
    if mtime is not None:
        os.utime(root / allocation_id, (mtime, mtime))
    return allocation_id


def _left(root: pathlib.Path) -> set[str]:
    return {p.name for p in root.iterdir()}


def test_an_ended_allocations_directory_goes_once_its_exit_is_reported(tmp_path):
    live, unreported = set(), set()
    sweeper = WorkDirSweeper(tmp_path, 0, live=lambda: live, unreported=lambda: unreported)
    running, ending = _alloc_dir(tmp_path), _alloc_dir(tmp_path)
    live.add(running)
    unreported.add(ending)
    sweeper.ended(ending)
    assert sweeper.sweep() == []  # its exit has not reached the master yet
    unreported.clear()
    assert sweeper.sweep() == [ending]
    assert _left(tmp_path) == {running}


def test_keep_holds_the_most_recently_ended_ones(tmp_path):
    sweeper = WorkDirSweeper(tmp_path, 2, live=list, unreported=list)
    ids = [_alloc_dir(tmp_path) for _ in range(5)]
    for allocation_id in ids[:3]:
        sweeper.ended(allocation_id)
    assert sweeper.sweep() == [ids[0]]
    for allocation_id in ids[3:]:
        sweeper.ended(allocation_id)
    assert sorted(sweeper.sweep()) == sorted(ids[1:3])
    assert _left(tmp_path) == set(ids[3:])


def test_stale_directories_of_allocations_not_running_go_at_start_and_nothing_else(tmp_path):
    running = _alloc_dir(tmp_path, mtime=3000)
    stale = [_alloc_dir(tmp_path, mtime=1000), _alloc_dir(tmp_path, mtime=2000)]
    (tmp_path / "agent.lock").write_text("")
    (tmp_path / "not-an-allocation").mkdir()
    sweeper = WorkDirSweeper(tmp_path, 1, live=lambda: [running], unreported=list)
    assert sorted(sweeper.adopt_stale()) == sorted(stale)
    assert sweeper.sweep() == [stale[0]]  # keep=1: the newer stale one stays
    assert _left(tmp_path) == {running, stale[1], "agent.lock", "not-an-allocation"}


def test_what_the_trial_made_read_only_goes_too(tmp_path):
    sweeper = WorkDirSweeper(tmp_path, 0, live=list, unreported=list)
    allocation_id = _alloc_dir(tmp_path)
    locked = tmp_path / allocation_id / "workdir" / "locked"
    locked.mkdir()
    (locked / "data").write_text("x")
    locked.chmod(0o500)
    sweeper.ended(allocation_id)
    assert sweeper.sweep() == [allocation_id]
    assert _left(tmp_path) == set()
