"""DistributedContext and the torch_distributed launcher, with real worker processes and real torch stores.

Covers: every collective between 2 processes (chief-hosted store, and torchrun's store through our
launcher), two launcher processes acting as two containers on loopback, `[rank=N]` output, a dying
worker taking the gang down, SIGTERM reaching every worker, and the errors bad input gets.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from stalwart.harness import core
from stalwart.harness.torch_distributed import LaunchError, topology, worker_command
from stalwart.testing.cluster import rendezvous_port
from stalwart.testing.gang import wait_for_gang

WORKER = str(pathlib.Path(__file__).with_name("dist_worker.py"))
LAUNCHER = [sys.executable, "-m", "determined.launch.torch_distributed"]
COMPAT = str(pathlib.Path(core.__file__).resolve().parents[1] / "compat")


def clean_env(**extra: str) -> dict:
    """This environment without trial or torchrun variables, `determined` importable, plus `extra`."""
    drop = ("STALWART_", "DET_", "TORCHELASTIC_", "RANK", "LOCAL_", "GROUP_", "ROLE_", "WORLD_SIZE", "MASTER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = COMPAT
    env.update(extra)
    return env


def results(output: str) -> dict[int, dict]:
    found = {}
    for line in output.splitlines():
        head, _, rest = line.partition("RESULT ")
        if rest:
            value = json.loads(rest)
            found[value["rank"]] = {**value, "prefix": head.strip()}
    return found


def check_collectives(res: dict[int, dict], size: int, local_size: int) -> None:
    assert sorted(res) == list(range(size))
    for rank, r in res.items():
        assert r["size"] == size and r["local"] == [rank % local_size, local_size]
        assert r["cross"] == [rank // local_size, size // local_size]
        assert r["allgather"] == [{"rank": i} for i in range(size)]
        assert r["gather"] == ([i * 10 for i in range(size)] if rank == 0 else None)
        assert r["broadcast"] == "from 0"
        machine = rank // local_size
        assert r["allgather_local"] == list(range(local_size))
        assert r["gather_local"] == ([i + 100 for i in range(local_size)] if rank % local_size == 0 else None)
        assert r["broadcast_local"] == f"local chief of machine {machine}"
        assert r["many_rounds_ok"] is True and r["big"] == 3_000_000


def test_collectives_between_two_processes_on_a_chief_hosted_store():
    port = rendezvous_port()
    procs = [subprocess.Popen([sys.executable, WORKER, "collectives", str(rank), "2", str(port)], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    check_collectives(results("\n".join(outs)), size=2, local_size=2)


def test_launcher_starts_one_worker_per_slot_with_rank_prefixed_output():
    res = subprocess.run([*LAUNCHER, "python3", WORKER, "collectives"], env=clean_env(DET_SLOT_IDS="[0, 1]"),
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    found = results(res.stdout)
    check_collectives(found, size=2, local_size=2)
    assert {r["prefix"] for r in found.values()} == {"[rank=0]", "[rank=1]"}
    assert all(r["prefix"] == f"[rank={rank}]" for rank, r in found.items())


def test_checkpoints_chief_only_and_sharded_between_two_workers(tmp_path):
    storage = tmp_path / "checkpoints"
    res = subprocess.run([*LAUNCHER, "python3", WORKER, "checkpoint", str(storage)],
                         env=clean_env(DET_SLOT_IDS="[0, 1]"), capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    chief, worker = (results(res.stdout)[r] for r in (0, 1))
    assert chief["sharded"] == worker["sharded"] and chief["uploaded"] == worker["uploaded"]
    assert chief["sharded_metadata"] == {"steps_completed": 5, "by_rank": {"0": 0, "1": 1}}
    assert chief["files"][chief["sharded"]] == ["metadata.json", "part0.txt", "part1.txt"]
    assert chief["files"][chief["chief_only"]] == ["metadata.json", "model.txt"]
    assert chief["files"][chief["uploaded"]] == ["file0.txt", "metadata.json"]
    assert "chief_only_error" not in chief
    assert "rank 1: only the chief (rank 0) may call it" in worker["chief_only_error"]
    assert chief["preempt"] is False and worker["preempt"] is False
    assert len(list(storage.iterdir())) == 3


def test_two_launchers_form_one_job_as_two_containers_on_loopback():
    port = rendezvous_port()
    env = dict(STALWART_NUM_CONTAINERS="2", STALWART_CONTAINER_ADDRS='["127.0.0.1", "127.0.0.1"]',
               STALWART_RENDEZVOUS_PORT=str(port), DET_SLOT_IDS="[0]")
    procs = [subprocess.Popen([*LAUNCHER, "python3", WORKER, "collectives"],
                              env=clean_env(**env, STALWART_CONTAINER_RANK=str(rank)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (1, 0)]
    outs = wait_for_gang([procs[1], procs[0]], timeout=180)  # rank 1 started first, the chief waited for first
    found = results("\n".join(o for o, _ in outs))
    check_collectives(found, size=2, local_size=1)
    assert found[1]["chief_ip"] == "127.0.0.1"
    assert found[1]["prefix"] == "[rank=1]" and found[1]["cross"] == [1, 2]


def test_when_one_container_dies_the_other_containers_workers_fail_too(tmp_path):
    """Across containers the master tears the gang down; the survivors also fail on their own, in seconds."""
    env = dict(STALWART_NUM_CONTAINERS="2", STALWART_CONTAINER_ADDRS='["127.0.0.1", "127.0.0.1"]',
               STALWART_RENDEZVOUS_PORT=str(rendezvous_port()), DET_SLOT_IDS="[0]")
    procs = [subprocess.Popen([*LAUNCHER, "python3", WORKER, "allreduce", str(tmp_path)],
                              env=clean_env(**env, STALWART_CONTAINER_RANK=str(rank)), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True) for rank in (0, 1)]
    try:
        deadline = time.monotonic() + 90
        while len(list(tmp_path.glob("ready.*"))) < 2:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.1)
        time.sleep(1)
        os.killpg(procs[1].pid, signal.SIGKILL)
        assert procs[0].wait(timeout=60) != 0
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_a_dying_worker_takes_the_gang_down_and_the_launcher_fails():
    start = time.monotonic()
    res = subprocess.run([*LAUNCHER, "python3", WORKER, "die"], env=clean_env(DET_SLOT_IDS="[0, 1]"),
                         capture_output=True, text=True, timeout=100)
    assert res.returncode != 0
    assert time.monotonic() - start < 60  # the survivor (sleeping 120 s) was stopped, not waited for
    pids = [int(line.rsplit("=", 1)[1]) for line in res.stdout.splitlines() if "started pid=" in line]
    assert len(pids) == 2
    for pid in pids:
        assert not pathlib.Path(f"/proc/{pid}").exists() or "zombie" in pathlib.Path(f"/proc/{pid}/status").read_text()


def test_an_abort_at_exit_after_a_clean_core_context_does_not_fail_the_gang():
    res = subprocess.run([*LAUNCHER, "python3", WORKER, "abort", "after-context"],
                         env=clean_env(DET_SLOT_IDS="[0, 1]"), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("(a known gloo teardown abort): counted as a clean exit") == 2
    res = subprocess.run([*LAUNCHER, "python3", WORKER, "abort"], env=clean_env(DET_SLOT_IDS="[0, 1]"),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "counted as a clean exit" not in res.stderr


def test_sigterm_to_the_launcher_reaches_every_worker(tmp_path):
    proc = subprocess.Popen([*LAUNCHER, "python3", WORKER, "sigterm", str(tmp_path)],
                            env=clean_env(DET_SLOT_IDS="[0, 1]"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while len(list(tmp_path.glob("ready.*"))) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert sorted(p.name for p in tmp_path.glob("term.*")) == ["term.0", "term.1"]


def test_killing_the_launchers_process_group_kills_every_worker(tmp_path):
    """The agent kills a trial with SIGKILL to its process group; torchrun's workers live in sessions of their own."""
    proc = subprocess.Popen([*LAUNCHER, "python3", WORKER, "sigterm", str(tmp_path)],
                            env=clean_env(DET_SLOT_IDS="[0, 1]"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while len(list(tmp_path.glob("ready.*"))) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    workers = [int(p.read_text()) for p in tmp_path.glob("ready.*")]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived the launcher"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_one_slot_runs_the_script_in_place_with_a_world_of_one(tmp_path):
    script = tmp_path / "env.py"
    script.write_text("import os, json; print(json.dumps({k: os.environ[k] for k in "
                      "('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR', 'USE_TORCH_DISTRIBUTED')}))")
    res = subprocess.run([*LAUNCHER, "python3", str(script)], env=clean_env(), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                                      "USE_TORCH_DISTRIBUTED": "True"}


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("env, message", [
    ({"DET_SLOT_IDS": "0,1"}, "DET_SLOT_IDS='0,1' is not JSON"),
    ({"DET_SLOT_IDS": "[]"}, "DET_SLOT_IDS is an empty list"),
    ({"STALWART_CONTAINER_ADDRS": '["a", "b"]', "STALWART_NUM_CONTAINERS": "3"}, "lists 2 address(es)"),
    ({"STALWART_CONTAINER_ADDRS": '["a", "b"]', "STALWART_CONTAINER_RANK": "2",
      "STALWART_RENDEZVOUS_PORT": "1234"}, "container rank 2"),
    ({"STALWART_CONTAINER_ADDRS": '["a", "b"]'}, "STALWART_RENDEZVOUS_PORT is not set"),
    ({"STALWART_CONTAINER_RANK": "first"}, "STALWART_CONTAINER_RANK='first' must be an integer"),
])
def test_bad_topology_environment_is_named(env, message):
    with pytest.raises(LaunchError) as err:
        topology(env, info=None)
    assert message in str(err.value)


def test_topology_follows_the_master_contract():
    topo = topology({"STALWART_CONTAINER_ADDRS": '["10.0.0.5", "10.0.0.6"]', "DET_CONTAINER_RANK": "1",
                     "STALWART_RENDEZVOUS_PORT": "29400", "DET_SLOT_IDS": "[2, 3]"}, info=None)
    assert (topo.chief_addr, topo.container_rank, topo.num_containers, topo.slots, topo.port, topo.world_size) == \
        ("10.0.0.5", 1, 2, 2, 29400, 4)


def test_launcher_usage_errors_exit_2():
    res = subprocess.run([*LAUNCHER, "--trial"], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--trial needs the Trial class" in res.stderr
    res = subprocess.run([*LAUNCHER, "python3", "x.py"], env=clean_env(DET_SLOT_IDS="nope"), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "DET_SLOT_IDS='nope' is not JSON" in res.stderr


def test_python3_in_the_script_is_this_interpreter():
    assert worker_command(["python3", "train.py"]) == [sys.executable, "train.py"]
    assert worker_command(["./run.sh", "x"]) == ["./run.sh", "x"]


def test_from_torch_distributed_outside_torchrun_names_the_missing_variables(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK is not set"):
        core.DistributedContext.from_torch_distributed()


@pytest.mark.parametrize("kwargs, message", [
    (dict(rank=2, size=2), "rank=2 is outside 0..1"),
    (dict(rank=0, size=0), "rank=0 is outside 0..-1"),
    (dict(rank="0", size=1), "rank must be an int"),
    (dict(rank=0, size=2, local_size=2, cross_size=2), "needs chief_ip"),
    (dict(rank=0, size=2, local_size=3), "cannot exceed size=2"),
])
def test_bad_ranks_are_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        core.DistributedContext(**kwargs)


def test_a_world_of_one_needs_no_store():
    dist = core.DistributedContext()
    assert (dist.allgather(1), dist.gather(2), dist.broadcast(3), dist.allgather_local(4)) == ([1], [2], 3, [4])
    dist.close()
    with pytest.raises(RuntimeError, match="closed"):
        dist.allgather(1)


def _info_file(tmp_path) -> pathlib.Path:
    path = tmp_path / "info.json"
    path.write_text(json.dumps({"master_url": "http://127.0.0.1:1", "cluster_id": "c", "agent_id": "a",
                                "slot_ids": [0, 1], "task_id": "trial-1", "allocation_id": "x",
                                "session_token": "t", "latest_checkpoint": None}))
    return path


def test_cluster_info_exposes_the_containers_from_the_trial_environment(tmp_path, monkeypatch):
    from stalwart.harness import info

    monkeypatch.setattr(info, "_cached", None)
    monkeypatch.setenv("STALWART_INFO_FILE", str(_info_file(tmp_path)))
    monkeypatch.setenv("STALWART_CONTAINER_ADDRS", '["10.1.0.1", "10.1.0.2"]')
    monkeypatch.setenv("DET_CONTAINER_RANK", "1")
    got = info.get_cluster_info()
    assert (got.container_addrs, got.container_rank, got.slot_ids) == (["10.1.0.1", "10.1.0.2"], 1, [0, 1])
    topo = topology({"STALWART_RENDEZVOUS_PORT": "29400"}, info=got)  # what the env leaves out, info supplies
    assert (topo.chief_addr, topo.container_rank, topo.slots, topo.num_containers) == ("10.1.0.1", 1, 2, 2)


def test_cluster_info_defaults_to_one_container_on_loopback(tmp_path, monkeypatch):
    from stalwart.harness import info

    monkeypatch.setattr(info, "_cached", None)
    monkeypatch.setenv("STALWART_INFO_FILE", str(_info_file(tmp_path)))
    for name in ("STALWART_CONTAINER_ADDRS", "STALWART_CONTAINER_RANK", "DET_CONTAINER_RANK"):
        monkeypatch.delenv(name, raising=False)
    got = info.get_cluster_info()
    assert (got.container_addrs, got.container_rank) == (["127.0.0.1"], 0)
    monkeypatch.setattr(info, "_cached", None)
    monkeypatch.setenv("STALWART_CONTAINER_ADDRS", "10.0.0.1")
    with pytest.raises(ValueError, match="STALWART_CONTAINER_ADDRS='10.0.0.1' must be a JSON list"):
        info.get_cluster_info()


def test_launcher_help_prints_its_usage():
    res = subprocess.run([sys.executable, "-m", "stalwart.harness.torch_distributed", "--help"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("usage:") and "SCRIPT" in res.stdout
