"""The rules of ``server.limits``, ``server.hub``'s byte bounds and ``server.connection``'s
places for sockets in their handshakes, without a server."""

from __future__ import annotations

from typing import Any, cast

import pytest

from server.config import SettingsError, limit_settings, load_settings, origins
from server.connection import Handshaking, SocketGate
from server.hub import Budget, Outbox
from server.limits import (
    IN_FLIGHT,
    REFUSED_KEPT,
    SWEPT_PER_STRIKE,
    AddressBook,
    ConnectionBuckets,
    Limits,
    LimitSettings,
    Rate,
    TokenBucket,
    UnreadableHop,
    address_key,
    client_address,
    parse_networks,
    parse_rate,
)


def test_a_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    bucket = TokenBucket(Rate(2.0, 3), now=0.0)
    for _ in range(3):
        assert bucket.wait(0.0) == 0.0
        bucket.take(0.0)
    assert bucket.wait(0.0) == pytest.approx(0.5)
    assert bucket.wait(0.5) == 0.0
    assert bucket.full(100.0)


def test_a_refused_token_counts_once_and_the_last_ones_are_kept() -> None:
    limits = Limits(LimitSettings(rates={"auth": Rate(0.001, 1)}))
    assert limits.auth_take("a", 0.0) == 0.0  # a new token: a guess, taken before its read
    assert limits.auth_settled("a", "stale", 0.0, refused=True)
    assert limits.refused_before("stale")  # the same token again: no guess, said at once
    assert limits.auth_take("a", 0.0) > 0  # a new one is a guess, over the rate
    for n in range(REFUSED_KEPT):
        limits.auth_settled("b", f"guess{n}", 0.0, refused=True)
    assert not limits.refused_before("stale")  # forgotten: the oldest of REFUSED_KEPT + 1


def test_guesses_in_flight_together_cannot_overdraw_the_refused_tokens() -> None:
    """The bucket was checked before the token's read and charged after it: on
    PostgreSQL, whose read yields, 60 wrong hellos at once all passed, and the next
    right one from that address was told to wait 255 s."""
    limits = Limits(LimitSettings(rates={"auth": Rate(0.2, 10)}))
    waits = [limits.auth_take("a", 0.0) for _ in range(60)]  # all before any read ends
    assert waits[:10] == [0.0] * 10 and all(wait > 0 for wait in waits[10:])
    for n in range(10):
        assert limits.auth_settled("a", f"guess{n}", 0.0, refused=True)
    assert limits.auth_take("a", 0.0) == pytest.approx(5.0)  # one token's time, no more


def test_a_token_that_is_taken_or_refused_twice_at_once_gives_its_guess_back() -> None:
    limits = Limits(LimitSettings(rates={"auth": Rate(0.001, 2)}))
    assert limits.auth_take("a", 0.0) == 0.0 and limits.auth_take("a", 0.0) == 0.0
    assert limits.auth_settled("a", "same", 0.0, refused=True)
    assert not limits.auth_settled("a", "same", 0.0, refused=True)  # counted once
    assert limits.auth_take("a", 0.0) == 0.0  # ... the second's given back
    assert not limits.auth_settled("a", "right", 0.0, refused=False)  # signed in
    assert limits.auth_take("a", 0.0) == 0.0  # a right token costs nothing either


def test_a_refused_request_takes_no_token_anywhere() -> None:
    limits = Limits(LimitSettings(rates={"read": Rate(1.0, 2)}, address_factor=1))
    one, two = limits.connection_buckets(0.0), limits.connection_buckets(0.0)
    assert limits.check("read", 0.0, one, "a") == 0.0
    assert limits.check("read", 0.0, one, "a") == 0.0
    assert limits.check("read", 0.0, two, "a") > 0  # the address's bucket is empty
    assert limits.check("read", 0.0, two, "b") == 0.0  # another address is not
    assert limits.check("read", 1.0, two, "a") == 0.0


