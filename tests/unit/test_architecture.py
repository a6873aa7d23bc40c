"""The layer rules of ARCHITECTURE.md hold (import-linter contracts in .importlinter)."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept():
    lint = pathlib.Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(lint), "--config", str(REPO / ".importlinter")], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_module_says_what_it_is_for():
    missing = []
    for path in (REPO / "src" / "stalwart").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        text = path.read_text().lstrip()
        if not (text.startswith('"""') or text.startswith("'''")):
            missing.append(str(path.relative_to(REPO)))
    assert missing == []
