"""Running `stalwart` as a separate process in tests: its result, its output when it must succeed, its error when it
must fail with one exit code and one clear message."""

from __future__ import annotations

import subprocess
import sys


def run(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=120, input=stdin)


def ok(env: dict[str, str], *args: str, stdin: str = "") -> str:
    res = run(env, *args, stdin=stdin)
    assert res.returncode == 0, f"stalwart {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res.stdout


def fails(env: dict[str, str], code: int, *args: str, stdin: str = "") -> str:
    """A command that must fail with exit `code` and one clear message (no traceback); its stderr."""
    res = run(env, *args, stdin=stdin)
    assert res.returncode == code, f"stalwart {' '.join(args)}: exit {res.returncode}, not {code}:\n{res.stdout}\n" \
                                   f"{res.stderr}"
    assert "Traceback" not in res.stderr and res.stderr.strip(), res.stderr
    return res.stderr