@pytest.mark.parametrize("wait", [0.001, 0.002, 0.05, 2.0])
def test_a_refusal_is_a_strike_only_when_the_request_came_before_it_was_told(
    wait: float,
) -> None:
    """Whatever the wait (a rate of 1,000/s tells 1 ms), a request sent at once again is
    early; one sent after the wait, or a little before it (a timer firing early), is not."""
    own = ConnectionBuckets({}, 0.0)
    assert not own.refused("read", 10.0, wait)  # the first refusal: nothing was told yet
    in_flight = [own.refused("read", 10.0, wait) for _ in range(IN_FLIGHT)]
    assert not any(in_flight)  # sent before the client heard the first refusal
    assert own.refused("read", 10.0, wait)  # pipelined beyond those: no wait at all
    assert own.refused("read", 10.0 + wait / 3, wait)
    near = wait - min(0.001, wait / 4)  # a timer firing a little early
    assert not own.refused("read", 10.0 + wait / 3 + near, wait)
    assert not own.refused("read", 10.0 + wait / 3 + near, wait)  # its pardons are back
    assert not own.refused("hint", 10.0, wait)  # each kind is told apart


def test_strikes_age_out_of_their_window() -> None:
    book = AddressBook(limit=2, window=10.0)
    assert not book.strike("a", 0.0) and not book.strike("a", 1.0)
    assert book.strike("a", 2.0) and book.banned("a", 5.0)
    assert not book.banned("a", 12.5)
    assert book.addresses_with_strikes() == 0  # nothing is kept for an aged-out address


def test_the_strikes_of_addresses_that_never_come_back_are_forgotten() -> None:
    """An aged-out record went only when its own address was checked again: struck once
    from each of 100,000 addresses that never came back, every record stayed (about
    0.9 KB each in the server). Each strike now looks at the oldest few."""
    book = AddressBook(limit=20, window=60.0)
    for number in range(1000):
        book.strike(f"10.0.{number // 256}.{number % 256}", 0.0)
    assert book.addresses_with_strikes() == 1000
    for number in range(600):  # an hour later, other addresses; one old one again
        book.strike(f"172.16.{number // 256}.{number % 256}", 3600.0)
    book.strike("10.0.3.231", 3600.0)
    assert book.addresses_with_strikes() == 601  # every old record looked at: gone
    for number in range(SWEPT_PER_STRIKE * 601):  # the live ones are kept while live
        book.strike("192.168.0.1", 3601.0 + number / 1e4)
    assert book.addresses_with_strikes() == 602
    assert book.banned("192.168.0.1", 3602.0) and not book.banned("10.0.0.1", 3602.0)


def test_connection_caps() -> None:
    limits = Limits(LimitSettings(rates={}, max_per_address=2, max_total=3))
    assert limits.admit("a", 0.0) is None and limits.admit("a", 0.0) is None
    assert limits.admit("a", 0.0) is not None
    assert limits.admit("b", 0.0) is None
    assert limits.admit("c", 0.0) == "server full"
    limits.release("a")
    assert limits.admit("c", 0.0) is None


def test_the_client_address_comes_from_a_trusted_proxy_only() -> None:
    trusted = parse_networks("10.0.0.0/8, 127.0.0.1")
    assert client_address("127.0.0.1", "198.51.100.1", trusted) == "198.51.100.1"
    assert client_address("127.0.0.1", "6.6.6.6, 198.51.100.1, 10.1.2.3", trusted) == (
        "198.51.100.1"  # the right-most hop that is not a proxy of ours
    )
    assert client_address("203.0.113.5", "198.51.100.1", trusted) == "203.0.113.5"
    assert client_address("127.0.0.1", "198.51.100.1", []) == "127.0.0.1"
    assert client_address("127.0.0.1", "junk, 198.51.100.1", trusted) == "198.51.100.1"


