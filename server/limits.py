"""Abuse controls: who a client is, how often it may ask, how many connections it may hold.

Theory of operation
-------------------
Every connection is attributed to an **address**: the TCP peer's IP, or, when
the peer is one of the configured trusted proxies (``trusted_proxies``, CIDRs),
the right-most address of the forwarded header (``X-Forwarded-For`` by
default) that is not itself a trusted proxy. The header of an untrusted peer is
ignored, so a client cannot choose its own address.

Requests are grouped by **kind** (``KIND_OF``): ``action`` (moves and other
writes to a game), ``game`` (``new_game``: a game's rows written, a deal drawn and
maybe searched, the unfinished game it replaces booked as lost, each many moves'
cost, so that 8 players of one address starting games as fast as answered, well
within the action rate, no longer slowed everyone's moves twenty-fold), ``hint``
(solver time), ``read`` (everything else that reads),
``register`` (the account's writes: a new player, counted per connection and
address; ``rotate_token`` and ``sign_out``, counted per connection and player,
so that nobody behind the same address can keep a player from revoking a
leaked token) and ``auth`` (a ``hello`` whose token is refused: only a token
not refused before counts, so a device that retries one stale token does not
use up its address's rate, and the players behind the same address can still
sign in; the last ``REFUSED_KEPT`` refused tokens are remembered, hashed). A
``hello`` with a new token takes its ``auth`` token before the read, and has it
back unless the token is refused (``auth_take``, ``auth_settled``): hellos in
flight together cannot overdraw the bucket while their reads yield.
Each kind has a token bucket ``Rate`` (a refill rate per second and a burst).
An action, hint or read takes one token from three buckets: the connection's,
the player's (the rate times ``player_factor``: a player's devices share it)
and the address's (times ``address_factor``: the players behind one NAT share
it). ``auth`` is counted per address only, ``register`` as said above, and new
players also from one bucket for the whole server (the rate times
``address_factor``: many addresses, each within its own rate, registering at
once slowed everyone's moves). A request is admitted only when every bucket it
needs has a token; otherwise nothing is taken and the caller answers
``rate_limited`` with the time until the emptiest bucket has one again.

**Strikes** are kept per address, not per connection, so they survive a
reconnect: every ``bad_request`` is one, and so is every ``rate_limited`` reply
to a request sent before the connection's last ``retry_after_ms`` had passed,
beyond ``IN_FLIGHT`` such (one that waited as told is not:
``ConnectionBuckets.refused``); more than
``abuse_limit`` within ``abuse_window`` seconds close the connection (1008);
while that is still true (strikes age out of the window), a new connection
from the address is closed at once too.

**Connections** are counted per address and in total; ``admit`` refuses one
past ``max_per_address`` or ``max_total``. Everything here is synchronous and
takes the time as an argument (``time.monotonic()`` in the server), so the
rules are deterministic under test. Buckets that have refilled completely and
strike records that have aged out carry no information and are pruned, which
keeps memory proportional to the addresses and players active right now.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import math
import re
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from protocol import RATE_KINDS
from protocol.constants import ABUSE_LIMIT, ABUSE_WINDOW_SECONDS

__all__ = [
    "KINDS",
    "KIND_OF",
    "AddressBook",
    "BucketMap",
    "ConnectionBuckets",
    "LimitSettings",
    "Limits",
    "Network",
    "Rate",
    "TokenBucket",
    "UnreadableHop",
    "address_key",
    "client_address",
    "in_networks",
    "parse_networks",
    "parse_rate",
]

KINDS: Final = ("action", "game", "hint", "read", "register", "auth")
KIND_OF: Final[Mapping[str, str]] = RATE_KINDS
"""Request type -> kind; every other request type (hello, ping, reads) is ``read``."""

IN_FLIGHT: Final = 4
"""Requests of a kind a client may have sent before it heard of a refusal (pipelined,
or a second device's worth on one connection): these are no strikes when early."""

EARLY_GRACE_S: Final = 0.002
"""How much sooner than told a request may come and still count as having waited
(a client's timer that fires a little early), at most half the wait it was told."""

PRUNE_EVERY: Final = 4096
"""How many bucket uses between two sweeps of the full (forgettable) buckets."""

SWEPT_PER_STRIKE: Final = 2
"""Strike records looked at (and forgotten when aged out) at each new strike."""

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket's shape: ``per_s`` tokens a second, at most ``burst`` saved up."""

    per_s: float
    burst: float

    def scaled(self, factor: int) -> Rate:
        return Rate(self.per_s * factor, self.burst * factor)


def parse_rate(text: str) -> Rate | None:
    """``"RATE,BURST"`` (per second, e.g. ``"20,60"``) -> Rate; ``"off"`` -> None.

    Raises ValueError with a readable reason for anything else.
    """
    if text.strip().lower() == "off":
        return None
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError("must be RATE,BURST (per second, e.g. 20,60) or off")
    # float() takes any script's digits, 1_0, 1e3, inf, nan and spaces around: a rate is
    # written in decimals, as an integer setting is in digits (config.py)
    if not all(_DECIMAL.fullmatch(part) for part in parts):
        raise ValueError("must be RATE,BURST with two numbers in decimals (0.5,10), or off")
    per_s, burst = float(parts[0]), float(parts[1])
    if not (burst >= 1 and math.isfinite(per_s) and math.isfinite(burst)):
        raise ValueError("needs a rate of at least one a day and a burst of at least 1")
    if per_s < LOWEST_RATE_PER_S:
        raise ValueError(f"needs a rate of at least one a day ({_LOWEST_WRITTEN} per second)")
    return Rate(per_s, burst)


_DECIMAL: Final = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")

LOWEST_RATE_PER_S: Final = 1 / 86400
"""One a day: a lower rate's ``retry_after_ms`` could pass the wire's largest integer."""

_LOWEST_WRITTEN: Final = f"{math.ceil(LOWEST_RATE_PER_S * 1e7) / 1e7:.7f}"
"""The lowest rate as it may be written (in decimals, not 1.16e-05), rounded up."""


def parse_networks(text: str) -> list[Network]:
    """Comma-separated CIDRs (or single addresses); raises ValueError naming a bad one."""
    networks: list[Network] = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an address or CIDR") from None
    return networks


class TokenBucket:
    """Tokens refill at ``rate.per_s`` up to ``rate.burst``; a request costs one."""

    __slots__ = ("burst", "per_s", "stamp", "tokens")

    def __init__(self, rate: Rate, now: float) -> None:
        self.per_s = rate.per_s  # the rate's numbers kept here: read on every request
        self.burst = rate.burst
        self.tokens = rate.burst
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_s)
            self.stamp = now

    def wait(self, now: float) -> float:
        """Seconds until a token is there (0.0: one is there now). Takes nothing."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_s

    def take(self, now: float) -> None:
        self._refill(now)
        self.tokens -= 1

    def give_back(self, now: float) -> None:
        """Return a token taken for something that did not happen (never past the burst)."""
        self._refill(now)
        self.tokens = min(self.burst, self.tokens + 1)

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.burst


class BucketMap:
    """Buckets by key, created full on first use and forgotten once full again."""

    def __init__(self, rate: Rate) -> None:
        self.rate = rate
        self._buckets: dict[object, TokenBucket] = {}
        self._uses = 0

    def get(self, key: object, now: float) -> TokenBucket:
        self._uses += 1
        if self._uses >= PRUNE_EVERY:
            self._uses = 0
            self.prune(now)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, now)
        return bucket

    def prune(self, now: float) -> None:
        for key in [key for key, bucket in self._buckets.items() if bucket.full(now)]:
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """The numbers behind ``Limits`` (from ``server.config.Settings``)."""

    rates: Mapping[str, Rate | None]  # by kind; None: that kind is not limited
    player_factor: int = 2
    address_factor: int = 16
    abuse_limit: int = ABUSE_LIMIT
    abuse_window: float = ABUSE_WINDOW_SECONDS
    max_per_address: int = 64
    max_total: int = 10_000
    connections: Rate | None = None  # new sockets per address (``SocketGate``); None: any


class ConnectionBuckets:
    """One connection's own buckets, and when it was told it may send each kind again
    (dropped with the connection)."""

    def __init__(self, rates: Mapping[str, Rate | None], now: float) -> None:
        self._buckets = {
            kind: TokenBucket(rate, now) for kind, rate in rates.items() if rate is not None
        }
        self._told: dict[str, tuple[float, int]] = {}  # kind -> (from when, pardons left)

    def get(self, kind: str) -> TokenBucket | None:
        return self._buckets.get(kind)

    def refused(self, kind: str, now: float, retry_after: float) -> bool:
        """A request of ``kind`` refused, the connection told to wait ``retry_after``
        seconds: True (a strike) when it came before the time it was last told it might
        send that kind again, beyond the first ``IN_FLIGHT`` such (requests the client
        had sent before it heard the refusal). A client that waits as told meets the
        limit again at full speed, and is no abuser for it; a pipelined flood is struck
        from its ``IN_FLIGHT + 1``-th early request on, whatever the rate."""
        told, pardons = self._told.get(kind, (now, IN_FLIGHT))
        early = now < told
        if early:
            pardons -= 1
        else:
            pardons = IN_FLIGHT  # it waited: a new refusal may have requests in flight again
        # From then on a request has waited as told: the wait, less a grace for a timer
        # that fires a little early, never more than half the wait.
        self._told[kind] = (now + retry_after - min(EARLY_GRACE_S, retry_after / 2), pardons)
        return early and pardons < 0


class AddressBook:
    """Open connections per address, and the address's recent strikes."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self.open: dict[str, int] = {}
        # The longest unlooked-at first: an OrderedDict, whose first key is found at once,
        # where a plain dict's search for it passes every slot its pops left empty.
        self._strikes: OrderedDict[str, deque[float]] = OrderedDict()

    def strike(self, address: str, now: float) -> bool:
        """One strike for ``address``; True once it has more than ``limit`` in the window.

        Each strike also looks at the ``SWEPT_PER_STRIKE`` records looked at longest ago:
        one whose strikes have all aged out is forgotten, even if its address never
        comes back (struck once from each of many addresses, the records of those gone
        stayed), and one still in the window goes to the back of the line. Records grow
        by one a strike at most and are looked at twice as fast, a few at a time (a
        sweep of them all at once held the loop 20 ms at 100,000)."""
        for _ in range(SWEPT_PER_STRIKE):
            oldest = next(iter(self._strikes), None)
            if oldest is None or oldest == address:
                break
            if self._count(oldest, now):
                self._strikes.move_to_end(oldest)
        strikes = self._strikes.setdefault(address, deque())
        strikes.append(now)
        return self._count(address, now) > self.limit

    def banned(self, address: str, now: float) -> bool:
        return self._count(address, now) > self.limit

    def _count(self, address: str, now: float) -> int:
        strikes = self._strikes.get(address)
        if strikes is None:
            return 0
        while strikes and strikes[0] <= now - self.window:
            strikes.popleft()
        if not strikes:
            del self._strikes[address]
            return 0
        # Far beyond the limit, older strikes add nothing: keep memory bounded.
        while len(strikes) > 2 * self.limit + 2:
            strikes.popleft()
        return len(strikes)

    def addresses_with_strikes(self) -> int:
        return len(self._strikes)


