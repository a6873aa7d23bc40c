"""Waiting for a gang of launcher processes started by a test, the chief first."""

from __future__ import annotations

import subprocess


def wait_for_gang(procs: list[subprocess.Popen[str]], timeout: float) -> list[tuple[str, str]]:
    """Each launcher's (stdout, stderr), `procs[0]` being the chief's, which is waited for first.

    When the chief fails, its peers are killed at once (they would wait for its store until torch's own
    timeout) and the chief's output is what the AssertionError shows.
    """
    outs = [procs[0].communicate(timeout=timeout)]
    if procs[0].returncode != 0:
        for p in procs[1:]:
            p.kill()
            p.communicate()
        raise AssertionError(f"the chief's launcher failed ({procs[0].returncode}): {outs[0]}")
    outs += [p.communicate(timeout=timeout) for p in procs[1:]]
    assert [p.returncode for p in procs] == [0] * len(procs), outs
    return outs
