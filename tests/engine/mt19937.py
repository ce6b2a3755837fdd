"""MT19937 written out as docs/deals.md section 4 describes it.

``engine.deal`` draws its twister deals from CPython's ``random.Random``; this is
the page's algorithm, step by step, that the tests hold ``random.Random`` and the
engine's deals to, so the page stays a correct recipe for other implementations.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MersenneTwister", "seed_key"]

MASK32: Final = 0xFFFFFFFF


class MersenneTwister:
    """MT19937 (Matsumoto and Nishimura), seeded as CPython seeds it from an int."""

    _N: Final = 624
    _M: Final = 397

    def __init__(self, seed: int) -> None:
        key = seed_key(seed)
        state = self._init_genrand(19650218)
        n = self._N
        i, j = 1, 0
        for _ in range(max(n, len(key))):
            prev = state[i - 1]
            state[i] = ((state[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + j) & MASK32
            i += 1
            j += 1
            if i >= n:
                state[0] = state[n - 1]
                i = 1
            if j >= len(key):
                j = 0
        for _ in range(n - 1):
            prev = state[i - 1]
            state[i] = ((state[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - i) & MASK32
            i += 1
            if i >= n:
                state[0] = state[n - 1]
                i = 1
        state[0] = 0x80000000
        self._state = state
        self._index = n

    @classmethod
    def _init_genrand(cls, seed: int) -> list[int]:
        state = [seed & MASK32]
        for i in range(1, cls._N):
            prev = state[-1]
            state.append((1812433253 * (prev ^ (prev >> 30)) + i) & MASK32)
        return state

    def _twist(self) -> None:
        state, n, m = self._state, self._N, self._M
        for k in range(n):
            y = (state[k] & 0x80000000) | (state[(k + 1) % n] & 0x7FFFFFFF)
            value = state[(k + m) % n] ^ (y >> 1)
            if y & 1:
                value ^= 0x9908B0DF
            state[k] = value
        self._index = 0

    def next_u32(self) -> int:
        if self._index >= self._N:
            self._twist()
        y = self._state[self._index]
        self._index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y

    def next_double(self) -> float:
        """A double in [0, 1) with 53 random bits, as CPython's ``random()``."""
        high = self.next_u32() >> 5
        low = self.next_u32() >> 6
        return (high * 67108864 + low) / 9007199254740992.0


def seed_key(seed: int) -> list[int]:
    """CPython's int seeding key: |seed| as 32-bit words, least significant first."""
    value = abs(seed)
    key: list[int] = []
    while value:
        key.append(value & MASK32)
        value >>= 32
    return key or [0]