class Limits:
    """Every abuse control of one server (see the module docstring)."""

    def __init__(self, settings: LimitSettings) -> None:
        self.settings = settings
        self.book = AddressBook(settings.abuse_limit, settings.abuse_window)
        self.total = 0
        rates = settings.rates
        self._player = {
            kind: BucketMap(rate.scaled(settings.player_factor))
            for kind, rate in rates.items()
            if rate is not None and kind in ("action", "game", "hint", "read", "register")
        }
        self._address = {
            kind: BucketMap(rate.scaled(settings.address_factor) if kind in _SHARED else rate)
            for kind, rate in rates.items()
            if rate is not None
        }
        self._refused: OrderedDict[bytes, None] = OrderedDict()  # tokens' hashes, oldest first
        self._guessing: dict[str, int] = {}  # reads holding refused tokens, by address
        self._settled: dict[str, asyncio.Event] = {}  # set when one of them ends
        # New players on this server from every address together: at most as many as
        # ``address_factor`` addresses register. Each is a transaction of its own, and
        # clients spread over many addresses, each within its own rate, slowed every
        # player's moves to 100 ms and more.
        register = rates.get("register")
        self._node_rate = None if register is None else register.scaled(settings.address_factor)
        self._node: TokenBucket | None = None

    # -- connections ----------------------------------------------------------------

    def admit(self, address: str, now: float) -> str | None:
        """Count a new connection from ``address``; or the reason it is refused (not counted)."""
        if self.book.banned(address, now):
            return "banned"
        if self.total >= self.settings.max_total:
            return "server full"
        if self.book.open.get(address, 0) >= self.settings.max_per_address:
            return "too many connections from this address"
        self.total += 1
        self.book.open[address] = self.book.open.get(address, 0) + 1
        return None

    def release(self, address: str) -> None:
        self.total -= 1
        left = self.book.open.get(address, 1) - 1
        if left > 0:
            self.book.open[address] = left
        else:
            self.book.open.pop(address, None)

    def connection_buckets(self, now: float) -> ConnectionBuckets:
        rates = {kind: rate for kind, rate in self.settings.rates.items() if kind != "auth"}
        return ConnectionBuckets(rates, now)

    # -- requests -------------------------------------------------------------------

    def check(
        self,
        kind: str,
        now: float,
        own: ConnectionBuckets,
        address: str,
        player: int | None = None,
    ) -> float:
        """Admit one request of ``kind``: 0.0 (tokens taken), or the seconds to wait."""
        buckets = self._buckets(kind, now, own, address, player)
        wait = 0.0
        for bucket in buckets:
            wait = max(wait, bucket.wait(now))
        if wait > 0:
            return wait
        for bucket in buckets:
            bucket.tokens -= 1  # wait() refilled each at ``now``, and each has a token
        return 0.0

    def refused_before(self, token: str) -> bool:
        """Whether ``token`` was refused before: it is no guess, and may be tried again at
        once (and is refused again), taking nothing of its address's refused-token rate
        (a token tried again is remembered as one of the last refused)."""
        key = _hashed(token)
        if key not in self._refused:
            return False
        self._refused.move_to_end(key)
        return True

    def auth_take(self, address: str, now: float) -> float:
        """Take one of ``address``'s refused-token bucket for a hello about to read a new
        token: 0.0 (taken), or the seconds until there is one (nothing taken). Taken
        before the read, not after it: a read that yields (PostgreSQL's) let every hello
        in flight at once pass a check that none of them had charged yet, and the bucket
        went minutes below empty (60 guesses at once, then a right token told to wait
        255 s). ``auth_settled`` gives it back unless the token is refused."""
        buckets = self._address.get("auth")
        if buckets is None:
            return 0.0
        bucket = buckets.get(address, now)
        wait = bucket.wait(now)
        if wait == 0:
            bucket.take(now)
            self._guessing[address] = self._guessing.get(address, 0) + 1
        return wait

    async def auth_turn(self, address: str, now: float) -> None:
        """Until ``address`` has a refused token for one more new token's read, or none
        is held by a read in flight (``auth_take`` then says the wait). Players behind
        one NAT saying hello together with their own right tokens were told to wait
        beyond the burst: each read held a token it then gave back."""
        buckets = self._address.get("auth")
        while (
            buckets is not None
            and self._guessing.get(address, 0) > 0
            and buckets.get(address, now).wait(now) > 0
        ):
            settled = self._settled.setdefault(address, asyncio.Event())
            await settled.wait()
            now = time.monotonic()

    def auth_settled(self, address: str, token: str, now: float, refused: bool) -> bool:
        """The end of a hello that took a token (``auth_take``): when ``token`` was
        refused, remember it and keep what was taken; else (it was taken, or could not
        be read) give it back. False also when another hello refused the same token
        meanwhile: each token is counted once."""
        key = _hashed(token)
        counted = refused and key not in self._refused
        if refused:
            self._refused[key] = None
            self._refused.move_to_end(key)
            if len(self._refused) > REFUSED_KEPT:
                self._refused.popitem(last=False)
        buckets = self._address.get("auth")
        if buckets is not None and not counted:
            buckets.get(address, now).give_back(now)
        left = self._guessing.pop(address, 1) - 1
        if left > 0:
            self._guessing[address] = left
        settled = self._settled.pop(address, None)
        if settled is not None:
            settled.set()  # those waiting look again (``auth_turn``)
        return counted

    def _buckets(
        self, kind: str, now: float, own: ConnectionBuckets, address: str, player: int | None
    ) -> list[TokenBucket]:
        """The buckets a request of ``kind`` takes from (a list: every request asks)."""
        mine = own.get(kind)
        buckets = [] if mine is None else [mine]
        shared = self._player.get(kind)
        if player is not None and shared is not None:
            buckets.append(shared.get(player, now))
        if kind == "register" and player is not None:
            return buckets  # a player's own account: not the neighbours' on its address
        shared = self._address.get(kind)
        if shared is not None:
            buckets.append(shared.get(address, now))
        if kind == "register" and self._node_rate is not None:
            if self._node is None:
                self._node = TokenBucket(self._node_rate, now)
            buckets.append(self._node)
        return buckets

    def tracked(self) -> int:
        """How many shared buckets and strike records are held (for tests and metrics)."""
        buckets = sum(len(m) for m in (*self._player.values(), *self._address.values()))
        return buckets + self.book.addresses_with_strikes()


