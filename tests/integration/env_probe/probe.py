"""Run as a trial: write down its environment (to the path given as its argument), print the two secrets it was
handed (its allocation's token and its owner session) to stdout and stderr, then finish its one operation.
test_trial_environment.py checks what it saw and that its stored logs show neither secret."""

import json
import os
import pathlib
import sys

from determined import core

pathlib.Path(sys.argv[1]).write_text(json.dumps(dict(os.environ)))
allocation_token = os.environ["STALWART_ALLOCATION_TOKEN"]
user_token = os.environ["STALWART_USER_TOKEN"]
print(f"allocation token: {allocation_token}", flush=True)
print(f"owner session: {user_token}", flush=True)
session_token = os.environ["DET_SESSION_TOKEN"]
print(f"both, on stderr: {allocation_token}|{user_token}|{session_token}", file=sys.stderr, flush=True)
print("the probe ran", flush=True)

with core.init() as ctx:
    for op in ctx.searcher.operations():
        ctx.train.report_validation_metrics(op.length, {"loss": 0.5})
        op.report_completed(0.5)
