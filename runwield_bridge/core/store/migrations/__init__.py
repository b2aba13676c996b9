"""The schema's Alembic migrations, run by ``core/store/migrate.py`` (no alembic.ini): one file per change in ``versions/``."""
