"""Several bridge instances on one database: leases, conversation owners, handoffs.

Leases hold an instance's liveness and a listener only one instance runs; each conversation's events are handled on
its owner; events one instance received for another's conversation are handed over; each unfinished chat message
notes the instance showing it.

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
    with op.batch_alter_table("unfinished_messages", recreate="always") as batch:
        batch.add_column(sa.Column("instance", sa.String(), nullable=True))

