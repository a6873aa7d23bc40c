"""The pure parts of the Determined listener's experiment answers: states as Determined names them (ACTIVE by its
runs), GetExperiments' paging rules, and a `v1File` context made into the .tgz Stalwart's create takes."""

from __future__ import annotations

import base64
import io
import tarfile

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.experiments import V1File
from stalwart.master.determined_api.experiment_routes import experiments_window
from stalwart.master.determined_api.experiment_views import active_substate, checkpoint_totals, state_name
from stalwart.master.determined_api.model_definition import context_archive


def test_an_active_experiment_shows_its_most_advanced_run():
    assert state_name("ACTIVE", []) == "STATE_QUEUED"
    assert state_name("ACTIVE", ["PENDING", "ASSIGNED"]) == "STATE_STARTING"
    assert state_name("ACTIVE", ["PENDING", "RUNNING", "ASSIGNED"]) == "STATE_RUNNING"
    assert state_name("PAUSED", ["RUNNING"]) == "STATE_PAUSED"
    assert state_name("STOPPING_KILLED") == "STATE_STOPPING_KILLED"
    assert active_substate(["TERMINATED"]) == "STATE_QUEUED"


def test_checkpoint_totals_count_only_kept_checkpoints():
    rows = [{"state": "COMPLETED", "resources": {"a": 10, "b": 5}}, {"state": "DELETED", "resources": {"a": 99}},
            {"state": "PARTIALLY_DELETED", "resources": None}]
    assert checkpoint_totals(rows) == (2, 15)


@pytest.mark.parametrize("total, offset, limit, window, start, end", [
    (250, 0, 0, (0, 100), 0, 100),  # limit 0: Determined's default of 100
    (250, 200, 200, (200, 250), 200, 250),
    (250, 0, -1, (0, 250), 0, 250),  # -1: everything
    (250, 10, -2, (10, 10), 10, 10),  # -2: only the pagination
    (250, -5, 0, (245, 250), 245, 250),  # a negative offset counts from the end
    (250, 300, 10, (250, 250), 250, 250),  # past the end: empty, never an error
    (0, 0, 200, (0, 0), 0, 0),
])
def test_experiment_lists_page_by_determineds_rules(total, offset, limit, window, start, end):
    got, pagination = experiments_window(total, offset, limit)
    assert (got.start, got.stop) == window
    assert pagination.model_dump() == {"offset": offset, "limit": limit, "startIndex": start, "endIndex": end,
                                       "total": total}


def v1file(path: str, data: bytes | None, mode: int = 0o644) -> V1File:
    return V1File(path=path, type=53 if data is None else 48, content=base64.b64encode(data or b"").decode(),
                  mtime="1795576094", mode=mode, uid=0, gid=0)


def test_a_context_of_v1files_becomes_a_tgz_with_the_same_files():
    archive = context_archive([v1file("sub", None), v1file("sub/a.txt", b"alpha"),
                               v1file("run.sh", b"#!/bin/sh\n", 0o100755)])
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["sub"].isdir() and members["sub/a.txt"].mtime == 1795576094
        assert members["run.sh"].mode == 0o755 and members["sub/a.txt"].mode == 0o644
        assert tar.extractfile("sub/a.txt").read() == b"alpha"  # type: ignore[union-attr]


@pytest.mark.parametrize("entry, said", [
    (v1file("../up.txt", b"x"), "inside the context"),
    (v1file("/abs.txt", b"x"), "inside the context"),
    (V1File(path="a.txt", type=48, content="not base64!", mtime="0", mode=0o644), "not base64"),
    (V1File(path="link", type=50, content="", mtime="0", mode=0o644), "neither a file"),
    (V1File(path="a.txt", type=48, content="", mtime="yesterday", mode=0o644), "mtime"),
])
def test_a_bad_context_entry_is_a_400_naming_it(entry, said):
    with pytest.raises(InvalidRequest, match=said):
        context_archive([entry])
