"""A follow-up queue per conversation

A message that comes while its conversation's turn runs is kept (``queued_messages``) until a turn takes it, so a crash
or a restart loses none; a conversation's queue mode, set with ``/queue``, is kept too (``queue_modes``).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "queued_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation", sa.String(), nullable=False),
        sa.Column("payload", sa.String(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sending", sa.Boolean(), nullable=False),
        sa.Column("queued_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_queued_messages_conversation_id", "queued_messages", ["conversation", "id"])
    op.create_table(
        "queue_modes",
        sa.Column("conversation", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("conversation"),
    )
