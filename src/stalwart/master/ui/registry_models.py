"""Page models of the model registry, read for the web UI: the models list, a model (its fields and versions) and a
version (its checkpoint, and the experiment and trial that checkpoint came from).

A model and a version are the API's views of them (`registry.models.view`, `registry.versions.views_of`: the
fields of GET /api/v1/models/{model_name} and .../versions/{n}, the checkpoint's storage secrets hidden), so the
pages show what the API answers. Which workspaces' models a caller may see is the caller's business: the functions
take `visible`, a predicate on a workspace id (registry_pages.py makes it from `identity.authz` with
view_model_registry), and leave out the rest; a model the caller may not see is a 404, as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stalwart.api.errors import NotFoundError
from stalwart.api.models.common import JsonObject
from stalwart.master.queries import models_registry as mq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.registry import models as registry_models, versions as registry_versions
from stalwart.master.service import Master

Visible = Callable[[int], bool]
"""May the caller see the models of the workspace with this id?"""


def models_page(m: Master, visible: Visible, *, archived: bool = False) -> JsonObject:
    """Every model the caller may see, by name (archived ones too only when asked)."""
    with m.db.begin() as conn:
        rows = mq.models(conn, workspace_ids=None, archived=None if archived else False)
    shown = sorted((registry_models.view(r) for r in rows if visible(r["workspace_id"])),
                   key=lambda v: str(v["name"]).lower())
    return {"models": shown, "archived": archived}


def _model(conn: Conn, visible: Visible, identifier: str) -> Row:
    row = mq.model(conn, identifier)
    if row is None or not visible(row["workspace_id"]):
        raise NotFoundError(f"model {identifier!r} not found")
    return row


def model_page(m: Master, visible: Visible, identifier: str) -> JsonObject:
    """One model (by name or id) and its versions, newest first."""
    with m.db.begin() as conn:
        row = _model(conn, visible, identifier)
        versions = registry_versions.views_of(conn, mq.versions(conn, row["id"]))
    return {"model": registry_models.view(row), "versions": sorted(versions, key=lambda v: -int(v["version"]))}


def version_page(m: Master, visible: Visible, identifier: str, number: int) -> JsonObject:
    """One version of a model, with its checkpoint's files and where it came from."""
    with m.db.begin() as conn:
        row = _model(conn, visible, identifier)
        found = mq.version(conn, row["id"], number)
        if found is None:
            raise NotFoundError(f"model {row['name']!r} has no version {number}")
        version = registry_versions.views_of(conn, [found])[0]
    return {"model": registry_models.view(row), "version": version, "files": _files(version["checkpoint"])}


def _files(checkpoint: JsonObject) -> list[dict[str, Any]]:
    """The checkpoint's files by path, each with its size in bytes (when the trial reported one)."""
    resources = checkpoint.get("resources") or {}
    return [{"path": path, "size": size} for path, size in sorted(resources.items())]