@pytest.mark.parametrize(
    ("chain", "client"),
    [
        ("198.51.100.7:5555", "198.51.100.7"),  # a load balancer that writes the port
        ("[2a01:4f8:c0c:1234::17]:4711", "2a01:4f8:c0c:1234::/64"),
        ("2a01:4f8:c0c:1234::18", "2a01:4f8:c0c:1234::/64"),  # a subscriber's /64: one client
        ("fd00::17", "fd00::17"),  # a private address is itself
        ("::ffff:198.51.100.7", "198.51.100.7"),  # IPv4, written as IPv6
        ("for=198.51.100.7;proto=https;by=10.0.0.1", "198.51.100.7"),  # RFC 7239
        ('For="[2a01:4f8::17]:4711"', "2a01:4f8::/64"),
        ("for=198.51.100.9, for=198.51.100.7", "198.51.100.7"),
        ('for="192.0.2.43:_abc";proto=https', "192.0.2.43"),  # an obfuscated port
        # a quoted value's comma or semicolon is no separator: a client that has the
        # proxy quote its Host header cannot name an address of its choice
        ('for=203.0.113.5;host="evil.example,for=198.51.100.77"', "203.0.113.5"),
        ('for=203.0.113.5;host="a;for=198.51.100.77"', "203.0.113.5"),
        ('for=203.0.113.5;host="a\\"b,for=198.51.100.77"', "203.0.113.5"),
    ],
)
def test_forwarded_chains_as_proxies_write_them(chain: str, client: str) -> None:
    assert client_address("127.0.0.1", chain, parse_networks("127.0.0.1")) == client


@pytest.mark.parametrize(
    ("address", "key"),
    [
        # NAT64 (RFC 6052): each IPv4 client of a translator is itself, not the translator's
        # /64, which every IPv4 client shared (one address's caps and bans)
        ("64:ff9b::192.0.2.1", "192.0.2.1"),
        ("64:ff9b::198.51.100.7", "198.51.100.7"),
        # a local-use prefix (RFC 8215) of any length: whole, one IPv4 client each
        ("64:ff9b:1:2::c000:201", "64:ff9b:1:2::c000:201"),
        ("64:ff9b:1:2::c633:6407", "64:ff9b:1:2::c633:6407"),
        # Teredo (RFC 4380): the client's public IPv4 address (de-obfuscated), whatever
        # its port, which changed its key at each port it took
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),
        ("2001:0:4136:e378:8000:1234:3fff:fdd2", "192.0.2.45"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd3", "192.0.2.44"),
        # 6to4 (RFC 3056): the site's IPv4 address, not each of its 2^16 /64s
        ("2002:c000:201:1::1", "192.0.2.1"),
        ("2002:c000:201:2::1", "192.0.2.1"),
    ],
)
def test_ipv6_addresses_that_carry_an_ipv4_client_are_counted_as_it(address: str, key: str) -> None:
    assert address_key(address) == key


@pytest.mark.parametrize(
    "chain",
    [
        "not an address",
        "unknown",
        "for=_hidden",
        "for=unknown",
        "1.2.3.4:x",
        "[::1",
        'for="1.2.3.4',
    ],
)
def test_a_chain_that_names_no_client_is_said_not_guessed(chain: str) -> None:
    """Counting such clients as the proxy, silently, let one of them get every client
    behind it barred: the caller logs it."""
    with pytest.raises(UnreadableHop) as unread:
        client_address("127.0.0.1", chain, parse_networks("127.0.0.1"))
    assert unread.value.args == ("127.0.0.1",)


@pytest.mark.parametrize(
    "text",
    [
        *("", "1", "a,b", "0,5", "1,0", "inf,3", "1,2,3", "1e-300,1", "1e-13,1", "0.00001,1"),
        *(" 1,5", "1 ,5", "1, 5", "1,5 ", "1,\t5"),  # spaces, as integer settings refuse them
    ],
)
def test_bad_rates_are_refused(text: str) -> None:
    """A rate so low that a wait for it overflowed (1e-300: the connection closed with
    1011 and a stack in the log) or passed the wire's largest integer (1e-13) is one
    below one a day, the lowest taken."""
    with pytest.raises(ValueError):
        parse_rate(text)


