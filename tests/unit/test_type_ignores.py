"""Every `type: ignore` in src/stalwart names its error codes and says why (issue 27: strict types, no blanket
ignores). mypy itself refuses an ignore without a code (`enable_error_code = ["ignore-without-code"]` in
pyproject.toml) and an unused one (`warn_unused_ignores`); the reason is what this test checks: a comment after the
ignore on the same line, or a comment on the line just above it."""

from __future__ import annotations

import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "stalwart"
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def _unexplained() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            match = IGNORE.search(line)
            if match is None:
                continue
            reason_after = "#" in match["rest"] and match["rest"].split("#", 1)[1].strip()
            reason_above = i > 0 and lines[i - 1].strip().startswith("#")
            if not match["codes"] or not (reason_after or reason_above):
                found.append(f"{path.relative_to(SRC.parent)}:{i + 1}: {line.strip()}")
    return found


def test_every_type_ignore_names_its_codes_and_a_reason() -> None:
    unexplained = _unexplained()
    assert not unexplained, ("a `type: ignore[code]` needs a reason (a comment after it, or on the line above):\n"
                             + "\n".join(unexplained))


def test_the_check_finds_a_bare_ignore() -> None:
    bare = IGNORE.search("x = f()  # type: ignore")
    coded_without_reason = IGNORE.search("x = f()  # type: ignore[arg-type]")
    explained = IGNORE.search("x = f()  # type: ignore[arg-type]  # f's stub is wrong")
    assert bare is not None and not bare["codes"]
    assert coded_without_reason is not None and coded_without_reason["codes"]
    assert "#" not in coded_without_reason["rest"]
    assert explained is not None and "#" in explained["rest"]
