"""`cmd run -i DIR`, `cmd describe` and `cmd config` (issue 32, "Commands"), on a real master and agent.

An included directory arrives under its own name beside the context's files; the environment variables the config
sets reach the program; `describe` shows the command's kind, result and program, `config` its stored config with
its secrets hidden; an unknown command is a clear not-found (exit code 3).
"""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.integration

CONFIG = """
resources: {slots: 0}
environment:
  environment_variables: ["GREETING=hello from the config"]
  registry_auth: {username: builder, password: reg-pw-0451, serveraddress: registry.example}
"""


def test_an_included_directory_the_environment_describe_and_a_config_with_its_secret_hidden(cluster, tmp_path):
    context, extra = tmp_path / "ctx", tmp_path / "extra-data"
    context.mkdir()
    extra.mkdir()
    (context / "main.sh").write_text('cat extra-data/note.txt; echo "$GREETING"\n')
    (extra / "note.txt").write_text("the included note\n")
    (tmp_path / "cmd.yaml").write_text(CONFIG)
    ran = cluster.cli("cmd", "run", "--config-file", str(tmp_path / "cmd.yaml"), "-c", str(context), "-i", str(extra),
                      "sh", "main.sh", check=True)
    assert "the included note" in ran.stdout and "hello from the config" in ran.stdout, ran.stdout
    cmd_id = re.search(r"Launched command (\d+)", ran.stdout).group(1)

    described = json.loads(cluster.cli("cmd", "describe", cmd_id, "--json", check=True).stdout)
    assert described["kind"] == "command" and described["result"] == "COMPLETED"
    assert described["entrypoint"] == ["sh", "main.sh"] and described["exit_code"] == 0
    table = cluster.cli("cmd", "describe", cmd_id, check=True).stdout
    assert "COMPLETED" in table and "sh main.sh" in table

    shown = cluster.cli("cmd", "config", cmd_id, check=True).stdout
    assert "reg-pw-0451" not in shown and "builder" in shown and "GREETING=hello from the config" in shown
    assert "reg-pw-0451" not in cluster.cli("cmd", "describe", cmd_id, "--json").stdout

    missing = cluster.cli("cmd", "describe", "999999")
    assert missing.returncode == 3 and "999999" in missing.stderr + missing.stdout