def test_the_lowest_rate_is_one_a_day() -> None:
    rate = parse_rate(f"{1 / 86400:.25f},1")  # written in decimals
    assert rate is not None and rate.per_s == 1 / 86400
    with pytest.raises(ValueError, match=r"at least one a day \(0\.0000116 per second\)"):
        parse_rate("0.00001,1")
    assert parse_rate("0.0000116,1") is not None  # what the refusal says is taken


def test_new_players_from_many_addresses_share_one_bucket_for_the_server() -> None:
    """Clients over many addresses, each registering within its own rate, slowed every
    player's moves past 100 ms: the whole server registers at most as fast as
    ``address_factor`` addresses do."""
    limits = Limits(LimitSettings(rates={"register": Rate(0.2, 2)}, address_factor=3))
    taken = [
        limits.check("register", 0.0, limits.connection_buckets(0.0), f"10.0.0.{n}")
        for n in range(10)
    ]
    assert [wait == 0.0 for wait in taken] == [True] * 6 + [False] * 4  # 3 addresses' 2
    own = limits.connection_buckets(0.0)
    assert limits.check("register", 0.0, own, "10.0.0.99", player=7) == 0.0  # a rotation
    assert limits.check("register", 2.0, limits.connection_buckets(2.0), "10.0.1.1") == 0.0
    off = Limits(LimitSettings(rates={"register": None}))
    assert off.check("register", 0.0, off.connection_buckets(0.0), "a") == 0.0


def test_rate_settings_are_checked_and_off_turns_a_kind_off() -> None:
    with pytest.raises(SettingsError) as bad:
        load_settings(["--rate-hints", "fast", "--trusted-proxies", "10.0.0.0/33"])
    assert len(bad.value.lines) == 2
    assert "--rate-hints (SCORPION_RATE_HINTS)" in bad.value.lines[0]
    settings = load_settings(["--rate-reads", "off"], {"SCORPION_RATE_ACTIONS": "5,10"})
    rates = limit_settings(settings).rates
    assert rates["read"] is None and rates["action"] == Rate(5.0, 10.0)


GOOD_ORIGINS = [
    "https://play.example.org",
    "http://localhost:5173",
    "http://127.0.0.1:8080",
    "http://[::1]:5173",
    "https://xn--skorpioni-q4a.fi",
    "app://scorpion",
]
BAD_ORIGINS = [
    "example.org",  # no scheme
    "localhost:5173",  # a scheme "localhost", no host
    "https://play.example.org/",  # a trailing slash
    "https://play.example.org/play",  # a path
    "https://play.example.org?x=1",
    "https://Play.Example.org",  # a browser sends lower case
    "https://play.example.org:443",  # and leaves the default port out
    "http://play.example.org:80",
    "https://play.example.org:0",
    "https://play.example.org:65536",
    "https://user@play.example.org",
    "null",
    "https://",
    "http://127.1",  # a browser writes an address whole
    "http://0x7f.0.0.1",
    "http://256.1.1.1",
    "http://[0:0::1]:8080",
    "http://[::::]",
]


def test_allowed_origins_are_origins_as_browsers_send_them() -> None:
    joined = " , ".join(GOOD_ORIGINS)
    assert origins(load_settings(["--allowed-origins", joined])) == GOOD_ORIGINS
    assert origins(load_settings(["--allowed-origins", ""])) is None  # any origin
    for bad in BAD_ORIGINS:
        with pytest.raises(SettingsError) as refused:
            load_settings([], {"SCORPION_ALLOWED_ORIGINS": f"https://ok.example,{bad}"})
        [line] = refused.value.lines
        assert line.startswith("--allowed-origins (SCORPION_ALLOWED_ORIGINS): ")
        assert repr(bad) in line and "scheme://host[:port]" in line, line
        assert "https://ok.example" not in line


