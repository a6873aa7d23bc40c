"""The agent's own credential: the master gives it once, when the agent enrolls with the cluster token; the agent
keeps it in its work directory (`agent-credential.json`, mode 0600, with the agent id and the cluster it belongs
to) and presents it on every call from then on. The cluster token only enrolls (docs/users.md, "Agents and the
cluster token")."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
from dataclasses import asdict, dataclass

from stalwart.api.errors import InvalidRequest

log = logging.getLogger("stalwart.agent")

FILE_NAME = "agent-credential.json"


@dataclass(frozen=True)
class Stored:
    """A credential as the agent keeps it: whose it is, and which cluster (master database) gave it."""

    agent_id: str
    cluster_id: str
    credential: str


def path_of(work_root: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(work_root) / FILE_NAME


def load(work_root: pathlib.Path, agent_id: str) -> Stored | None:
    """The credential kept in `work_root` for `agent_id`, or None (no file, another agent's, or unreadable)."""
    path = path_of(work_root)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("cannot read the agent credential %s (%s); the agent enrolls again with the cluster token",
                    path, err)
        return None
    values = [data.get(k) for k in ("agent_id", "cluster_id", "credential")] if isinstance(data, dict) else []
    fields = [v for v in values if isinstance(v, str) and v]
    if len(fields) != 3:
        log.warning("%s is not an agent credential file; the agent enrolls again with the cluster token", path)
        return None
    stored = Stored(*fields)
    if stored.agent_id != agent_id:
        log.info("%s holds agent %s's credential, not %s's; this agent enrolls with the cluster token", path,
                 stored.agent_id, agent_id)
        return None
    return stored


def store(work_root: pathlib.Path, stored: Stored) -> None:
    """Keep the credential in `work_root`, readable by the agent's user only (written whole, then renamed)."""
    path = path_of(work_root)
    partial = path.with_name(FILE_NAME + ".partial")
    try:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(asdict(stored), out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except OSError as err:
        raise InvalidRequest(f"cannot keep the agent's credential in {path}: {err.strerror or err}; give the agent "
                             "a --work-dir it can write") from None
