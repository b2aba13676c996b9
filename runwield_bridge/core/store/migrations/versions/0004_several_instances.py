"""Several bridge instances on one database: leases, conversation owners, handoffs.

Leases hold an instance's liveness and a listener only one instance runs; each conversation's events are handled on
its owner; events one instance received for another's conversation are handed over; each unfinished chat message
notes the instance showing it, and is keyed by its conversation too (a Telegram message id is unique only in its
chat, so two chats' notes overwrote each other).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "conversation_owners",
        sa.Column("conversation", sa.String(), nullable=False),
        sa.Column("instance", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("conversation"),
    )
    op.create_index("ix_conversation_owners_instance", "conversation_owners", ["instance"])
    op.create_table(
        "handoffs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance", sa.String(), nullable=False),
        sa.Column("origin", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("payload", sa.String(), nullable=False),
        sa.Column("started", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_handoffs_instance", "handoffs", ["instance"])
    # A Telegram message id is unique only in its chat: the key takes in the conversation; and the instance showing it.
    op.create_table(
        "unfinished_messages_0004",
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("message_id", sa.String(), nullable=False),
        sa.Column("conversation", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("instance", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("channel", "message_id", "conversation"),
    )
    op.execute(
        "INSERT INTO unfinished_messages_0004 (channel, message_id, conversation, text, kind, updated_at) "
        "SELECT channel, message_id, conversation, text, kind, updated_at FROM unfinished_messages"
    )
    op.drop_table("unfinished_messages")
    op.rename_table("unfinished_messages_0004", "unfinished_messages")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER INDEX unfinished_messages_0004_pkey RENAME TO unfinished_messages_pkey")

