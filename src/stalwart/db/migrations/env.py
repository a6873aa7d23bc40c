"""Alembic environment: runs migrations on the connection the master hands over."""

from alembic import context

from stalwart.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("stalwart migrations run through stalwart.db.Database.migrate()")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