@pytest.mark.parametrize("blank", [" ", ",", " , "])
def test_allowed_origins_that_list_none_are_refused(blank: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(["--allowed-origins", blank])
    [line] = refused.value.lines
    assert "lists no origin" in line and "leave it empty" in line


def test_a_star_for_allowed_origins_points_to_leaving_it_empty() -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(["--allowed-origins", "*"])
    [line] = refused.value.lines
    assert "'*' is not an origin" in line and "leave it empty" in line


def test_an_outbox_is_bounded_in_bytes_and_drops_its_frames_when_over() -> None:
    budget = Budget(limit=1000)
    outbox = Outbox(limit=100, max_bytes=300, budget=budget)
    assert outbox.put(b"x" * 200) and budget.used == 200
    assert not outbox.put(b"x" * 200)
    assert outbox.overflowed and outbox.queued_bytes == 0 and budget.used == 0


def test_the_total_budget_overflows_the_fullest_outbox() -> None:
    budget = Budget(limit=500)
    hog, small = Outbox(max_bytes=10_000, budget=budget), Outbox(max_bytes=10_000, budget=budget)
    assert hog.put(b"x" * 400)
    assert small.put(b"y" * 50)
    assert small.put(b"y" * 100)  # would pass 500: the hog goes
    assert hog.overflowed and not small.overflowed
    assert budget.used == 150 and budget.shed == 1


async def test_an_outbox_gives_frames_in_order_and_holds_none_it_has_given() -> None:
    import asyncio
    import sys

    from server.hub import COMPACT_AT

    outbox = Outbox(limit=10_000)
    frames = [f"frame {n}".encode() for n in range(3 * COMPACT_AT)]
    sent: list[bytes] = []
    for frame in frames:  # a writer that keeps one frame behind, so it never drains
        assert outbox.put(frame)
        if len(outbox) > 1:
            sent.append(await outbox.get() or b"")
    # Each frame given is referred to by `frames`, `sent` and getrefcount's argument only.
    assert [sys.getrefcount(sent[n]) for n in range(len(sent))] == [3] * len(sent)
    waiting = asyncio.ensure_future(outbox.get())
    assert await waiting == frames[-1]
    assert sent == frames[:-1] and len(outbox) == 0 and outbox.queued_bytes == 0
    waiting = asyncio.ensure_future(outbox.get())  # nothing queued: it waits
    await asyncio.sleep(0)
    assert not waiting.done()
    outbox.put(b"late")
    assert await waiting == b"late"
    outbox.close()
    assert await outbox.get() is None


class _Socket:
    """A socket in its handshake, for ``Handshaking``: evicted, it leaves at once."""

    def __init__(self, places: Handshaking, key: str) -> None:
        self.places, self.key, self.evicted = places, key, False

    def evict(self) -> None:
        self.evicted = True
        self.places.leave(self.key, cast(Any, self))


def test_sockets_in_their_handshakes_make_room_for_an_address_holding_fewer() -> None:
    """Addresses each within their own cap filled every place: a client from another
    address was closed unread, for as long as they kept them filled."""
    places = Handshaking(4)

    def enter(key: str) -> _Socket | None:
        socket = _Socket(places, key)
        return socket if places.enter(key, cast(Any, socket)) else None

    held = [enter("a"), enter("a"), enter("a"), enter("b")]
    assert all(held) and places.count == 4
    newcomer = enter("c")  # a holds the most: its oldest makes room
    assert newcomer is not None and held[0] is not None and held[0].evicted
    assert enter("d") is not None and held[1] is not None and held[1].evicted
    places.leave("c", cast(Any, newcomer))
    assert places.count == 3 and enter("e") is not None and places.count == 4


def test_a_new_client_gets_in_when_no_address_holds_more_than_its_share() -> None:
    """300 addresses each holding one socket that never finished its handshake filled
    every place: with no address holding more than its share, every new client was
    closed unread. The oldest socket still in its handshake makes room (an honest
    handshake ends in milliseconds)."""
    places = Handshaking(256)

    def enter(key: str) -> _Socket | None:
        socket = _Socket(places, key)
        return socket if places.enter(key, cast(Any, socket)) else None

    silent = [enter(f"10.0.{n // 256}.{n % 256}") for n in range(256)]
    assert all(silent) and places.count == 256
    first = enter("192.0.2.1")
    second = enter("192.0.2.1")  # none holds more than one: the oldest of all makes room
    assert first is not None and second is not None
    assert [socket is not None and socket.evicted for socket in silent[:3]] == [1, 1, 0]
    assert enter("192.0.2.1") is not None and first.evicted  # it holds the most
    assert places.count == 256
    held = enter("198.51.100.1")  # 192.0.2.1 holds two: its oldest makes room
    assert held is not None and second.evicted and places.count == 256


def test_a_slow_handshake_is_not_closed_for_addresses_that_hold_many() -> None:
    """Addresses holding many sockets, each opening more as fast as its rate allowed,
    made room for themselves by closing the oldest socket of all: a client holding one,
    whose handshake took a second or two (a slow phone link), was closed in it, 5 times
    in 8, by 15 addresses. Room is made among those holding the most, or one fewer."""
    places = Handshaking(6)

    def enter(key: str) -> _Socket | None:
        socket = _Socket(places, key)
        return socket if places.enter(key, cast(Any, socket)) else None

    slow = enter("192.0.2.1")
    flood = [enter(key) for key in ("a", "b", "a", "b", "a")]
    assert slow is not None and all(flood) and places.count == 6
    for _ in range(12):  # b, then a, each holding the most or one fewer
        assert enter("b") is not None and enter("a") is not None
        assert not slow.evicted
    assert places.count == 6


def test_a_slow_handshake_is_not_closed_for_addresses_holding_two_each() -> None:
    """Addresses holding two sockets each, one opening another as soon as one of its was
    closed, closed the oldest socket of all: a client's one slow handshake, 7 times in 8
    beside 128 such addresses. Only when no address holds more than one is it so."""
    places = Handshaking(8)

    def enter(key: str) -> _Socket | None:
        socket = _Socket(places, key)
        return socket if places.enter(key, cast(Any, socket)) else None

    slow = enter("192.0.2.1")
    pairs = [enter(key) for key in ("a", "b", "c", "a", "b", "c")]
    assert slow is not None and all(pairs) and places.count == 7
    assert enter("d") is not None  # the last place
    for _ in range(3):
        for key in ("a", "b", "c", "d"):
            assert enter(key) is not None and not slow.evicted
    assert places.count == 8


class _GateSocket:
    """A socket counted by ``SocketGate``: evicted, it leaves at once, as ``_Bounded``."""

    def __init__(self, gate: SocketGate, key: str) -> None:
        self.gate, self.key, self.evicted = gate, key, False

    def evict(self) -> None:
        self.evicted = True
        self.gate.handshaken(self.key, cast(Any, self))
        self.gate.leave(self.key)


def test_a_socket_evicted_for_its_own_address_leaves_its_count_right() -> None:
    """The count of an address's sockets was read before a newcomer from it evicted one
    of its own, then written back one higher: each such eviction lost the address a
    socket for good (80 it might hold fell to 14 over a few floods)."""
    gate = SocketGate(8, [], handshakes=2)

    def enter() -> _GateSocket | None:
        socket = _GateSocket(gate, "192.0.2.1")
        return socket if gate.enter("192.0.2.1", cast(Any, socket)) else None

    first, second = enter(), enter()
    third = enter()  # no room: one of its own address's sockets makes room
    assert first is not None and second is not None and third is not None
    assert first.evicted
    assert gate.open["192.0.2.1"] == 2
    for socket in (second, third):
        gate.handshaken("192.0.2.1", cast(Any, socket))
        gate.leave("192.0.2.1")
    assert "192.0.2.1" not in gate.open
