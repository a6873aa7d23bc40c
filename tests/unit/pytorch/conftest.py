"""Run each stalwart.pytorch test in its own working directory, so nothing a trial writes lands in the repo."""

import pytest


@pytest.fixture(autouse=True)
def _own_working_directory(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