REFUSED_KEPT: Final = 4096
"""How many refused tokens are remembered (their hashes, 32 bytes each), the last ones."""


def _hashed(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


_SHARED: Final = frozenset({"action", "game", "hint", "read"})
"""Kinds whose address bucket is the connection's rate times ``address_factor``."""


def client_address(peer: str, forwarded: str | None, trusted: list[Network]) -> str:
    """The client's address: ``peer``, or from ``forwarded`` when ``peer`` is a trusted proxy;
    as ``address_key`` gives it. ``forwarded`` is the chain of hops, comma-separated, as
    ``X-Forwarded-For`` (an address, with a port or not) or RFC 7239's ``Forwarded``
    (``for=...;proto=...``) write it. A hop that names no address (``unknown``, an
    obfuscated name, junk) ends the walk: the proxy's own address is the client's, and
    the caller should say so (``UnreadableHop``)."""
    if not trusted or not forwarded or not in_networks(peer, trusted):
        return address_key(peer)
    hops = [_hop_address(hop) for hop in _split_outside_quotes(forwarded, ",")]
    for hop in reversed(hops):
        if hop is None:
            raise UnreadableHop(address_key(peer))
        if not any(hop in network for network in trusted):
            return address_key(str(hop))
    first = hops[0]
    assert first is not None
    return address_key(str(first))


class UnreadableHop(Exception):
    """A trusted proxy's forwarded header names no address where the client's should be;
    ``args[0]`` is the address to count the client under (the proxy's)."""


def address_key(text: str) -> str:
    """The address a client is counted under: an IPv4 address (also one written as IPv6:
    ``::ffff:a.b.c.d``, or carried in an IPv6 address by a translator or a tunnel,
    ``_carried_ipv4``), or a global IPv6 address's /64, which one subscriber is given
    whole (counting its addresses apart would give it 2^64). An address of a local-use
    NAT64 prefix (64:ff9b:1::/48, RFC 8215) is counted whole: each stands for one IPv4
    client, wherever the translator's prefix length puts its bits (by its /64, every
    IPv4 client of the translator shared one address's caps and bans). Other text as
    it is."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return text
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None:
            return str(carried)
        if address.is_global and address not in _NAT64_LOCAL:
            return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 client an IPv6 address stands for, or None:

    - ``::ffff:a.b.c.d``, IPv4 written as IPv6;
    - NAT64's well-known prefix (64:ff9b::/96, RFC 6052): the last 32 bits. Counted by
      its /64, every IPv4 client of a translator shared one address's caps and bans;
    - Teredo (RFC 4380, 2001::/32): the client's public IPv4 address (obfuscated in the
      last 32 bits); its port (bits 80 to 96) is left out, as IPv4 clients' ports are.
      Counted whole, one host had a new address for every port it took;
    - 6to4 (RFC 3056, 2002::/16): the site's IPv4 address (bits 16 to 48), whose /48
      held 2^16 /64s.
    """
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    if address.teredo is not None:
        return address.teredo[1]
    return address.sixtofour


_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL: Final = ipaddress.IPv6Network("64:ff9b:1::/48")


def _hop_address(hop: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address in one hop of a forwarded chain: ``192.0.2.1``, ``192.0.2.1:4711``,
    ``2001:db8::1``, ``[2001:db8::1]:4711``, or an RFC 7239 element whose ``for`` is one
    of those, quoted or not (its other pairs, quoted strings with commas and
    semicolons in them too, are skipped); None for anything else."""
    text = hop.strip()
    if "=" in text:  # RFC 7239: pairs separated by ';'
        pairs = (pair.partition("=") for pair in _split_outside_quotes(text, ";"))
        found = [value for name, _, value in pairs if name.strip().lower() == "for"]
        if len(found) != 1:
            return None
        value = _unquoted(found[0].strip())
        if value is None:
            return None
        text = value
    if text.startswith("["):
        inner, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not _is_port(rest)):
            return None
        text = inner
    elif text.count(":") == 1:  # IPv4 with a port (an IPv6 address has two colons at least)
        text, _, port = text.partition(":")
        if not _is_port(":" + port):
            return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_port(text: str) -> bool:
    """``:4711``, or RFC 7239's obfuscated port (``:_abc``)."""
    return text.startswith(":") and (
        (text[1:].isdigit() and 0 < len(text) <= 6) or _OBFUSCATED.fullmatch(text[1:]) is not None
    )


_OBFUSCATED: Final = re.compile(r"_[A-Za-z0-9._-]+")


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` where it is not inside a quoted string (RFC 7230's
    quoted-string, with backslash escapes)."""
    parts, start, quoted, escaped = [], 0, False, False
    for at, char in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


def _unquoted(value: str) -> str | None:
    """A token as it is, a quoted string without its quotes and escapes; None if malformed."""
    if not value.startswith('"'):
        return None if '"' in value else value
    if len(value) < 2 or not value.endswith('"'):
        return None
    return re.sub(r"\\(.)", r"\1", value[1:-1])


def in_networks(text: str, networks: list[Network]) -> bool:
    """Whether ``text`` is an address in one of ``networks`` (False for no address)."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return any(address in network for network in networks)
