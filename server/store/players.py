"""Players and their bearer tokens.

A name is kept as the player typed it (trimmed, NFC-normalised) and is unique
by ``name_key``: its NFKC case fold, so "Anna", "ANNA" and the full-width
"Ａｎｎａ" are one name, and "Strauß" is taken once "STRAUSS" is. The unique
index on ``players.name_key`` decides races between two nodes.

A token is ``secrets.token_urlsafe(32)`` (256 random bits), handed out once;
the database keeps only its SHA-256 (hex), which is also the lookup key. A
fast unsalted hash is right here: the secret is random and long, so there is
nothing to brute-force, and salting would make the lookup a scan. A revoked
token's row goes; its hash stays in ``issued_tokens``, which holds every token ever
issued: a client chooses its own new token, and none may choose one that was
ever given out.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from sqlalchemy import ARRAY, Select, String, any_, bindparam, delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from protocol.names import invisible
from server.store.errors import NameTaken, NotFound, TokenTaken, integrity_kind
from server.store.models import IssuedTokenRow, PlayerRow, TokenRow
from server.store.records import Player

__all__ = [
    "ISSUED_AT",
    "MAX_NAME",
    "InvalidName",
    "check_name",
    "delete_token",
    "delete_tokens",
    "fetch_known_hashes",
    "fetch_player",
    "fetch_player_by_token",
    "fetch_token",
    "hash_token",
    "insert_player",
    "insert_token",
    "name_key",
    "player_record",
    "token_query",
]

MAX_NAME: Final = 32
_MAX_KEY: Final = 128  # players.name_key: room for what case folding expands
_PLAYER_COLUMNS: Final = (PlayerRow.id, PlayerRow.name, PlayerRow.created_at)
ISSUED_AT: Final = len(_PLAYER_COLUMNS)
"""Where a ``token_query`` row says when the token was issued: after the player's columns."""


class InvalidName(ValueError):
    """A player name that is empty, too long, not printable or invisible; the message
    names it."""


def check_name(name: str) -> str:
    """``name`` as stored (trimmed, NFC); InvalidName unless 1..32 printable characters,
    none of them one that shows as nothing (``protocol.names``: a second "admin" with an
    invisible character inside, or a blank name)."""
    cleaned = unicodedata.normalize("NFC", name.strip())
    if not 0 < len(cleaned) <= MAX_NAME:
        raise InvalidName(f"a name has 1 to {MAX_NAME} characters, not {len(cleaned)}: {name!r}")
    if not cleaned.isprintable() or invisible(cleaned) or len(name_key(cleaned)) > _MAX_KEY:
        raise InvalidName(f"the name {name!r} has characters a name cannot have")
    return cleaned


