"""The shared pieces of every table definition: the one `MetaData`, the JSON column type (JSONB on PostgreSQL) and
the 32-bit id column type. `db/tables.py` defines the tables with them (and re-exports them)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

metadata = sa.MetaData()

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

INT32_MAX = 2**31 - 1

# Every table whose integer id the database assigns is `sqlite_autoincrement`: SQLite would otherwise hand the
# largest id out again after its row is deleted (db/counters.py, migration 0009). PostgreSQL's sequences never do.


class Id32(sa.types.TypeDecorator[int]):
    """A 32-bit id column (experiments, trials, commands and the columns referring to them).

    The API takes ids up to 2^63 - 1. An id past this column's range names no row, so it is bound as NULL:
    a lookup finds nothing (404) instead of PostgreSQL refusing the parameter ("integer out of range"),
    which would answer 500. Ids the database assigns never leave the range."""

    impl = sa.Integer
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: sa.Dialect) -> int | None:
        if value is not None and not -INT32_MAX - 1 <= value <= INT32_MAX:
            return None
        return value
