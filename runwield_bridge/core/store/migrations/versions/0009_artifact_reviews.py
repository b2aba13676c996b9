"""Artifact Reviews

An agent asks the person to review a file it produced (``request_artifact_review``); the review's link is a capability
like a Plan review's, its token stored only as a hash, and the review is answered once.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artifact_reviews",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("project_dir", sa.String(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("question", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("feedback", sa.String(), nullable=False),
        sa.Column("decided_at", sa.Float(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_artifact_reviews_token_hash", "artifact_reviews", ["token_hash"], unique=True)