def name_key(name: str) -> str:
    """The form two names are compared in: NFKC case fold (Unicode's NFKC_Casefold)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def player_record(row: Row[int, str, datetime] | Sequence[Any]) -> Player:
    return Player(id=row[0], name=row[1], created_at=row[2])


MAX_PLAYER_ID: Final = 2**31 - 1  # players.id is a 32-bit integer


def new_player_id() -> int:
    """A random player id: ids say nothing of how many players there are."""
    return secrets.randbelow(MAX_PLAYER_ID) + 1


async def insert_player(conn: AsyncConnection, name: str, now: datetime) -> Player:
    """Add a player named ``name`` (already checked); NameTaken on a duplicate key.

    The id is drawn at random; if another player has it (the primary key refuses
    the row, within a savepoint), another is drawn.
    """
    key = name_key(name)
    while True:
        statement = (
            insert(PlayerRow)
            .values(id=new_player_id(), name=name, name_key=key, created_at=now)
            .returning(*_PLAYER_COLUMNS)
        )
        try:
            async with conn.begin_nested():
                row = (await conn.execute(statement)).one()
        except IntegrityError as exc:
            if integrity_kind(exc) != "unique":
                raise
            taken = select(PlayerRow.id).where(PlayerRow.name_key == key)
            if (await conn.execute(taken)).first() is not None:
                raise NameTaken(name) from exc
            continue  # the id was someone's: draw again
        return player_record(row)


async def insert_token(
    conn: AsyncConnection, player_id: int, now: datetime, token: str | None = None
) -> str:
    """A new token for ``player_id`` (NotFound if there is no such player): ``token``
    when given (a client's own, ``rotate_token``; TokenTaken if it was ever issued, to
    anyone: working or revoked), else one made here."""
    token = secrets.token_urlsafe(32) if token is None else token
    hashed = hash_token(token)
    statement = insert(TokenRow).values(token_hash=hashed, player_id=player_id, created_at=now)
    try:
        await conn.execute(statement)
        await conn.execute(insert(IssuedTokenRow).values(token_hash=hashed))
    except IntegrityError as exc:
        if integrity_kind(exc) == "foreign_key":
            raise NotFound("player", player_id) from exc
        if integrity_kind(exc) == "unique":
            raise TokenTaken() from exc
        raise
    return token


async def lock_tokens(conn: AsyncConnection, player_id: int) -> None:
    """Changes to ``player_id``'s tokens take turns until the transaction ends: the
    player's row is held (PostgreSQL's ``FOR NO KEY UPDATE``, which leaves the rows
    that refer to it free; SQLite's write lock holds the whole file already). Under
    READ COMMITTED, revoking every token of a player did not see the token a rotation
    was adding, which then outlived it."""
    statement = select(PlayerRow.id).where(PlayerRow.id == player_id)
    await conn.execute(statement.with_for_update(key_share=True))


async def delete_token(conn: AsyncConnection, token: str) -> int | None:
    """Revoke ``token``: its row goes, its hash stays issued (``remember_issued``); the id
    of its player, None if it was not known."""
    hashed = hash_token(token)
    statement = delete(TokenRow).where(TokenRow.token_hash == hashed).returning(TokenRow.player_id)
    player_id = (await conn.execute(statement)).scalar_one_or_none()
    if player_id is not None:
        await remember_issued(conn, [hashed])
    return player_id


async def delete_tokens(conn: AsyncConnection, player_id: int) -> int:
    """Revoke every token of ``player_id`` (their hashes stay issued); how many there were."""
    statement = delete(TokenRow).where(TokenRow.player_id == player_id)
    hashes = list((await conn.execute(statement.returning(TokenRow.token_hash))).scalars())
    await remember_issued(conn, hashes)
    return len(hashes)


async def remember_issued(conn: AsyncConnection, token_hashes: Sequence[str]) -> None:
    """Keep ``token_hashes`` in ``issued_tokens`` (those there already stay as they are).

    Every token this version issues is there from the start; a token revoked here is
    put there too, for those a node of the version before 0009 issued during an
    upgrade (it does not know the table), which were otherwise free to take once
    revoked."""
    if not token_hashes:
        return
    dialect = conn.dialect.name
    insert_into = postgresql.insert if dialect == "postgresql" else sqlite.insert
    rows = [{"token_hash": each} for each in token_hashes]
    statement = insert_into(IssuedTokenRow).values(rows).on_conflict_do_nothing()
    await conn.execute(statement)


async def fetch_known_hashes(conn: AsyncConnection, token_hashes: Sequence[str]) -> set[str]:
    """Which of ``token_hashes`` are of tokens the store still has (not revoked)."""
    statement = select(TokenRow.token_hash).where(TokenRow.token_hash.in_(token_hashes))
    return set((await conn.execute(statement)).scalars())


def token_query(expiring: bool, *, many: bool = False) -> Select[int, str, datetime, datetime]:
    """The player of a token's hash (``token_hash``), then when the token was issued
    (``ISSUED_AT``); issued after ``issued_after`` if ``expiring``. ``many``: of each of
    several (``token_hashes``, an array), for ``compiled.signing_in_query``. Also
    compiled by ``sqlite_reader`` for its own connection."""
    hashes = any_(bindparam("token_hashes", type_=ARRAY(String()))) if many else None
    statement = (
        select(*_PLAYER_COLUMNS, TokenRow.created_at)
        .join(TokenRow, TokenRow.player_id == PlayerRow.id)
        .where(TokenRow.token_hash == (bindparam("token_hash") if hashes is None else hashes))
    )
    if expiring:
        statement = statement.where(TokenRow.created_at > bindparam("issued_after"))
    return statement


async def fetch_player_by_token(
    conn: AsyncConnection, token: str, issued_after: datetime | None = None
) -> Player | None:
    """The player of ``token``; None if unknown, or issued before ``issued_after`` (expired)."""
    found = await fetch_token(conn, token, issued_after)
    return None if found is None else found[0]


async def fetch_token(
    conn: AsyncConnection, token: str, issued_after: datetime | None = None
) -> tuple[Player, datetime] | None:
    """The player of ``token`` and when it was issued; None as ``fetch_player_by_token``."""
    parameters = {"token_hash": hash_token(token), "issued_after": issued_after}
    if issued_after is None:
        del parameters["issued_after"]
    row = (await conn.execute(token_query(issued_after is not None), parameters)).one_or_none()
    return None if row is None else (player_record(row), row[3])  # row[ISSUED_AT]


async def fetch_player(conn: AsyncConnection, player_id: int) -> Player | None:
    statement = select(*_PLAYER_COLUMNS).where(PlayerRow.id == player_id)
    row = (await conn.execute(statement)).one_or_none()
    return None if row is None else player_record(row)
