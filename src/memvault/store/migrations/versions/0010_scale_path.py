"""`deployment_identity`: the database's own id and the id of the keystore bound to it.

On first use a worker records a random `database_id` here and the keystore records it too (and
its own `keystore_id`, stored here), so a worker pointed at another keystore, or at a fresh
local one, refuses to start instead of forking the key hierarchy (docs/keyring.md). The table
holds no tenant data, so it has no `tenant_id` and no row-level security; the app role may read
and insert (granted by `memvault db upgrade` like every table).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployment_identity",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=256), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("deployment_identity")
