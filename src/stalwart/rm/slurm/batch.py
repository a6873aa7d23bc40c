"""One allocation as one Slurm job: its `sbatch` arguments and its batch script (docs/slurm.md, "The job").

A job is a gang by construction: `--nodes=N --ntasks-per-node=1` (one one-shot agent per node), each node with the
same share of the slots (`slurm.slots_per_node`, else all on one node): CPUs per task for `slot_type: cpu`, GPUs
through `--gres` (or `--gpus-per-node` where GRES is not configured) otherwise. The experiment's own `sbatch_args`
come last, so they win. The script names no secret: the job's single-use join credential reaches its agents through
the environment `sbatch` exports (`--export` lists exactly what goes), never through the script or its arguments."""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

JOIN_TOKEN_ENV = "STALWART_JOIN_TOKEN"
EXPORTED = ("PATH", "LANG", "LC_ALL", JOIN_TOKEN_ENV)
"""The variables of the submitting environment a job gets (Slurm adds its own SLURM_*): nothing else of the
master's environment, which may hold its cluster token, reaches a job."""


@dataclass(frozen=True)
class JobSpec:
    """What the master asks of Slurm for one allocation."""

    name: str
    partition: str
    slots: int
    slot_type: str  # cuda, rocm or cpu
    output_path: str
    agent_command: tuple[str, ...]
    master_url: str
    allocation_id: str
    resource_pool: str
    slots_per_node: int | None = None
    gres_supported: bool = True
    gpu_type: str | None = None
    sbatch_args: tuple[str, ...] = ()
    runtime: str = "process"

    @property
    def per_node(self) -> int:
        """The slots of each node (the last may use fewer)."""
        return slots_per_node(self.slots, self.slots_per_node)

    @property
    def nodes(self) -> int:
        return max(1, math.ceil(self.slots / self.per_node)) if self.slots else 1


def slots_per_node(slots: int, asked: int | None) -> int:
    """The slots of each node of a job of `slots` slots, `asked` per node at most (None: all on one node)."""
    return max(1, min(slots, asked or slots)) if slots else 0


def node_slots(slots: int, per_node: int, nodes: int) -> list[int]:
    """How many slots each node of a job holds: `per_node` each, the rest on the last."""
    out = []
    left = slots
    for _ in range(nodes):
        out.append(max(0, min(per_node, left)))
        left -= out[-1]
    return out


def sbatch_args(spec: JobSpec) -> list[str]:
    """The `sbatch` options of the job (the script comes on stdin)."""
    args = [f"--job-name={spec.name}", f"--partition={spec.partition}", f"--output={spec.output_path}",
            "--open-mode=append", f"--nodes={spec.nodes}", "--ntasks-per-node=1", f"--export={','.join(EXPORTED)}"]
    if spec.slot_type == "cpu":
        args.append(f"--cpus-per-task={max(1, spec.per_node)}")
    elif spec.slots:
        kind = f"gpu:{spec.gpu_type}" if spec.gpu_type else "gpu"
        args.append(f"--gres={kind}:{spec.per_node}" if spec.gres_supported
                    else f"--gpus-per-node={spec.gpu_type + ':' if spec.gpu_type else ''}{spec.per_node}")
    return [*args, *spec.sbatch_args]


def agent_args(spec: JobSpec) -> list[str]:
    """The one-shot agent's arguments (stalwart.agent.slurm_job): where the master is and what it runs."""
    return ["--master", spec.master_url, "--allocation", spec.allocation_id, "--resource-pool", spec.resource_pool,
            "--slots", str(spec.slots), "--slots-per-node", str(spec.per_node), "--slot-type", spec.slot_type,
            "--runtime", spec.runtime]


def batch_script(spec: JobSpec) -> str:
    """The job's script: one one-shot agent per node (`srun`), which enrolls with the join credential from its
    environment, runs the allocation's container on that node exactly as an agent does, and exits with it."""
    command = " ".join(shlex.quote(part) for part in [*spec.agent_command, *agent_args(spec)])
    return "\n".join([
        "#!/bin/sh",
        f"# Stalwart allocation {spec.allocation_id} (pool {spec.resource_pool}): one one-shot agent per node.",
        f'exec srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=0 {command}',
        "",
    ])


def quoted(args: Sequence[str]) -> str:
    """Arguments as a shell would need them (for messages)."""
    return " ".join(shlex.quote(a) for a in args)
