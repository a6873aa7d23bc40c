"""Model versions: a COMPLETED checkpoint registered as a model's next version (1, 2, ...), listed, changed, deleted.

Registering needs edit_model_registry on the model (checked on the path) and view_experiments on the checkpoint's
experiment (checked here: a caller may not publish a checkpoint it could not read). An archived model takes no new
versions (409). A registered checkpoint is never garbage-collected, and neither it nor its experiment can be deleted
while a version names it (experiments/checkpoint_holders.py, experiments/deleting.py read `queries.models_registry`).
"""

from __future__ import annotations

import time
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidStateError, NotFoundError
from stalwart.master import views
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import models_registry as q
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.registry import models
from stalwart.master.service import Master

FIELDS = ("name", "comment", "labels", "metadata", "notes")
"""What a version carries of its own, besides its checkpoint."""


def view(row: Row, checkpoint: Row) -> dict[str, Any]:
    """A version as the API shows it (api/models/registry.ModelVersion); the checkpoint's storage redacted."""
    return {"id": row["id"], "model_id": row["model_id"], "model_name": row["model_name"], "version": row["version"],
            "name": row["name"], "comment": row["comment"], "labels": list(row["labels"]),
            "metadata": dict(row["metadata"]), "notes": row["notes"], "username": row["owner"],
            "creation_time": row["created_at"], "last_updated_time": row["updated_at"],
            "checkpoint": views.checkpoint(checkpoint), "experiment_id": row["experiment_id"],
            "trial_id": row["trial_id"]}


def views_of(conn: Conn, rows: list[Row]) -> list[dict[str, Any]]:
    ckpts = q.checkpoints(conn, sorted({r["checkpoint_uuid"] for r in rows}))
    return [view(r, ckpts[r["checkpoint_uuid"]]) for r in rows]


def get(conn: Conn, identifier: str, number: int) -> Row:
    model = models.get(conn, identifier)
    row = q.version(conn, int(model["id"]), number)
    if row is None:
        raise NotFoundError(f"model {model['name']} has no version {number} (see `stalwart model list-versions "
                            f"{model['name']}`)")
    return row


def listing(m: Master, identifier: str) -> list[dict[str, Any]]:
    with m.db.begin() as conn:
        return views_of(conn, q.versions(conn, int(models.get(conn, identifier)["id"])))


def describe(m: Master, identifier: str, number: int) -> dict[str, Any]:
    with m.db.begin() as conn:
        return views_of(conn, [get(conn, identifier, number)])[0]


def _checkpoint(m: Master, ident: Identity, uuid: str) -> Row:
    """The checkpoint to register: the caller must be able to view it (403), it must exist (404) and be COMPLETED
    (409)."""
    authz.require_checkpoints(m, ident, P.VIEW_EXPERIMENTS, [uuid])
    with m.db.begin() as conn:
        found = q.checkpoints(conn, [uuid]).get(uuid)
    if found is None:
        raise NotFoundError(f"checkpoint {uuid} not found (see `stalwart experiment list-checkpoints`)")
    if found["experiment_id"] is None:  # kept by an experiment's delete for the trials that started from it
        raise InvalidStateError(f"checkpoint {uuid}'s experiment was deleted (it is kept only for the trials that "
                                "started from it), so it cannot be registered as a model version")
    if found["state"] != "COMPLETED":
        raise InvalidStateError(f"checkpoint {uuid} is {found['state']}; only a COMPLETED checkpoint can be "
                                "registered as a model version")
    return found


def register(m: Master, ident: Identity, identifier: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint as the model's next version, owned by the caller."""
    uuid = str(fields["checkpoint_uuid"])
    with m.db.begin() as conn:
        model = models.get(conn, identifier)
    if model["archived"]:
        raise InvalidStateError(f"model {model['name']} is archived and takes no new versions: unarchive it first")
    _checkpoint(m, ident, uuid)
    now = time.time()
    with m.db.begin() as conn:
        model = models.get(conn, int(model["id"]))
        if model["archived"]:
            raise InvalidStateError(f"model {model['name']} is archived and takes no new versions")
        number = q.next_version(conn, int(model["id"]))
        q.insert_version(conn, model_id=int(model["id"]), version=number, checkpoint_uuid=uuid,
                         name=fields.get("name") or "", comment=fields.get("comment") or "",
                         labels=list(fields.get("labels") or []), metadata=dict(fields.get("metadata") or {}),
                         notes=fields.get("notes") or "", owner=ident.username, created_at=now, updated_at=now)
        q.update_model(conn, int(model["id"]), updated_at=now)
        return views_of(conn, [get(conn, str(model["id"]), number)])[0]


def change(m: Master, identifier: str, number: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Change the fields given; 409 while the model is archived."""
    values = {k: fields[k] for k in FIELDS if fields.get(k) is not None}
    with m.db.begin() as conn:
        model = models.get(conn, identifier)
        row = get(conn, str(model["id"]), number)
        if model["archived"]:
            raise InvalidStateError(f"model {model['name']} is archived: unarchive it before changing its versions")
        if values:
            q.update_version(conn, int(row["id"]), updated_at=time.time(), **values)
        return views_of(conn, [get(conn, str(model["id"]), number)])[0]


def delete(m: Master, identifier: str, number: int) -> None:
    """The version (its checkpoint stays with its experiment). Later versions keep their numbers."""
    with m.db.begin() as conn:
        q.delete_version(conn, int(get(conn, identifier, number)["id"]))
