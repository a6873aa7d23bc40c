"""A tiny trial for scheduling tests: prints what the master told this container, sleeps, exits.

hparams: sleep (seconds), fail_rank (container rank that exits 1 after a second instead, or -1)."""

import json
import os
import sys
import time

with open(os.environ["STALWART_INFO_FILE"]) as info_file:
    info = json.load(info_file)
hp = info["trial"]["hparams"]
rank = int(os.environ["STALWART_CONTAINER_RANK"])
print(f"GANG rank={rank} n={os.environ['STALWART_NUM_CONTAINERS']} det_rank={os.environ['DET_CONTAINER_RANK']} "
      f"addrs={os.environ['STALWART_CONTAINER_ADDRS']} port={os.environ['STALWART_RENDEZVOUS_PORT']} "
      f"slots={json.dumps(info['slot_ids'])} info_rank={info['container_rank']} agent={info['agent_id']}", flush=True)
if rank == int(hp.get("fail_rank", -1)):
    time.sleep(1)
    sys.exit(1)  # this container fails at once; the rest of the gang must be torn down
deadline = time.time() + float(hp.get("sleep", 0))
while time.time() < deadline:
    time.sleep(0.1)
sys.exit(0)
