"""Code reviews

A browser review of an execution's change (one round of it), decided once: Publish, Request changes or Abandon. The
link's token is stored only as a hash, as for Plan reviews.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "code_reviews",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("execution_id", sa.String(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(), nullable=True),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("notes", sa.String(), nullable=False),
        sa.Column("decided_at", sa.Float(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_code_reviews_execution_id", "code_reviews", ["execution_id"])
    op.create_index("ix_code_reviews_token_hash", "code_reviews", ["token_hash"], unique=True)
