"""API keys: `rbk_<id>_<secret>`; only a salted SHA-256 of the secret is stored.

The secret is 32 random bytes, so a fast salted hash is enough (slow hashes such as scrypt
protect low-entropy passwords, and would cost every request tens of milliseconds).

Every key has a role (ROLES, each including the ones before it): `submit` calls the pipelines
and reads its own jobs and results; `review` also reads everything and edits, approves, rejects
and exports; `admin` also manages keys. A key created without a role is a `review` key, which
is what every key was before roles existed (and what migrated keys become).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import bindparam, or_, select, update

from rebuttal.server.db import ROLES, ApiKey, Database, utcnow

PREFIX = "rbk"
DEFAULT_ROLE = "review"
LAST_USED_STEP = timedelta(minutes=1)  # write last_used_at at most this often per key


class UnknownKey(LookupError):
    """No such key (for `keys revoke`)."""


@dataclass(frozen=True)
class Caller:
    key_id: str
    name: str
    role: str = DEFAULT_ROLE

    def can(self, role: str) -> bool:
        """True when this key's role is `role` or includes it (submit < review < admin)."""
        return ROLES.index(self.role) >= ROLES.index(role)


def check_role(role: str) -> str:
    role = (role or "").strip().lower()
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    return role


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(f"{salt}:{secret}".encode()).hexdigest()


def create_key(db: Database, name: str, role: str = DEFAULT_ROLE) -> str:
    """Store a new key for `name` with `role` and return the full key (shown once, never stored)."""
    role = check_role(role)
    name = name.strip()
    if not name or len(name) > 120:
        raise ValueError("key name must be 1-120 characters (it is the reviewer's identity)")
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    with db.session() as session:
        session.add(ApiKey(id=key_id, name=name, salt=salt, key_hash=_digest(salt, secret), role=role))
    return f"{PREFIX}_{key_id}_{secret}"


def verify_key(db: Database, presented: str | None) -> Caller | None:
    """The caller behind a presented key, or None if it is malformed, unknown or revoked."""
    with db.session() as session:
        return check_key(session.connection(), presented)


# Built once (Core, not the ORM): the key check runs on every request.
_KEY_ID = bindparam("key_id", type_=ApiKey.id.type)
_KEY_ROW = select(ApiKey.id, ApiKey.name, ApiKey.salt, ApiKey.key_hash, ApiKey.role, ApiKey.revoked_at,
                  ApiKey.last_used_at).where(ApiKey.id == _KEY_ID)
_TOUCH = update(ApiKey).where(ApiKey.id == _KEY_ID).values(
    last_used_at=bindparam("now", type_=ApiKey.last_used_at.type))


def check_key(connection, presented: str | None) -> Caller | None:
    """`verify_key` inside the caller's transaction: the row is read on every call (no cache),
    so a key revoked or changed by any process (the CLI, another worker) is refused at once."""
    if not presented:
        return None
    parts = presented.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    _, key_id, secret = parts
    row = connection.execute(_KEY_ROW, {"key_id": key_id}).first()
    if row is None or row.revoked_at is not None:
        return None
    if not hmac.compare_digest(row.key_hash, _digest(row.salt, secret)):
        return None
    now = utcnow()
    last = row.last_used_at
    if last is not None and last.tzinfo is None:  # SQLite hands back naive UTC
        last = last.replace(tzinfo=now.tzinfo)
    if last is None or now - last > LAST_USED_STEP:  # one write a minute, not one per request
        connection.execute(_TOUCH, {"key_id": key_id, "now": now})
    return Caller(key_id=row.id, name=row.name, role=row.role or DEFAULT_ROLE)


def list_keys(db: Database) -> list[dict]:
    with db.session() as session:
        rows = session.scalars(select(ApiKey).order_by(ApiKey.created_at)).all()
        return [
            {"id": r.id, "name": r.name, "role": r.role, "created_at": r.created_at, "revoked_at": r.revoked_at,
             "last_used_at": r.last_used_at}
            for r in rows
        ]


def _active(session, id_or_name: str) -> list[ApiKey]:
    rows = session.scalars(
        select(ApiKey).where(or_(ApiKey.id == id_or_name, ApiKey.name == id_or_name), ApiKey.revoked_at.is_(None))
    ).all()
    if not rows:
        raise UnknownKey(f"no active key with id or name {id_or_name!r} (see `rebuttal keys list`)")
    return list(rows)


def revoke_key(db: Database, id_or_name: str) -> list[str]:
    """Revoke the key with this id, or every active key with this name; returns the ids."""
    with db.session() as session:
        rows = _active(session, id_or_name)
        for row in rows:
            row.revoked_at = utcnow()
        return [r.id for r in rows]


def set_role(db: Database, id_or_name: str, role: str) -> list[str]:
    """Give the key with this id, or every active key with this name, a new role; returns the ids."""
    role = check_role(role)
    with db.session() as session:
        rows = _active(session, id_or_name)
        for row in rows:
            row.role = role
        return [r.id for r in rows]
