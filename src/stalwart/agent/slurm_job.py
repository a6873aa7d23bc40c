"""The one-shot agent inside a Slurm job (docs/slurm.md, "The job"): `python -m stalwart.agent.slurm_job`.

The job's script starts one per node (`srun`). It enrolls as agent `slurm-<job id>-<node rank>` and runs as
`agent/one_shot.py` says: the job's allocation, then out."""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys

from stalwart.agent import one_shot
from stalwart.rm.slurm.batch import JOIN_TOKEN_ENV, node_slots


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = one_shot.arguments("python -m stalwart.agent.slurm_job", __doc__)
    p.add_argument("--slots-per-node", type=int, required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = one_shot.take_join_token(JOIN_TOKEN_ENV)
    job_id, rank = os.environ.get("SLURM_JOB_ID"), int(os.environ.get("SLURM_NODEID") or 0)
    if not token or not job_id:
        print(f"stalwart one-shot agent: {JOIN_TOKEN_ENV} and SLURM_JOB_ID must be set; it runs only inside a "
              "Slurm job that the Stalwart master submitted", file=sys.stderr)
        return 2
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or 1)
    slots = node_slots(args.slots, args.slots_per_node, nodes)[min(rank, nodes - 1)]
    agent_id = f"slurm-{job_id}-{rank}"
    # the allocation's id, not the job's: two Slurm clusters on one host number their jobs alike
    work_root = pathlib.Path(os.environ.get("TMPDIR") or "/tmp") / f"stalwart-{args.allocation}-{rank}"
    agent = one_shot.OneShotAgent(args.master, token, work_root, agent_id=agent_id, slots=slots,
                                  slot_type="cpu" if args.slot_type == "cpu" else args.slot_type,
                                  resource_pool=args.resource_pool, runtime=args.runtime)
    return one_shot.run(agent, work_root)


if __name__ == "__main__":
    sys.exit(main())
