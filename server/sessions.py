"""Who is signed in on which connection of this node, and with which token.

Theory of operation
-------------------
A connection (``Session``) acts as at most one player, signed in by ``hello``
with a token or by ``register``; ``SignedIn`` remembers, per player, the
sessions acting as them on this node and, per session, the token it used.
The token is kept only in memory, only for as long as the connection lives,
so ``rotate_token`` and ``sign_out`` know which token to replace or forget;
it is never logged (the store keeps only its SHA-256).

Revoking is the store's: a revoked or expired token signs no one in on any
node from then on. A revocation also signs out, at once, the connections that
acted on it: ``sign_out`` with ``everywhere`` every connection of the player,
``sign_out`` and ``rotate_token`` those signed in with that token (but the
rotating one, which holds the new token). On this node the service does so
with its answer; other nodes hear of it from the store (``server.store.notify``,
``SIGN_OUTS``) and do the same, with ``of_token`` finding the connections of a
token's hash; one that may have missed such news checks every token here
(``sessions``) against the store. An expiry (``--token-ttl-days``) ends the
sessions on a token too, each at its token's expiry, on the node it is on:
the service learns when the token was issued at sign-in and signs the
session out then, as a revocation does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from server.store import hash_token

__all__ = ["SignedIn"]

S = TypeVar("S")


class SignedIn(Generic[S]):
    """The sessions of each player on this node, and each session's token."""

    def __init__(self) -> None:
        self._by_player: dict[int, dict[int, S]] = {}
        self._tokens: dict[int, str] = {}

    def enter(self, session: S, player_id: int, token: str | None) -> None:
        self._by_player.setdefault(player_id, {})[id(session)] = session
        if token is not None:
            self._tokens[id(session)] = token

    def leave(self, session: S, player_id: int | None) -> None:
        self._tokens.pop(id(session), None)
        if player_id is None:
            return
        sessions = self._by_player.get(player_id)
        if sessions is not None:
            sessions.pop(id(session), None)
            if not sessions:
                del self._by_player[player_id]

    def token(self, session: S) -> str | None:
        return self._tokens.get(id(session))

    def replace_token(self, session: S, token: str) -> None:
        self._tokens[id(session)] = token

    def of_player(self, player_id: int) -> Iterator[S]:
        yield from list(self._by_player.get(player_id, {}).values())

    def of_token(self, player_id: int, token_hash: str) -> list[S]:
        """The sessions of ``player_id`` signed in with the token of hash ``token_hash``."""
        return [
            session
            for session in self._by_player.get(player_id, {}).values()
            if (token := self._tokens.get(id(session))) is not None
            and hash_token(token) == token_hash
        ]

    def sessions(self) -> list[tuple[S, int, str]]:
        """Every session signed in with a token: (session, its player's id, the token)."""
        return [
            (session, player_id, token)
            for player_id, sessions in self._by_player.items()
            for key, session in sessions.items()
            if (token := self._tokens.get(key)) is not None
        ]
