"""The one-shot agent in a Kubernetes pod (docs/kubernetes.md, "The pods"): `python3 -m stalwart.agent.pod`.

The Kubernetes manager makes each pod of a run run this in the task's image, with the pod's agent id
(`<run name>-<rank>`), its share of the run's slots, and the run's join credential in `STALWART_JOIN_TOKEN`, read
from the run's Secret. It runs as `agent/one_shot.py` says: the run's allocation, then out; Kubernetes' SIGTERM (a
deletion, an eviction, a node drain) reports the task as a lost node's."""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import tempfile

from stalwart.agent import one_shot

JOIN_TOKEN_ENV = "STALWART_JOIN_TOKEN"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = one_shot.arguments("python3 -m stalwart.agent.pod", __doc__)
    p.add_argument("--agent-id", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = one_shot.take_join_token(JOIN_TOKEN_ENV)
    if not token:
        print(f"stalwart pod agent: {JOIN_TOKEN_ENV} must be set; it runs only in a pod that the Stalwart master "
              "created (its Secret holds the run's join credential)", file=sys.stderr)
        return 2
    work_root = pathlib.Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / f"stalwart-{args.agent_id}"
    agent = one_shot.OneShotAgent(args.master, token, work_root, agent_id=args.agent_id, slots=args.slots,
                                  slot_type="cpu" if args.slot_type == "cpu" else args.slot_type,
                                  resource_pool=args.resource_pool, runtime=args.runtime)
    return one_shot.run(agent, work_root)


if __name__ == "__main__":
    sys.exit(main())
