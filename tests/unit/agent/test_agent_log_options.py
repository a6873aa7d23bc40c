"""`stalwart agent run` refuses a log buffer bound or block timeout that makes no sense, naming the option."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, message", [
    (["--log-buffer-mib", "0"], "--log-buffer-mib: expected a number of MiB > 0"),
    (["--log-buffer-mib", "nan"], "--log-buffer-mib: expected a number of MiB > 0"),
    (["--log-block-timeout", "-1"], "--log-block-timeout: expected seconds >= 0"),
    (["--log-block-timeout", "inf"], "--log-block-timeout: expected seconds >= 0"),
])
def test_bad_log_options_are_refused_before_the_agent_starts(args, message):
    res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", "http://127.0.0.1:9",
                          "--token", "t", *args], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert message in res.stderr
