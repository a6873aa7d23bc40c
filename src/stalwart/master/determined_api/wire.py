"""Stalwart values in Determined's proto-JSON conventions: RFC 3339 times and paging (det-wire.md §4)."""

from __future__ import annotations

import datetime

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.wire import Pagination


def rfc3339(epoch_s: float | None) -> str | None:
    """An epoch time as RFC 3339 UTC with microseconds and `Z` (None stays None: proto JSON's unset time)."""
    if epoch_s is None:
        return None
    when = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def page(total: int, offset: int, limit: int) -> tuple[slice, Pagination]:
    """Determined's paging of `total` rows (its CalculatePagination): `limit` 0 means all of them, and an offset past
    the end is a 400. `read_paginated` in the client loops until `endIndex >= total`, so endIndex is exact."""
    if offset < 0 or limit < 0:
        raise InvalidRequest(f"offset ({offset}) and limit ({limit}) must not be negative")
    if offset > total:
        raise InvalidRequest(f"offset {offset} is past the end of the {total} result(s): ask for 0..{total}")
    end = total if limit == 0 else min(offset + limit, total)
    return slice(offset, end), Pagination(offset=offset, limit=limit, startIndex=offset, endIndex=end, total=total)
