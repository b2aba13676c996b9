"""Indexes for long Sessions

A turn's statements find what they need without reading all of the Session's past. Starting a turn looks for the
Session's running turns, and with an index on the Session alone that read every turn the Session ever had (SQLite and
PostgreSQL alike); reading the transcript after an entry did the same on PostgreSQL. Both indexes now take in the
column the statement narrows by.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_turns_session_id", table_name="turns")
    op.create_index("ix_turns_session_id_state", "turns", ["session_id", "state"])
    op.drop_index("ix_transcript_session_id", table_name="transcript")
    op.create_index("ix_transcript_session_id_id", "transcript", ["session_id", "id"])
