"""Key rotation endpoints: data keys (tenant admin) and the master key (operator)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import StringConstraints

from memvault.api.deps import AdminDep, OperatorDep, ServicesDep, only_query_params, tenant_of
from memvault.api.schemas import Id, Strict
from memvault.compliance import rotation
from memvault.errors import InvalidRequest

router = APIRouter(tags=["keys"])

EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")]


class RotateDataKeys(Strict):
    """Which scopes get new data keys: one agent of a user, a user, or (both absent) the tenant."""

    user_id: Id | None = None
    agent_id: Id | None = None


class RotateMaster(Strict):
    """With an environment-variable master key: the variable holding the new one."""

    new_master_key_env: EnvName | None = None


@router.post("/v1/admin/keys/rotate", status_code=202, dependencies=[Depends(only_query_params())])
def rotate_data_keys(body: RotateDataKeys, admin: AdminDep, services: ServicesDep) -> Any:
    """Make new data keys current and start re-encrypting every note of those scopes.

    Old versions keep decrypting until the job has moved every note forward; then they are
    destroyed. Poll `GET /v1/admin/keys/rotations/{id}` for progress.
    """
    tenant = tenant_of(admin)
    if body.agent_id is not None and body.user_id is None:
        raise InvalidRequest("agent_id needs user_id")
    record = rotation.start_rotation(services, tenant, body.user_id, body.agent_id, admin.key_id)
    rotation.run_in_background(services, tenant, record.id, admin.key_id)
    return record.as_dict()


@router.get("/v1/admin/keys/rotations/{rotation_id}", dependencies=[Depends(only_query_params())])
def rotation_progress(rotation_id: str, admin: AdminDep, services: ServicesDep) -> Any:
    """A rotation's progress: notes re-encrypted and left, versions destroyed, state."""
    return rotation.load_rotation(services, tenant_of(admin), rotation_id).as_dict()


@router.post(
    "/v1/admin/keys/rotations/{rotation_id}/resume",
    status_code=202,
    dependencies=[Depends(only_query_params())],
)
def resume_rotation(rotation_id: str, admin: AdminDep, services: ServicesDep) -> Any:
    """Resume a job a restart interrupted (notes already re-encrypted are skipped)."""
    tenant = tenant_of(admin)
    record = rotation.load_rotation(services, tenant, rotation_id)
    if record.state != rotation.DONE:
        rotation.run_in_background(services, tenant, record.id, admin.key_id)
    return record.as_dict()


@router.post("/v1/operator/rotate-master", dependencies=[Depends(only_query_params())])
def rotate_master(body: RotateMaster, _op: OperatorDep, services: ServicesDep) -> Any:
    """Rewrap every tenant key under a new master key; note ciphertext is not touched.

    With a master key file, a new file is generated and installed once the rewrap committed.
    With an environment-variable master key, `new_master_key_env` names the new key's variable.
    """
    if body.new_master_key_env is not None:
        result = rotation.rotate_master_env(services, body.new_master_key_env, "operator")
    else:
        result = rotation.rotate_master_file(services, "operator")
    return {
        "old_key_id": result.old_key_id,
        "new_key_id": result.new_key_id,
        "tenant_keys": result.tenant_keys,
        "message": result.message,
    }
