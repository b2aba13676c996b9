"""Alembic's entry point: migrate the connection that ``core/store/migrate.py`` hands over, inside its transaction."""

from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()
