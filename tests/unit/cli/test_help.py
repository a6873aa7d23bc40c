"""Every command's help helps: each command and group of the CLI, walked from the root group, has a summary (the
line its group lists it with) that is an imperative sentence, says more than the command's name, and is not cut
off in the listing; each of its options says what it does; and its `--help` runs."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from stalwart.cli.main import cli

# Imperative verbs that end in "ed" like a past tense does; any other first word ending in "ed" is a past tense.
IMPERATIVES_ENDING_IN_ED = frozenset({"embed", "feed", "seed", "shed", "speed", "proceed"})
# A summary that starts with one of these names a thing instead of saying what the command does.
NOT_A_VERB = frozenset({"a", "an", "the", "this", "these", "which", "what", "its", "your"})
# Words that carry no meaning of their own when deciding whether a summary only repeats the command's name.
FILLER = frozenset({"a", "an", "the", "of", "to", "in", "on", "at", "its", "it", "this", "these", "and", "or", "from",
                    "for", "with", "one", "each", "every", "all", "given"})
# Click lays help out at most 80 columns wide; a group's listing gives each summary what its longest name leaves.
HELP_WIDTH = 80 - 2


def walk(command: click.Command, path: tuple[str, ...] = (), parent: click.Group | None = None,
         ) -> list[tuple[tuple[str, ...], click.Command, click.Group | None]]:
    """Every command and group under `command` (itself first), with its path of names and the group listing it."""
    found = [(path, command, parent)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += walk(sub, (*path, name), command)
    return found


COMMANDS = walk(cli)
IDS = [" ".join(path) or "stalwart" for path, _cmd, _parent in COMMANDS]


def summary(command: click.Command) -> str:
    """The whole first sentence of the command's help: what its group lists it with, when it fits."""
    return command.get_short_help_str(limit=10_000)


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z'_]*", text)


def singular(word: str) -> str:
    word = word.lower()
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def summary_problem(text: str, path: tuple[str, ...]) -> str | None:
    """What is wrong with `text` as the summary of the command at `path`, or None."""
    if not text.strip():
        return "it is empty"
    first = words(text)[0] if words(text) else ""
    if not first[:1].isupper():
        return f"it does not start with a capitalised verb ({first!r})"
    if first.lower() in NOT_A_VERB or text.split()[0].endswith(":"):
        return f"it names a thing ({first!r}) instead of saying what the command does, in the imperative"
    if first.lower().endswith("ed") and first.lower() not in IMPERATIVES_ENDING_IN_ED:
        return f"it is in the past tense ({first!r}); say what the command does, in the imperative"
    named = {singular(part) for name in path for part in name.split("-")}
    said = {singular(w) for w in words(text) if not w.isupper()} - FILLER
    if said <= named:
        return f"it only repeats the command's name ({' '.join(path)}); say what it does and what it changes"
    return None


def test_the_checks_flag_what_they_should() -> None:
    assert summary_problem("", ("e", "kill")) == "it is empty"
    assert "past tense" in (summary_problem("Paused an experiment.", ("experiment", "pause")) or "")
    assert "repeats" in (summary_problem("Kill commands.", ("command", "kill")) or "")
    assert "repeats" in (summary_problem("Unarchive workspace NAME.", ("workspace", "unarchive")) or "")
    assert "repeats" in (summary_problem("List the user groups.", ("user-group", "list")) or "")
    assert "names a thing" in (summary_problem("The audit log (admins only).", ("audit",)) or "")
    assert "names a thing" in (summary_problem("Roles: list-roles, describe-role.", ("rbac",)) or "")
    assert summary_problem("Embed a model's files in the archive.", ("embed",)) is None
    assert summary_problem("Pause an experiment: its trials checkpoint and stop.", ("experiment", "pause")) is None
    assert len(COMMANDS) > 100 and ("experiment", "kill") in [path for path, _c, _p in COMMANDS]


@pytest.mark.parametrize(("path", "command", "parent"), COMMANDS, ids=IDS)
def test_summary_says_what_the_command_does(path: tuple[str, ...], command: click.Command,
                                            parent: click.Group | None) -> None:
    problem = summary_problem(summary(command), path)
    assert problem is None, f"`stalwart {' '.join(path)}` summary {summary(command)!r}: {problem}"


@pytest.mark.parametrize(("path", "command", "parent"), [c for c in COMMANDS if c[2] is not None],
                         ids=[i for i, c in zip(IDS, COMMANDS, strict=True) if c[2] is not None])
def test_summary_fits_its_groups_listing(path: tuple[str, ...], command: click.Command, parent: click.Group) -> None:
    room = HELP_WIDTH - 6 - max(len(name) for name in parent.commands)
    text = summary(command)
    assert len(text) <= room, (f"`stalwart {' '.join(path)}` summary is cut off in `{' '.join(path[:-1]) or 'stalwart'}"
                               f" --help` ({len(text)} characters, room for {room}): {text!r}; put the details in "
                               f"the paragraph after it")


@pytest.mark.parametrize(("path", "command", "parent"), COMMANDS, ids=IDS)
def test_every_option_says_what_it_does(path: tuple[str, ...], command: click.Command,
                                        parent: click.Group | None) -> None:
    silent = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not silent, f"`stalwart {' '.join(path)}` options without help=: {silent}"


@pytest.mark.parametrize(("path", "command", "parent"), COMMANDS, ids=IDS)
def test_help_runs(path: tuple[str, ...], command: click.Command, parent: click.Group | None) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="stalwart")
    assert result.exit_code == 0, result.output
    assert f"Usage: stalwart {' '.join(path)}".rstrip() in result.output
    assert "".join(summary(command).split()) in "".join(result.output.split())  # wrapped anywhere
