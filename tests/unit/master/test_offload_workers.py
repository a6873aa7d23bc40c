"""The master's archive-reading worker processes (master/offload.py) end when the master is SIGKILLed.

A process stands in for the master: it reads a real context archive through `offload.archive_names` (which starts
the workers), prints their pids and waits. The test kills it with SIGKILL, as a crash or the chaos tests do, and
the workers must be gone soon after, not left waiting for work forever.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

HOLDER = textwrap.dedent("""
    import multiprocessing, pathlib, sys, tempfile, time
    from stalwart.context import ArchiveLimits, pack_context
    from stalwart.master import offload

    if __name__ == "__main__":
        with tempfile.TemporaryDirectory() as d:
            (pathlib.Path(d) / "train.py").write_text("print('hi')\\n")
            names = offload.archive_names(pack_context(pathlib.Path(d)).data, ArchiveLimits())
        assert "train.py" in names, names
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
        time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_end_soon_after_their_master_is_killed(tmp_path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        workers = [int(p) for p in holder.stdout.readline().split()]
        assert workers and all(_alive(p) for p in workers)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [p for p in workers if _alive(p)] == [], "the archive workers outlived their master"
    finally:
        holder.kill()
