"""Running a task as an OS user (its owner's link, else its workspace's): who may, and handing it its directories.

An agent that runs as root starts such a task's run with that user's uid and gid (and no supplementary groups:
`LaunchSpec.user`, agent/launchers/), in a work directory and run directory only that user can enter. The
agent's own files stay its own: its work root and each allocation's directory can be passed through but not
listed (0711), and what it keeps in them (its lock, state and process records) is readable by root only. An
agent that is not root refuses such a task rather than run it as its own user.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import stat
from typing import Any

PASS_THROUGH = 0o711  # others may enter (to reach their own work directory) but not list
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


class CannotRunAs(Exception):
    """A task must run as an OS user and this agent cannot do that safely: the reason says why and what to do."""


def is_root() -> bool:
    return os.geteuid() == 0


def describe(run_as: dict[str, Any]) -> str:
    return f"OS user {run_as['user']} (uid {run_as['uid']}, group {run_as['group']}, gid {run_as['gid']})"


def check(run_as: dict[str, Any], work_root: pathlib.Path, reach: bool = True) -> None:
    """Raise CannotRunAs unless this agent can run a task as `run_as` with its work directory under `work_root`
    (`reach`: that user must reach it through the host's directories, as a process does; a container does not)."""
    if not is_root():
        raise CannotRunAs(
            f"this task must run as {describe(run_as)}, but the agent runs as uid {os.geteuid()}, not root: the agent "
            f"must run as root to run tasks as OS users. Run the agent as root, or remove the link "
            f"(`stalwart user link-with-agent-user NAME --unlink`, or the workspace's default OS user)")
    blocked = unreachable_dir(pathlib.Path(work_root), run_as["uid"], run_as["gid"]) if reach else None
    if blocked is not None:
        raise CannotRunAs(
            f"{describe(run_as)} cannot enter {blocked} (mode {oct(blocked.stat().st_mode & 0o777)}), so it could not "
            f"reach its work directory under {work_root}: give the agent a --work-dir whose parent directories other "
            f"users may enter (e.g. under /var/lib or /srv), outside the master's home")


def unreachable_dir(path: pathlib.Path, uid: int, gid: int) -> pathlib.Path | None:
    """The first directory from / down to `path` that uid:gid (without supplementary groups) may not enter."""
    for d in [*reversed(path.absolute().parents), path.absolute()]:
        try:
            st = d.stat()
        except OSError:
            return None  # made later by the agent (root), which makes it passable
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return d
    return None


def secure_work_root(work_root: pathlib.Path) -> None:
    """A root agent's work root: passable (tasks reach their own directories in it), not listable."""
    if is_root():
        os.chmod(work_root, PASS_THROUGH)


def hand_over(path: pathlib.Path, run_as: dict[str, Any]) -> None:
    """Give `path` and everything under it to the task's user, the top readable by that user only."""
    uid, gid = run_as["uid"], run_as["gid"]
    os.lchown(path, uid, gid)
    for top, dirs, files in os.walk(path):  # follows no links: a link is re-owned, never what it points at
        for name in dirs + files:
            os.lchown(os.path.join(top, name), uid, gid)
    os.chmod(path, PRIVATE_DIR)


def user_env(run_as: dict[str, Any] | None) -> dict[str, str]:
    """HOME, USER and LOGNAME of the task's user (its home from the password database when it has an entry)."""
    if run_as is None:
        return {}
    try:
        home = pwd.getpwuid(run_as["uid"]).pw_dir
    except KeyError:
        home = "/"
    return {"HOME": home, "USER": run_as["user"], "LOGNAME": run_as["user"]}
