"""What the query modules hand back: a row is a read-only mapping of column name to value."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.errors import NotFoundError

Row = sa.RowMapping
Conn = sa.Connection


def one_or_404(conn: Conn, table: sa.Table, key: object, what: str) -> Row:
    """The row of `table` whose primary key is `key`; a 404 naming `what` when there is none."""
    pk = table.primary_key.columns.values()[0]
    row = conn.execute(sa.select(table).where(pk == key)).mappings().first()
    if row is None:
        raise NotFoundError(f"{what} {key} not found")
    return row
