"""The programs behind ``scorpion``: play, register, stats, games (replay: ``replay.py``).

``run(options, terminal)`` connects, makes sure there is a player (asking
for a name and registering the first time), and runs the command. The play
loop reads one command per line (from the keyboard, or from a script when
standard input is not a terminal), sends it, waits for its reply and for
the events of the version it produced, and prints what happened.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from clients.cli import VERSION, config
from clients.cli.commands import HELP, Command, CommandError, parse
from clients.cli.connection import Connection, ConnectionFailed, Message, ServerError
from clients.cli.game import GameSession
from clients.cli.options import Options
from clients.cli.render import Style, render_games, render_stats
from clients.cli.terminal import Terminal

__all__ = ["DEFAULT_LEVEL", "App", "run"]

DEFAULT_LEVEL = "medium"
CLIENT = f"scorpion-cli/{VERSION}"


async def run(
    options: Options,
    terminal: Terminal,
    *,
    connection_class: type[Connection] = Connection,
    config_dir: Path | None = None,
) -> int:
    """Run one ``scorpion`` command; the exit status (0 ok, 1 failure)."""
    app = App(options, terminal, connection_class, config_dir)
    try:
        return await app.main()
    except ConnectionFailed as exc:
        terminal.say(f"cannot talk to the server: {exc}")
        return 1
    except OSError as exc:
        terminal.say(f"cannot connect to {options.server}: {exc}")
        return 1
    except TimeoutError:
        terminal.say(f"the server at {options.server} does not answer")
        return 1
    finally:
        await app.close()


def _style(options: Options, terminal: Terminal) -> Style:
    isatty = getattr(terminal.out, "isatty", None)
    tty = bool(isatty()) if callable(isatty) else False
    width = shutil.get_terminal_size((80, 24)).columns if tty else 80
    color = options.color and tty and terminal.interactive and not options.json
    return Style(color=color, width=width)


class App:
    """One invocation: options, terminal, connection and (for play) the game."""

    def __init__(
        self,
        options: Options,
        terminal: Terminal,
        connection_class: type[Connection],
        config_dir: Path | None,
    ) -> None:
        self.options = options
        self.terminal = terminal
        self.connection_class = connection_class
        self.config_dir = config_dir or config.config_dir()
        self.session = GameSession(terminal, _style(options, terminal), options.json)
        self.conn: Connection | None = None

    async def main(self) -> int:
        command = self.options.command
        if command == "register":
            return await self.register(self.options.name or "")
        conn = await self.connect()
        if conn is None:
            return 1
        if command == "stats":
            return await self.stats(self.options.level)
        if command == "games":
            return await self.games(self.options.status)
        if command == "replay":
            from clients.cli.replay import replay

            assert self.options.game is not None
            return await replay(conn, self.terminal, self.session.style, self.options)
        return await self.play()

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    # -- players -----------------------------------------------------------

    def say(self, text: str) -> None:
        self.terminal.say(text)

    def rejected(self, reply: Message) -> None:
        if self.options.json:
            self.terminal.json(reply)
        else:
            self.say(f"rejected ({reply.get('code')}): {reply.get('message', '')}")

    def _connection(self, token: str | None) -> Connection:
        return self.connection_class(
            self.options.server,
            locale=self.options.lang,
            token=token,
            client=CLIENT,
            on_push=self.session.on_push,
            on_reconnect=self.session.resync,
        )

    async def connect(self) -> Connection | None:
        """Connected and acting as the stored player (registering one if needed)."""
        stored = config.load(self.options.server, self.config_dir)
        conn = self._connection(stored.token if stored else None)
        self.conn = self.session.conn = conn
        try:
            welcome = await conn.open()
        except ServerError as exc:
            self.say(f"the server refused the stored player: {exc}")
            self.say("register again with: scorpion register NAME")
            return None
        if welcome.get("player") is None:
            name = await self.terminal.readline("player name: ")
            if not name or not await self._register(conn, name.strip()):
                return None
        return conn

    async def _register(self, conn: Connection, name: str) -> bool:
        reply = await conn.request("register", name=name)
        if reply.get("type") != "registered":
            self.rejected(reply)
            return False
        conn.token = str(reply["token"])
        path = config.save(
            self.options.server, config.Credentials(name, conn.token), self.config_dir
        )
        self.say(f"registered as {name}; the token is kept in {path}")
        return True

    async def register(self, name: str) -> int:
        conn = self._connection(None)
        self.conn = conn
        await conn.open()
        return 0 if await self._register(conn, name) else 1

    # -- lists -------------------------------------------------------------

    async def stats(self, level: str | None) -> int:
        assert self.conn is not None
        fields: dict[str, Any] = {} if level is None else {"level": level}
        reply = await self.conn.request("stats", **fields)
        if reply.get("type") != "stats":
            self.rejected(reply)
            return 1
        if self.options.json:
            self.terminal.json(reply)
        else:
            self.say(render_stats(list(reply["stats"])))
        return 0

    async def games(self, status: str | None) -> int:
        assert self.conn is not None
        fields: dict[str, Any] = {} if status is None else {"status": status}
        reply = await self.conn.request("games", **fields)
        if reply.get("type") != "games":
            self.rejected(reply)
            return 1
        if self.options.json:
            self.terminal.json(reply)
        else:
            self.say(render_games(list(reply["games"])))
        return 0

    # -- playing -----------------------------------------------------------

    async def play(self) -> int:
        assert self.conn is not None
        welcome = self.conn.welcome or {}
        unfinished = list(welcome.get("games", []))
        if unfinished and not self.options.new:
            chosen = unfinished[0]
            reply = await self.conn.request("open_game", game=int(chosen["game"]))
            if reply.get("type") != "game":
                self.rejected(reply)
                return 1
            self.session.take(reply)
            if self.options.level or self.options.deal:
                self.say("continuing your unfinished game (scorpion play --new starts another)")
        elif not await self.new_game(self.options.level, self.options.deal):
            return 1
        self.session.show()
        if self.terminal.interactive:
            self.say("? for help, q to quit")
        while True:
            line = await self.terminal.readline("> ")
            if line is None:
                break
            try:
                command = parse(line)
            except CommandError as exc:
                self.say(str(exc))
                continue
            if command is None:
                continue
            if command.kind == "quit":
                break
            await self.execute(command)
        if self.session.game is not None:
            await self.conn.request("close_game", game=self.session.game)
        return 0

    async def new_game(self, level: str | None, deal: int | None) -> bool:
        assert self.conn is not None
        fields: dict[str, Any] = {"level": level or self._level()}
        if deal is not None:
            fields["deal"] = deal
        reply = await self.conn.request("new_game", **fields)
        if reply.get("type") != "game":
            self.rejected(reply)
            return False
        if reply.get("lost") is not None:
            self.say(f"game {reply['lost']} was abandoned and counts as lost")
        self.session.take(reply)
        return True

    def _level(self) -> str:
        board = self.session.board
        return board.level if board is not None else self.options.level or DEFAULT_LEVEL

    async def execute(self, command: Command) -> None:
        kind = command.kind
        if kind == "move":
            fields: dict[str, Any] = {"card": command.card}
            if command.to is not None:
                fields["to"] = command.to
            await self.act("move", **fields)
        elif kind in ("deal", "undo", "restart"):
            await self.act(kind)
        elif kind == "hint":
            await self.hint()
        elif kind == "pause":
            await self.pause()
        elif kind == "resign":
            await self.act("resign", versioned=False)
        elif kind == "new":
            await self.start_over(command)
        elif kind == "stats":
            await self.stats(None)
        elif kind == "games":
            await self.games(None)
        elif kind == "board":
            self.session.show()
        elif kind == "help":
            self.say(HELP)

    async def act(self, type_: str, versioned: bool = True, **fields: Any) -> None:
        """Send an action with the version last seen; wait for its events."""
        session = self.session
        assert self.conn is not None and session.game is not None
        if versioned:
            fields["v"] = session.v
        reply = await self.conn.request(type_, game=session.game, **fields)
        if reply.get("type") == "ack":
            await session.until(int(reply["v"]))
            return
        self.rejected(reply)
        if reply.get("code") == "stale":
            await session.resync()
            self.say("the game changed elsewhere; here it is now:")
            session.show()

    async def hint(self) -> None:
        session = self.session
        assert self.conn is not None and session.game is not None
        reply = await self.conn.request("hint", game=session.game)
        if reply.get("type") != "hint":
            self.rejected(reply)
            return
        if self.options.json or session.v >= int(reply["v"]):
            await session.until(int(reply["v"]))
            return
        await session.until(int(reply["v"]))  # its hint event prints the advice

    async def pause(self) -> None:
        session = self.session
        assert self.conn is not None and session.game is not None
        type_ = "resume" if session.paused else "pause"
        reply = await self.conn.request(type_, game=session.game)
        if reply.get("type") != "ack":
            self.rejected(reply)
            return
        session.paused = not session.paused
        self.say("paused (p resumes)" if session.paused else "resumed")

    async def start_over(self, command: Command) -> None:
        if not self.session.finished and self.session.game is not None and not command.force:
            self.say("Your unfinished game will count as a loss. Start a new game? [y/N]")
            answer = await self.terminal.readline("? ")
            if (answer or "").strip().lower() not in ("y", "yes"):
                self.say("keeping the current game")
                return
        if await self.new_game(command.level or self._level(), None):
            self.session.show()
