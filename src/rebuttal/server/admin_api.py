"""Key management under /v1/keys for `admin` keys (the CLI's `rebuttal keys` does the same
with direct database access). Secrets are returned once, on creation, and never stored."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from rebuttal.server.access import Admin, state_of
from rebuttal.server.auth import UnknownKey, create_key, list_keys, revoke_key, set_role
from rebuttal.server.state import ApiError, FieldText

router = APIRouter(prefix="/v1")
Role = Literal["submit", "review", "admin"]


class NewKey(BaseModel):
    name: FieldText = Field(min_length=1, max_length=120, description="who uses the key (the reviewer's identity)")
    role: Role = "review"


class RoleChange(BaseModel):
    role: Role


def _view(row: dict) -> dict:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


@router.get("/keys", summary="list keys: id, name, role, dates (never secrets); admin only")
def keys(request: Request, who: Admin):
    return {"keys": [_view(row) for row in list_keys(state_of(request).db)]}


@router.post("/keys", summary="create a key; the full key is in this response only; admin only")
def new_key(request: Request, body: NewKey, who: Admin):
    try:
        key = create_key(state_of(request).db, body.name, body.role)
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    return JSONResponse(status_code=201, content={"key": key, "id": key.split("_", 2)[1], "name": body.name.strip(),
                                                  "role": body.role})


@router.post("/keys/{id_or_name}/role", summary="change the role of a key (id) or of every active key of a name")
def change_role(request: Request, id_or_name: FieldText, body: RoleChange, who: Admin):
    try:
        return {"ids": set_role(state_of(request).db, id_or_name, body.role), "role": body.role}
    except UnknownKey as exc:
        raise ApiError(404, str(exc)) from None


@router.post("/keys/{id_or_name}/revoke", summary="revoke a key (id) or every active key of a name")
def revoke(request: Request, id_or_name: FieldText, who: Admin):
    try:
        return {"revoked": revoke_key(state_of(request).db, id_or_name)}
    except UnknownKey as exc:
        raise ApiError(404, str(exc)) from None
