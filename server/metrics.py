"""The server's Prometheus metrics, one registry per server instance.

Theory of operation
-------------------
``Metrics`` owns a private ``CollectorRegistry`` (several servers in one
process, as in the tests, never share or clash) and the instruments the
other modules update:

- counted as they happen: connections opened, connections closed by the
  close code sent, requests by type, error replies by request type and code,
  rate-limited requests by kind (``server.connection``); each group-commit
  batch size and each action's commit latency (``Store.observe_commits``);
  event-loop lag (``server.app``'s heartbeat); solver run times by kind
  (``server.workers``);
- of those, the three updated on every action (requests by type, commit
  latency, batch size) are plain numbers on the event loop's thread, turned
  into samples when scraped (``_OnTheLoop``): the client's instruments take a
  lock and check their state on each update, which was 2.3% of a lone
  action's instructions (``bench.instructions``);
- read when scraped, from the objects that hold them (``watch``): open
  connections, games in memory, solver searches in flight, bytes queued in
  every connection's outbox; and the process's own ``process_*`` (CPU,
  memory, open files), as the Prometheus client reports them.

``render()`` is the text exposition format served at ``/metrics``
(``server.http``). docs/deploy.md says what each metric means.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
_LATENCY_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
_BATCH_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
_LAG_BUCKETS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_SOLVER_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
_bound_label: Callable[[float], str] = floatToGoString  # a bucket's ``le``, as the client's


class Metrics:
    """Every instrument of one server (module docstring)."""

    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry()
        ProcessCollector(registry=registry)  # process_*: CPU, memory, open files
        self.connections_opened = Counter(
            "scorpion_connections_opened", "WebSocket connections accepted", registry=registry
        )
        self.connections = Gauge(
            "scorpion_connections", "WebSocket connections open now", registry=registry
        )
        self.errors = Counter(
            "scorpion_errors",
            "error replies, by request type and error code",
            ["type", "code"],
            registry=registry,
        )
        self.commit_seconds = LoopHistogram(
            "scorpion_commit_seconds",
            "time from submitting a write to its durable commit",
            _LATENCY_BUCKETS,
        )
        self.batch_size = LoopHistogram(
            "scorpion_commit_batch_size", "writes per group-commit transaction", _BATCH_BUCKETS
        )
        self._answered: dict[str, int] = {}  # requests answered, by request type
        registry.register(_OnTheLoop(self._answered, (self.commit_seconds, self.batch_size)))
        self.games = Gauge("scorpion_games_in_memory", "live games cached", registry=registry)
        self.loop_lag = Histogram(
            "scorpion_event_loop_lag_seconds",
            "how late the event loop ran a timer that should have fired at once",
            buckets=_LAG_BUCKETS,
            registry=registry,
        )
        self.solver_pending = Gauge(
            "scorpion_solver_pending", "solver searches queued or running", registry=registry
        )
        self.solver_seconds = Histogram(
            "scorpion_solver_seconds",
            "solver run time (hint, lost, winnable), including the wait for a worker",
            ["kind"],
            buckets=_SOLVER_BUCKETS,
            registry=registry,
        )
        self.closes = Counter(
            "scorpion_connections_closed",
            "connections ended, by the close code the server sent (none: the peer closed first)",
            ["code"],
            registry=registry,
        )
        self.rate_limited = Counter(
            "scorpion_rate_limited",
            "requests answered rate_limited, by kind (action, game, hint, read, register, auth)",
            ["kind"],
            registry=registry,
        )
        self.outbox_bytes = Gauge(
            "scorpion_outbox_bytes", "bytes queued for all connections, not yet sent",
            registry=registry,
        )  # fmt: skip

    def watch(
        self,
        *,
        connections: Callable[[], float],
        games: Callable[[], float],
        solver_pending: Callable[[], float],
        outbox_bytes: Callable[[], float],
    ) -> None:
        """Gauges read at scrape time from the objects that hold the numbers."""
        self.connections.set_function(connections)
        self.games.set_function(games)
        self.solver_pending.set_function(solver_pending)
        self.outbox_bytes.set_function(outbox_bytes)

    def answered(self, request_type: str, error_code: str | None) -> None:
        """One request answered, with its error code if it failed."""
        answered = self._answered
        answered[request_type] = answered.get(request_type, 0) + 1
        if error_code is not None:
            self.errors.labels(request_type, error_code).inc()

    def closed(self, code: int | None) -> None:
        """A connection ended; ``code`` is the close code we sent, if any."""
        self.closes.labels("none" if code is None else str(code)).inc()

    def render(self) -> bytes:
        """The registry in Prometheus' text exposition format."""
        return generate_latest(self.registry)


class LoopHistogram:
    """A histogram observed and scraped on the event loop's thread only (module
    docstring): a count per bucket and the sum, without a lock."""

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        self.name, self.documentation = name, documentation
        self._bounds = [float(bound) for bound in buckets]
        self._counts = [0] * (len(self._bounds) + 1)  # the last: above every bound
        self._sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self._bounds, value)] += 1  # a bucket holds values <= bound
        self._sum += value

    def family(self) -> HistogramMetricFamily:
        """The samples, as prometheus_client's ``Histogram`` gives them."""
        buckets, cumulative = [], 0
        for bound, count in zip([*self._bounds, math.inf], self._counts, strict=True):
            cumulative += count
            buckets.append((_bound_label(bound), float(cumulative)))
        return HistogramMetricFamily(
            self.name, self.documentation, buckets=buckets, sum_value=self._sum
        )


class _OnTheLoop(Collector):
    """The metrics kept as plain numbers, as samples when scraped."""

    def __init__(self, answered: dict[str, int], histograms: Iterable[LoopHistogram]) -> None:
        self._answered = answered
        self._histograms = list(histograms)

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "scorpion_requests", "requests answered, by type", labels=["type"]
        )
        for request_type, count in self._answered.items():
            requests.add_metric([request_type], count)
        yield requests
        for histogram in self._histograms:
            yield histogram.family()
