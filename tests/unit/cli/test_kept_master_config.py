"""The local cluster keeps its master config with its home (issue 25, hole 8): what `stalwart up --config F` copies,
what a later start without --config uses, and what `up --config F` on a running cluster refuses. No process is
started here: these are the file decisions `local_cluster.start` makes (tests/e2e/test_rbac_restart.py runs them)."""

from __future__ import annotations

import pathlib

import pytest

from stalwart.api.errors import InvalidStateError
from stalwart.cli import kept_settings

RBAC = "security:\n  authz:\n    type: rbac\n"


def test_a_given_config_is_copied_private_and_used_by_later_starts(tmp_path: pathlib.Path) -> None:
    given = tmp_path / "rbac.yaml"
    given.write_text(RBAC)
    home = tmp_path / "home"
    home.mkdir()
    used = kept_settings.config_to_use(home, str(given))
    kept = kept_settings.kept_config(home)
    assert used == str(kept) and kept.read_text() == RBAC and kept.stat().st_mode & 0o777 == 0o600
    given.unlink()  # the original may go: the home keeps its copy
    assert kept_settings.config_to_use(home, None) == str(kept)


def test_a_home_without_a_kept_config_starts_with_none(tmp_path: pathlib.Path) -> None:
    assert kept_settings.config_to_use(tmp_path, None) is None


def test_up_with_another_config_on_a_running_cluster_is_refused(tmp_path: pathlib.Path) -> None:
    kept = tmp_path / "master-config.yaml"
    kept.write_text(RBAC)
    same, other = tmp_path / "same.yaml", tmp_path / "other.yaml"
    same.write_text(RBAC)
    other.write_text("security:\n  authz:\n    type: basic\n")
    kept_settings.refuse_new_config(tmp_path, {"config": str(kept)}, str(same))  # the same: nothing to do
    with pytest.raises(InvalidStateError, match="was not applied. Stop it first with `stalwart down`"):
        kept_settings.refuse_new_config(tmp_path, {"config": str(kept)}, str(other))
    with pytest.raises(InvalidStateError, match="with no master config"):
        kept_settings.refuse_new_config(tmp_path, {}, str(same))
