"""`list_experiments` in Determined's shape: the filters the master has go to it, the others (several users,
experiment ids, a project id) apply here to each page, and `limit` counts the experiments kept."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from stalwart.api.errors import InvalidRequest
from stalwart.api.models import experiments as models
from stalwart.api.states import ExperimentState
from stalwart.client import Client
from stalwart.experimental.checkpoint import OrderBy

PAGE = 200


class ExperimentSortBy(enum.Enum):
    """What `list_experiments` sorts by (the fields Stalwart's master sorts experiments by)."""

    ID = "id"
    NAME = "name"
    STATE = "state"
    START_TIME = "start_time"
    END_TIME = "end_time"
    PROGRESS = "progress"


@dataclass(frozen=True)
class ExperimentQuery:
    """A list's filters and order, as the SDK's caller gave them."""

    sort_by: ExperimentSortBy | str | None = None
    order_by: OrderBy | str | None = None
    experiment_ids: Sequence[int] | None = None
    labels: Sequence[str] | None = None
    users: Sequence[str] | None = None
    states: Sequence[ExperimentState | str] | None = None
    name: str | None = None
    project_id: int | None = None
    owner: str | None = None
    include_archived: bool = False
    limit: int | None = None


def _sort_key(sort_by: ExperimentSortBy | str | None) -> models.SortBy:
    value = "id" if sort_by is None else sort_by.value if isinstance(sort_by, ExperimentSortBy) else str(sort_by)
    allowed = [s.value for s in ExperimentSortBy]
    if value not in allowed:
        raise InvalidRequest(f"sort_by: expected an ExperimentSortBy or one of {', '.join(allowed)}, got {sort_by!r}")
    return cast(models.SortBy, value)  # one of the Literal's values, checked just above


def _order(order_by: OrderBy | str | None) -> models.OrderBy:
    value = "desc" if order_by is None else (order_by.value if isinstance(order_by, OrderBy) else str(order_by))
    if value.lower() not in ("asc", "desc"):
        raise InvalidRequest(f"order_by: expected OrderBy.ASC or OrderBy.DESC, got {order_by!r}")
    return "asc" if value.lower() == "asc" else "desc"


def _owner_and_keep(q: ExperimentQuery) -> tuple[str | None, Callable[[models.Experiment], bool]]:
    """The owner filter the master applies, and what this side keeps of each page."""
    users = list(q.users) if q.users is not None else None
    if users is not None and q.owner is not None:
        raise InvalidRequest("give users or owner, not both")
    owner = q.owner if users is None or len(users) != 1 else users[0]
    ids = set(q.experiment_ids) if q.experiment_ids is not None else None

    def keep(e: models.Experiment) -> bool:
        return ((users is None or e.owner in users) and (ids is None or e.id in ids)
                and (q.project_id is None or e.project_id == q.project_id))

    return owner, keep


def list_experiment_models(client: Client, q: ExperimentQuery) -> list[models.Experiment]:
    """The experiments the query names, page by page, at most `limit` of them."""
    if q.limit is not None and q.limit < 0:
        raise InvalidRequest(f"limit: expected an integer >= 0, got {q.limit}")
    states = [s.value if isinstance(s, ExperimentState) else str(s) for s in q.states] if q.states else None
    owner, keep = _owner_and_keep(q)
    sort_by, order_by = _sort_key(q.sort_by), _order(q.order_by)
    found: list[models.Experiment] = []
    offset = 0
    while q.limit is None or len(found) < q.limit:
        page = client.list_experiments(limit=PAGE, offset=offset, states=states, name=q.name, owner=owner,
                                       labels=list(q.labels) if q.labels else None, sort_by=sort_by,
                                       include_archived=q.include_archived, order_by=order_by)
        found.extend(e for e in page.experiments if keep(e))
        offset += len(page.experiments)
        if len(page.experiments) < PAGE or offset >= page.total:
            break
    return found if q.limit is None else found[:q.limit]
