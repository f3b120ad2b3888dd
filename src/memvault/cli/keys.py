"""`memvault keys ...` rotation commands: master key, data keys and their re-encryption job.

Registered on the `keys` group by `memvault.cli` (`add_key_commands`), which passes its helpers
in, so this module never imports `memvault.cli` (that also works under `python -m memvault.cli`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from memvault.cli.options import CliHelpers, DataDir

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

NewEnv = Annotated[
    str | None,
    typer.Option(
        "--new-master-key-env",
        help="With MEMVAULT_MASTER_KEY_ENV: the variable holding the new master key (base64)",
    ),
]
ACTOR = "operator-cli"


def add_key_commands(
    keys_app: typer.Typer,
    helpers: CliHelpers,
) -> None:
    """Register rotate-master, master-status, rotate and reencrypt on `keys_app`."""

    @keys_app.command("rotate-master")
    @helpers.command
    def rotate_master(new_master_key_env: NewEnv = None, data_dir: DataDir = None) -> None:
        """Rewrap every tenant key under a new master key (note ciphertext is not touched).

        With a master key file: a new key file is generated, the keystore rewrapped in one
        transaction, then the new file installed over the old. Run it with the server stopped.
        After a crash, run it again (or `keys master-status`): it says which key opens the
        keystore and settles the leftover before rotating.
        """
        from memvault.compliance import rotation

        settings = helpers.settings_for(data_dir)
        lock = helpers.lock_data_dir(settings)
        try:
            note = rotation.finish_master_rotation(settings)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        if note is not None:
            typer.echo(note)
        services = helpers.open_services(settings, lock)
        try:
            if new_master_key_env:
                result = rotation.rotate_master_env(services, new_master_key_env, ACTOR)
            else:
                result = rotation.rotate_master_file(services, ACTOR)
        except BaseException:
            typer.echo(
                "rotation failed: " + rotation.master_status(settings, new_master_key_env),
                err=True,
            )
            raise
        finally:
            services.close()
        typer.echo(
            f"master key rotated: {result.tenant_keys} tenant keys rewrapped from "
            f"{result.old_key_id} to {result.new_key_id}; {result.message}"
        )

    @keys_app.command("master-status")
    @helpers.command
    def master_status(new_master_key_env: NewEnv = None, data_dir: DataDir = None) -> None:
        """Say which master key (by id) opens the keystore: the configured one, or a new one."""
        from memvault.compliance import rotation

        typer.echo(rotation.master_status(helpers.settings_for(data_dir), new_master_key_env))

    @keys_app.command("rotate")
    @helpers.command
    def rotate(
        tenant: Annotated[str, typer.Option(help="Tenant id")],
        user: Annotated[str | None, typer.Option(help="Only this user's scopes")] = None,
        agent: Annotated[str | None, typer.Option(help="Only this agent (needs --user)")] = None,
        data_dir: DataDir = None,
    ) -> None:
        """Make new data keys current, re-encrypt every note under the old ones, destroy them."""
        from memvault.compliance import rotation

        services = helpers.open_services(helpers.settings_for(data_dir), None)
        try:
            services.tenants.require(tenant)
            record = rotation.start_rotation(services, tenant, user, agent, ACTOR)
            typer.echo(f"rotation {record.id}: {len(record.scopes)} scopes have new data keys")
            _run(services, rotation, tenant, record.id)
        finally:
            services.close()

    @keys_app.command("reencrypt")
    @helpers.command
    def reencrypt(
        tenant: Annotated[str, typer.Option(help="Tenant id")],
        batch: Annotated[int, typer.Option(min=1, max=10_000, help="Notes per batch")] = 200,
        data_dir: DataDir = None,
    ) -> None:
        """Run (or resume after a crash) the tenant's unfinished re-encryption jobs."""
        from memvault.compliance import rotation

        services = helpers.open_services(helpers.settings_for(data_dir), None)
        try:
            services.tenants.require(tenant)
            pending = rotation.unfinished_rotations(services, tenant)
            if not pending:
                typer.echo("no unfinished rotation")
            for rotation_id in pending:
                _run(services, rotation, tenant, rotation_id, batch)
        finally:
            services.close()


def _run(
    services: Services, rotation: Any, tenant: str, rotation_id: str, batch: int = 200
) -> None:
    record = rotation.run_rotation(
        services,
        tenant,
        rotation_id,
        ACTOR,
        batch=batch,
        progress=lambda r: typer.echo(r.progress_line()),
    )
    typer.echo(
        f"rotation {record.id} done: {record.total} notes re-encrypted, "
        f"{record.versions_destroyed} old key versions destroyed"
    )
