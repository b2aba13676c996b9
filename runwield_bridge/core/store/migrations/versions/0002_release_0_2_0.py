"""The schema of release 0.2.0: a Session's turns (so an interrupted one is told once) and the platform updates a
chat channel claimed (so a redelivery is handled once).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "turns",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("stop_reason", sa.String(), nullable=True),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
    )
    op.create_index("ix_turns_session_id", "turns", ["session_id"])
    op.create_table(
        "seen_updates",
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("update_id", sa.String(), nullable=False),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("finished", sa.Boolean(), nullable=False),
        sa.Column("claimed_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("channel", "update_id"),
    )
    op.create_index("ix_seen_updates_claimed_at", "seen_updates", ["claimed_at"])

