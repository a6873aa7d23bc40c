"""Shared fixtures: a real local cluster on SQLite or on the PostgreSQL server at 127.0.0.1:5432."""

from __future__ import annotations

import json
import pathlib

import pytest

from pg_databases import fresh_database
from stalwart.testing import LocalTestCluster

REPO = pathlib.Path(__file__).resolve().parents[1]
DIGITS = REPO / "examples" / "digits"

# dockerd, Podman and a registry, started once per run by the first test that needs them (container_servers.py);
# a Slurm cluster on this host likewise (slurm_server.py); the Kubernetes API double (k8s_server.py)
pytest_plugins = ["container_servers", "storage_servers", "slurm_server", "k8s_server", "det_cluster"]


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    with fresh_database() as url:
        yield url


@pytest.fixture
def cluster(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        yield c


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db_cluster(request, tmp_path):
    db_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    timeout = request.node.get_closest_marker("agent_timeout")
    with LocalTestCluster(tmp_path / "home", db_url, agent_timeout=timeout.args[0] if timeout else 30.0) as c:
        yield c


# -- slowest first ---------------------------------------------------------------------------------
# On 2 cores the suite's wall time is set by its long end-to-end tests: started last, one of them runs
# alone for minutes while the other workers sit idle. `durations.json` (seconds per test id, written by
# `pytest -n 4 tests --store-durations`) puts the slowest first, and `--maxschedchunk=1` (pyproject)
# hands xdist's workers one test at a time, so each idle worker takes the longest test left.
DURATIONS = pathlib.Path(__file__).with_name("durations.json")


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test's setup+call+teardown seconds to {DURATIONS.name} (orders the next runs)")


def pytest_collection_modifyitems(config, items):
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    items.sort(key=lambda item: -known.get(item.nodeid, 0.0))  # stable: unknown tests keep their order


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report):
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    if session.config.getoption("--store-durations") and not hasattr(session.config, "workerinput"):
        DURATIONS.write_text(json.dumps({k: round(v, 2) for k, v in sorted(_measured.items())}, indent=0) + "\n")
