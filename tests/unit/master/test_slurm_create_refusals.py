"""New work on a Slurm pool that could never run as a job is refused at create (issue 30), naming the fix: an owner
with no OS user to run as (no link, no workspace default, no `resource_manager.user_name`), a `user_name` that is
root where root tasks are not allowed, an image where jobs run processes (no `container_run_type: podman`).
Nothing is stored then. No Slurm is needed: nothing is submitted before the scheduling pass."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.experiments import experiments
from stalwart.master.queries import users as user_rows
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

CONFIG = """
name: refused
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
resources: {resource_pool: batch}
"""
IMAGE = CONFIG + "environment: {image: python:3.11}\n"


def master(tmp_path, allow_root: bool = False, **rm) -> Master:
    cfg = parse_master_config({"resource_manager": {"type": "slurm", **rm}, "resource_pools": [{"pool_name": "batch"}],
                               "security": {"allow_root_tasks": allow_root}})
    return Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cfg))


def create(m: Master, tmp_path, config: str = CONFIG, owner: str = "admin") -> int | None:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('x')\n")
    return experiments.create_experiment(m, config, pack_context(ctx).data, activate=True, owner=owner)[0]


def count(m: Master) -> int:
    with m.db.begin() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(t.experiments)).scalar_one())


def test_an_owner_without_an_os_user_is_refused_unless_the_manager_names_one(tmp_path):
    m = master(tmp_path)
    with pytest.raises(ConfigError) as err:
        create(m, tmp_path)
    message = str(err.value)
    assert "pool 'batch' runs its work as Slurm jobs" in message and "user admin has no linked OS user" in message
    assert "stalwart user link-with-agent-user admin" in message and "resource_manager.user_name" in message
    assert count(m) == 0


def test_the_managers_user_name_runs_the_jobs_of_owners_without_one(tmp_path):
    m = master(tmp_path, user_name="svc")
    assert create(m, tmp_path) is not None and count(m) == 1


def test_a_root_user_name_is_refused_unless_root_tasks_are_allowed(tmp_path):
    m = master(tmp_path, user_name="root")
    with pytest.raises(ConfigError) as err:
        create(m, tmp_path)
    assert "resource_manager.user_name is root, which is root" in str(err.value)
    assert "security.allow_root_tasks" in str(err.value) and count(m) == 0
    (tmp_path / "allowed").mkdir()
    assert create(master(tmp_path / "allowed", allow_root=True, user_name="root"), tmp_path) is not None


def test_a_linked_owner_may_create(tmp_path):
    m = master(tmp_path)
    with m.db.begin() as conn:
        ann = user_rows.insert_user(conn, username="ann", display_name=None, password_hash=None, admin=False,
                                    active=True, created_at=0.0)
        user_rows.set_agent_user(conn, ann, {"uid": 1000, "gid": 1000, "user": "ann", "group": "ann"}, 0.0)
    assert create(m, tmp_path, owner="ann") is not None


def test_an_image_is_refused_where_jobs_run_processes_and_taken_with_podman(tmp_path):
    m = master(tmp_path, user_name="svc")
    with pytest.raises(ConfigError) as err:
        create(m, tmp_path, IMAGE)
    assert "environment.image" in str(err.value) and "container_run_type: podman" in str(err.value)
    assert count(m) == 0
    (tmp_path / "podman").mkdir()
    assert create(master(tmp_path / "podman", user_name="svc", container_run_type="podman"), tmp_path, IMAGE)
