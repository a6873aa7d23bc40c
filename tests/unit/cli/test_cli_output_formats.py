"""One renderer for every listing: a table, CSV or JSON; `--json` and `--csv` on a command, never both."""

from __future__ import annotations

import csv
import io
import json

import click
import pytest
from click.testing import CliRunner

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.experiments import ExperimentList
from stalwart.api.states import ExperimentState
from stalwart.cli import output
from stalwart.cli.base import format_options

COLUMNS = ["ID", "Name", "State", "Note"]
ROWS = [(1, "a, with comma", ExperimentState.COMPLETED, None), (2, 'say "hi"', ExperimentState.ACTIVE, "x")]


def test_csv_has_a_header_and_a_row_each_quoted_where_needed(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(output.Format.CSV, COLUMNS, ROWS)
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [COLUMNS, ["1", "a, with comma", "COMPLETED", ""], ["2", 'say "hi"', "ACTIVE", "x"]]


def test_json_prints_the_api_answer_when_given(capsys: pytest.CaptureFixture[str]) -> None:
    answer = ExperimentList(experiments=[], total=0)
    output.emit(output.Format.JSON, COLUMNS, ROWS, json_data=answer)
    assert json.loads(capsys.readouterr().out) == {"experiments": [], "total": 0}


def test_json_without_an_answer_prints_the_rows_as_objects(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(output.Format.JSON, COLUMNS, ROWS)
    first = json.loads(capsys.readouterr().out)[0]
    assert first == {"ID": 1, "Name": "a, with comma", "State": "COMPLETED", "Note": None}


def test_a_table_shows_every_cell(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(output.Format.TABLE, COLUMNS, ROWS)
    printed = capsys.readouterr().out
    assert "a, with comma" in printed and "COMPLETED" in printed and "Note" in printed


@click.command()
@format_options
def shows(fmt: output.Format) -> None:
    click.echo(fmt.value)


@pytest.mark.parametrize(("flags", "expected"), [([], "table"), (["--json"], "json"), (["--csv"], "csv")])
def test_the_flags_choose_the_format(flags: list[str], expected: str) -> None:
    result = CliRunner().invoke(shows, flags)
    assert result.exit_code == 0 and result.output.strip() == expected


def test_json_and_csv_together_are_refused() -> None:
    result = CliRunner().invoke(shows, ["--json", "--csv"])
    assert isinstance(result.exception, InvalidRequest)
    assert "only one of --json and --csv" in str(result.exception)


def test_the_exit_codes_in_the_help_are_the_errors_own() -> None:
    from stalwart.api.errors import (
        AuthError,
        ConfigError,
        ForbiddenError,
        InvalidRequest,
        InvalidStateError,
        MasterUnavailable,
        NotFoundError,
        StalwartError,
    )
    from stalwart.cli.main import EXIT_CODES, cli

    for error, text in ((StalwartError, "1 failed"), (InvalidRequest, "2 bad input"), (ConfigError, "2 bad input"),
                        (NotFoundError, "3 not found"), (InvalidStateError, "4 wrong state"),
                        (AuthError, "5 not allowed"), (ForbiddenError, "5 not allowed"),
                        (MasterUnavailable, "6 master unreachable")):
        assert f"{error.exit_code} " == text[:2] and text in EXIT_CODES
    assert "Exit codes:" in CliRunner().invoke(cli, ["--help"]).output
