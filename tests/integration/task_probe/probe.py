"""Run inside a task (a trial or a command): write down what it can see, to the path given as its argument.

It records its environment; the text of every file under its working directory, its run directory and any
directory the master or the agent named to it (STALWART_* and DET_* variables); the text of every file any
variable names; the answer of GET /api/v1/me with its owner session; and, in a trial, its experiment as the
SDK reads it with that session. The test (test_task_secrets.py) looks for the master's secrets in all of it.
"""

import json
import os
import pathlib
import sys
import urllib.error
import urllib.request

MAX_FILE = 4 * 1024 * 1024


def read(path: pathlib.Path, seen: dict) -> None:
    try:
        if path.is_file() and path.stat().st_size <= MAX_FILE:
            seen[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        seen[str(path)] = f"<unreadable: {err}>"


def walk(root: pathlib.Path, seen: dict) -> None:
    for path in root.rglob("*"):
        read(path, seen)


def visible_files() -> dict:
    seen: dict = {}
    walk(pathlib.Path.cwd(), seen)
    walk(pathlib.Path(os.environ["DET_RUN_DIR"]), seen)
    for key, value in os.environ.items():
        for item in value.split(os.pathsep):
            path = pathlib.Path(item)
            if not path.is_absolute():
                continue
            if path.is_dir() and key.startswith(("STALWART_", "DET_")):
                walk(path, seen)
            else:
                read(path, seen)
    return seen


def me() -> dict:
    request = urllib.request.Request(os.environ["STALWART_MASTER"] + "/api/v1/me",
                                     headers={"authorization": f"Bearer {os.environ.get('STALWART_USER_TOKEN', '')}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return {"status": reply.status, "body": json.loads(reply.read())}
    except urllib.error.HTTPError as err:
        return {"status": err.code, "body": err.read().decode(errors="replace")}


def sdk_view(experiment_id: int) -> dict:
    from stalwart.experimental import client

    exp = client.get_experiment(experiment_id)
    return {"id": exp.id, "owner": exp.owner, "name": exp.name}


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    record = {"env": dict(os.environ), "files": visible_files(), "me": me()}
    if os.environ.get("DET_TASK_TYPE") == "TRIAL":
        from determined import core

        with core.init() as ctx:
            record["sdk"] = sdk_view(ctx.info.trial.experiment_id)
            out.write_text(json.dumps(record))
            for op in ctx.searcher.operations():
                ctx.train.report_validation_metrics(op.length, {"loss": 0.5})
                op.report_completed(0.5)
    else:
        out.write_text(json.dumps(record))


main()
