"""The master's database: tables, engine set-up, migrations and queries. Only the master imports it."""

from stalwart.db import task_tables as task_tables  # its tables join the shared metadata on any import of the package
from stalwart.db.engine import Database, normalize_url

__all__ = ["Database", "normalize_url"]
