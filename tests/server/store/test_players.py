"""Players: unique names ignoring case, tokens stored only as hashes."""

from __future__ import annotations

import hashlib
from datetime import UTC
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import (
    InvalidName,
    NameTaken,
    NotFound,
    Store,
    TokenTaken,
    hash_token,
    name_key,
)
from server.store.models import metadata


async def test_create_player_returns_player_and_token(store: Store) -> None:
    player, token = await store.create_player("  Anna ")
    assert player.name == "Anna"
    assert player.created_at.tzinfo is UTC
    assert len(token) >= 43  # token_urlsafe(32): 256 bits
    assert await store.player_for_token(token) == player
    assert await store.get_player(player.id) == player


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Anna", "anna"),
        ("anna", "ANNA"),
        ("Strauß", "STRAUSS"),  # case folding, not just lower()
        ("Ａｎｎａ", "anna"),  # full-width letters (NFKC)
        ("Émile", "E\u0301mile"),  # composed and decomposed accents
    ],
)
async def test_names_are_unique_ignoring_case(store: Store, first: str, second: str) -> None:
    await store.create_player(first)
    with pytest.raises(NameTaken) as caught:
        await store.create_player(second)
    assert name_key(caught.value.name) == name_key(first)
    assert str(caught.value) == f"the name {caught.value.name!r} is taken"


async def test_name_taken_leaves_no_token_behind(store: Store, engine: AsyncEngine) -> None:
    await store.create_player("anna")
    with pytest.raises(NameTaken):
        await store.create_player("ANNA")
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM tokens"))).scalar_one() == 1
        assert (await conn.execute(text("SELECT count(*) FROM players"))).scalar_one() == 1


@pytest.mark.parametrize("name", ["", "   ", "x" * 33, "tab\there", "nul\x00"])
async def test_invalid_names_are_refused_before_sql(store: Store, name: str) -> None:
    with pytest.raises(InvalidName):
        await store.create_player(name)


@pytest.mark.parametrize(
    "name",
    [
        "ad\u034fmin",  # a combining grapheme joiner: shows as "admin"
        "ad\ufe0fmin",  # a variation selector
        "admin\U000e0041",  # a tag character
        "\u3164" * 3,  # Hangul fillers: a blank name
        "\u2800\u2800\u115f",  # blank braille patterns, a choseong filler
        "a\uffa0b",
    ],
)
async def test_names_with_characters_that_show_as_nothing_are_refused(
    store: Store, name: str
) -> None:
    """Printable to Python, so they passed: a second "admin" that looks like the first,
    or a blank name."""
    await store.create_player("admin")
    with pytest.raises(InvalidName, match="characters a name cannot have"):
        await store.create_player(name)


def test_name_key_folds_case_and_compatibility_forms() -> None:
    assert name_key("Strauß") == name_key("STRAUSS") == "strauss"
    assert name_key("Ａｎｎａ") == "anna"
    assert name_key("ﬁ") == "fi"


async def test_unknown_token_finds_nobody(store: Store) -> None:
    await store.create_player("anna")
    assert await store.player_for_token("not-a-token") is None
    assert await store.player_for_token("") is None


async def test_tokens_are_stored_only_as_sha256(
    store: Store, engine: AsyncEngine, database_url: str
) -> None:
    player, token = await store.create_player("anna")
    second = await store.issue_token(player.id)
    async with engine.connect() as conn:
        stored = set((await conn.execute(text("SELECT token_hash FROM tokens"))).scalars())
        every_value = [
            value
            for table in metadata.sorted_tables
            for row in await conn.execute(select(table))
            for value in row
        ]
    assert stored == {hashlib.sha256(t.encode()).hexdigest() for t in (token, second)}
    assert not [value for value in every_value if token in str(value) or second in str(value)]
    if database_url.startswith("sqlite"):  # not even in the file's free pages or the WAL
        path = Path(database_url.split("///", 1)[1])
        raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
        assert token.encode() not in raw and second.encode() not in raw


async def test_each_token_finds_its_player_until_revoked(store: Store) -> None:
    anna, anna_token = await store.create_player("anna")
    bob, bob_token = await store.create_player("bob")
    extra = await store.issue_token(anna.id)
    assert await store.player_for_token(extra) == anna
    assert await store.player_for_token(bob_token) == bob
    assert await store.revoke_token(extra)
    assert not await store.revoke_token(extra)
    assert await store.player_for_token(extra) is None
    assert await store.player_for_token(anna_token) == anna


async def test_a_revoked_token_is_never_issued_again(store: Store) -> None:
    anna, anna_token = await store.create_player("anna")
    bob, bob_token = await store.create_player("bob")
    rotated = await store.rotate_token(anna_token)
    assert rotated is not None
    with pytest.raises(TokenTaken):  # another player's choice of the old one
        await store.rotate_token(bob_token, anna_token)
    assert await store.player_for_token(bob_token) == bob  # nothing changed
    assert await store.revoke_tokens(anna.id) == 1
    with pytest.raises(TokenTaken):
        await store.rotate_token(bob_token, rotated)
    assert await store.player_for_token(anna_token) is None
    assert await store.player_for_token(rotated) is None
    assert await store.known_tokens([hash_token(anna_token), hash_token(bob_token)]) == {
        hash_token(bob_token)
    }
    assert await store.revoke_tokens(anna.id) == 0  # none working is left


async def test_token_for_unknown_player(store: Store) -> None:
    with pytest.raises(NotFound, match="no player 42"):
        await store.issue_token(42)
    assert await store.get_player(42) is None
