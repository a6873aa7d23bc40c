"""Ids between 2^31 and 2^63 - 1 are valid API ids that name no row: every route taking one answers 404 (or,
for a list filter, nothing), on SQLite and on PostgreSQL, whose 32-bit id columns would otherwise refuse the
parameter with "integer out of range" (a 500)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.api.auth_kinds import AuthKind
from stalwart.api.routes_table import ROUTES
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

PAST_32_BITS = 3_000_000_000
ID_PARAMS = {"exp_id", "trial_id", "cmd_id", "workspace_id", "project_id"}
BODIES = {("POST", "/api/v1/experiments/{exp_id}/move"): {"destinationProjectId": 1},
          ("POST", "/api/v1/workspaces/{workspace_id}/projects"): {"name": "p"},
          ("PATCH", "/api/v1/experiments/{exp_id}/checkpoint-gc-policy"): {
              "save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0, "dry_run": True},
          ("PUT", "/api/v1/experiments/{exp_id}/retain_logs"): {"num_days": 1}}
"""Bodies a route needs to get as far as its id (others get `{}`)."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def client(request, tmp_path):
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    app = create_app(MasterSettings(db_url=url, home=tmp_path, ui_metrics_index=False))
    with TestClient(app, raise_server_exceptions=False) as c:
        as_admin(c)
        yield c


def _cases() -> list[tuple[str, str, dict | None]]:
    """Every API route of the user kind with an id path parameter (the others need tokens; see test_trust)."""
    out = []
    for spec in ROUTES:
        names = set(re.findall(r"\{(\w+)\}", spec.path))
        if spec.path.startswith("/api/") and spec.auth is AuthKind.USER and names & ID_PARAMS:
            url = re.sub(r"\{(\w+)\}", lambda m: str(PAST_32_BITS) if m.group(1) in ID_PARAMS else "pause", spec.path)
            out.append((spec.method, url, BODIES.get(spec.key, {} if spec.method in ("POST", "PATCH") else None)))
    return out


def test_every_user_route_answers_404_for_an_id_past_32_bits(client):
    answers = {}
    for method, url, body in _cases():
        reply = client.request(method, url, json=body)
        answers[f"{method} {url}"] = reply.status_code
    assert answers and all(code == 404 for code in answers.values()), answers


def test_a_filter_with_an_id_past_32_bits_matches_nothing(client):
    reply = client.get("/api/v1/experiments/1/metrics/series", params={"trial_ids": str(PAST_32_BITS)})
    assert reply.status_code == 404, reply.text  # experiment 1 does not exist either: no 500 on the way
