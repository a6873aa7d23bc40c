"""One allocation as one Slurm job (stalwart.rm.slurm.batch): the generated `sbatch` arguments and script, for
CPU and GPU slots (GRES, typed GPUs, no GRES), one node and several, and what the script never holds."""

from __future__ import annotations

import pytest

from stalwart.rm.slurm.batch import EXPORTED, JOIN_TOKEN_ENV, JobSpec, agent_args, batch_script, node_slots, sbatch_args


def spec(**changes) -> JobSpec:
    base = dict(name="stalwart-a1", partition="gpu", slots=2, slot_type="cuda", output_path="/out/stalwart-a1.out",
                agent_command=("/venv/bin/python", "-m", "stalwart.agent.slurm_job"), master_url="http://login:8080",
                allocation_id="a1", resource_pool="gpu")
    return JobSpec(**(base | changes))


def test_gpu_slots_on_one_node_go_through_gres():
    args = sbatch_args(spec())
    assert args[:7] == ["--job-name=stalwart-a1", "--partition=gpu", "--output=/out/stalwart-a1.out",
                        "--open-mode=append", "--nodes=1", "--ntasks-per-node=1", f"--export={','.join(EXPORTED)}"]
    assert args[7:] == ["--gres=gpu:2"]


def test_typed_gpus_and_clusters_without_gres():
    assert sbatch_args(spec(gpu_type="a100"))[-1] == "--gres=gpu:a100:2"
    assert sbatch_args(spec(gres_supported=False))[-1] == "--gpus-per-node=2"
    assert sbatch_args(spec(gres_supported=False, gpu_type="a100"))[-1] == "--gpus-per-node=a100:2"


def test_cpu_slots_are_cpus_per_task():
    assert sbatch_args(spec(slot_type="cpu", slots=3))[-1] == "--cpus-per-task=3"


@pytest.mark.parametrize(("slots", "per_node", "nodes", "shares"), [
    (8, 4, 2, [4, 4]), (5, 2, 3, [2, 2, 1]), (2, None, 1, [2]), (1, 4, 1, [1]), (0, None, 1, [0]),
])
def test_a_gang_spans_nodes_of_slots_per_node(slots, per_node, nodes, shares):
    s = spec(slots=slots, slots_per_node=per_node)
    assert (s.nodes, node_slots(s.slots, s.per_node, s.nodes)) == (nodes, shares)
    assert f"--nodes={nodes}" in sbatch_args(s)


def test_the_experiments_own_sbatch_args_come_last_so_they_win():
    args = sbatch_args(spec(sbatch_args=("--time=01:00:00", "--partition=other")))
    assert args[-2:] == ["--time=01:00:00", "--partition=other"]


def test_the_script_runs_one_agent_per_node_and_holds_no_credential():
    script = batch_script(spec(agent_command=("/opt/my venv/bin/python", "-m", "stalwart.agent.slurm_job")))
    assert script.startswith("#!/bin/sh\n")
    assert 'exec srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1' in script
    assert "'/opt/my venv/bin/python' -m stalwart.agent.slurm_job --master http://login:8080 --allocation a1" in script
    assert JOIN_TOKEN_ENV not in script and "token" not in script.lower()
    assert JOIN_TOKEN_ENV in EXPORTED and "STALWART_CLUSTER_TOKEN" not in EXPORTED


def test_the_agent_gets_what_it_needs_to_find_its_share():
    assert agent_args(spec(slots=5, slots_per_node=2, slot_type="cpu", runtime="podman")) == [
        "--master", "http://login:8080", "--allocation", "a1", "--resource-pool", "gpu", "--slots", "5",
        "--slots-per-node", "2", "--slot-type", "cpu", "--runtime", "podman"]
