"""The hot readers (SQLite: ``sqlite_reader``, PostgreSQL: ``pg_reader``) read what the
general path reads, on both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from server.store import Ending, GameStatus, GameWrite, Progress, SignIn, Store
from server.store import games as game_reads
from server.store import players as player_reads
from server.store.records import NewAction, unpack_hint
from tests.server.store.conftest import move


async def test_it_reads_what_the_general_path_reads(store: Store) -> None:
    player, token = await store.create_player("anna")
    game = await store.create_game(player.id, "classic", 1)
    await store.commit(move(game.id, 0, request_id="r1"))
    hinted = NewAction(
        "hint", None, None, 2500, hint_action="move", hint_card="4H", hint_to=7, hint_reason="safe"
    )
    await store.commit(replace(move(game.id, 1), action=hinted))
    await store.commit(move(game.id, 2))

    async with store._reading() as conn:
        general_player = await player_reads.fetch_player_by_token(conn, token)
        general_games = await game_reads.fetch_games(conn, player.id, game.status, None)
        general_game = await game_reads.fetch_game(conn, game.id)
        general_log = await game_reads.fetch_log(conn, game.id, 1)
        stored = await game_reads.fetch_actions(conn, game.id, 0)
        general_owner = await game_reads.fetch_owner(conn, game.id)

    assert general_player == player  # its token was issued with it
    assert await store.sign_in(token) == SignIn(player, general_games, player.created_at)
    assert await store.load_game(game.id, 1) == (general_game, general_log)
    assert await store.game_owner(game.id) == general_owner == player.id
    record, log = await store.load_game(game.id)
    assert record is not None and record.version == 3 and len(log) == 3
    # Each logged action is its stored record less the log position and request id.
    assert log == [each.logged() for each in stored]
    assert log[1].hint == "move 4H 7 safe" and log[0].hint is None
    assert stored[0].request_id == "r1"
    assert record.created_at.tzinfo is not None


async def test_a_hint_read_packed_is_the_hint_stored(store: Store) -> None:
    """The log's four hint columns come back as one (``games.HINT_COLUMN``, in SQL),
    the same text ``pack_hint`` makes of the record, and they unpack to what was stored."""
    player, _token = await store.create_player("anna")
    game = await store.create_game(player.id, "classic", 1)
    hints = [
        ("move", "10H", 7, None),
        ("deal", None, None, None),
        ("none", None, None, "stuck"),
        ("none", None, None, "seen"),
        ("move", "AS", 1, "lost"),
    ]
    for seq, (action, card, to, reason) in enumerate(hints):
        hinted = NewAction(
            "hint", t=seq, hint_action=action, hint_card=card, hint_to=to, hint_reason=reason
        )
        await store.commit(replace(move(game.id, seq), action=hinted))
    _record, log = await store.load_game(game.id)
    async with store._reading() as conn:
        stored = await game_reads.fetch_actions(conn, game.id, 0)
    assert log == [each.logged() for each in stored]
    assert [unpack_hint(each.hint) for each in log if each.hint is not None] == hints


def test_a_hint_field_with_the_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="holds"):
        NewAction("hint", hint_action="none", hint_reason="no move")


async def test_it_answers_none_for_what_is_not_there(store: Store) -> None:
    assert await store.sign_in("no such token") is None
    assert await store.game_owner(12345) is None
    assert await store.load_game(12345) == (None, [])


async def test_an_expired_token_signs_nobody_in(store: Store) -> None:
    _player, token = await store.create_player("anna")
    assert await store.sign_in(token, max_age=timedelta(days=1)) is not None
    assert await store.sign_in(token, max_age=timedelta(seconds=-1)) is None


async def test_signing_in_lists_the_unfinished_game_and_only_it(store: Store) -> None:
    """On PostgreSQL one statement reads the player and the unfinished game (a row per
    game, which the schema makes one at most), and one a game and its log: none, then
    one game beside a finished one, and an empty log, as the general path reads them."""
    player, token = await store.create_player("anna")
    assert await store.sign_in(token) == SignIn(player, [], player.created_at)
    first = await store.create_game(player.id, "classic", 1)
    await store.commit(GameWrite(first.id, 0, Progress(), ending=Ending.RESIGNED))
    assert await store.sign_in(token) == SignIn(player, [], player.created_at)
    second = await store.create_game(player.id, "hard", 2)
    async with store._reading() as conn:
        general = await game_reads.fetch_games(conn, player.id, GameStatus.ACTIVE, None)
        fresh = await game_reads.fetch_game(conn, second.id)
    assert await store.sign_in(token) == SignIn(player, general, player.created_at)
    assert [game.id for game in general] == [second.id]
    assert await store.load_game(second.id) == (fresh, [])  # a game with no log yet
    await store.commit(move(second.id, 0))
    record, log = await store.load_game(second.id, 1)  # nothing after the last action
    assert record is not None and record.version == 1 and log == []
