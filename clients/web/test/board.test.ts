import { describe, expect, it } from "vitest";
import { applyEvent, boardFrom, catchUp, holdClock, receive, scoreAt, timeAt } from "../src/board";
import type { Event, EventsPush } from "../src/wire";
import { view } from "./fixtures";

const SPADES = ["KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "4S", "3S", "2S", "AS"];

describe("applyEvent", () => {
  it("throws on an event that does not fit the board, and leaves the board alone", () => {
    const before = view();
    const misfits: Parameters<typeof applyEvent>[1][] = [
      { type: "moved", card: "7C", from: 7, to: 5, count: 8 },
      { type: "moved", card: "KH", from: 7, to: 5, count: 1 },
      { type: "moved", card: "2S", from: "reserve", to: 1, count: 1 },
      { type: "flipped", column: 1, card: "QS" },
      { type: "unflipped", column: 7 },
      { type: "suit_removed", suit: "S", column: 1, slot: 1 },
      { type: "suit_restored", suit: "S", column: 1, slot: 1 },
    ];
    for (const event of misfits) expect(() => applyEvent(before, event), JSON.stringify(event)).toThrow();
    expect(before).toEqual(view());
  });

  it("moves the top count cards, in order, and leaves the old view alone", () => {
    const before = view();
    const after = applyEvent(before, { type: "moved", card: "7C", from: 7, to: 5, count: 7 });
    expect(after.columns[6].cards).toEqual([]);
    expect(after.columns[4].cards.slice(-7)).toEqual(["7C", "QC", "JS", "QH", "4S", "8S", "6S"]);
    expect(before.columns[6].cards).toHaveLength(7);
  });

  it("moves only the named group off a longer column", () => {
    const after = applyEvent(view(), { type: "moved", card: "TH", from: 1, to: 3, count: 2 });
    expect(after.columns[0].cards).toEqual(["AS", "4H"]);
    expect(after.columns[2].cards).toEqual(["3C", "4D", "2C", "6C", "TH", "8D"]);
  });

  it("flips and unflips a column's top card", () => {
    const emptied = view({ columns: [{ down: 2, cards: [] }] });
    const flipped = applyEvent(emptied, { type: "flipped", column: 1, card: "QS" });
    expect(flipped.columns[0]).toEqual({ down: 1, cards: ["QS"] });
    expect(applyEvent(flipped, { type: "unflipped", column: 1 }).columns[0]).toEqual({ down: 2, cards: [] });
  });

  it("deals the stock onto columns 1..3 and takes it back", () => {
    const dealt = applyEvent(view(), { type: "dealt", cards: ["7D", "KC", "2S"] });
    expect(dealt.stock).toBe(0);
    expect(dealt.columns.slice(0, 3).map((c) => c.cards.at(-1))).toEqual(["7D", "KC", "2S"]);
    const undealt = applyEvent(dealt, { type: "undealt", count: 3 });
    expect(undealt.stock).toBe(3);
    expect(undealt.columns).toEqual(view().columns);
  });

  it("removes a suit to the foundations and restores it K..A", () => {
    const full = view({ columns: [{ down: 1, cards: ["9H", ...SPADES] }] });
    const removed = applyEvent(full, { type: "suit_removed", suit: "S", column: 1, slot: 1 });
    expect(removed.columns[0].cards).toEqual(["9H"]);
    expect(removed.foundations).toEqual(["S"]);
    const restored = applyEvent(removed, { type: "suit_restored", suit: "S", column: 1, slot: 1 });
    expect(restored).toEqual(full);
  });

  it("takes a card from the reserve and puts it back at its index", () => {
    const tbm = view({ level: "three-blind-mice", reserve: ["AS", "2S", "3S"], columns: [{ down: 0, cards: ["4S"] }] });
    const moved = applyEvent(tbm, { type: "moved", card: "2S", from: "reserve", to: 1, count: 1 });
    expect(moved.reserve).toEqual(["AS", "3S"]);
    expect(moved.columns[0].cards).toEqual(["4S", "2S"]);
    const back = applyEvent(moved, { type: "moved", card: "2S", from: 1, to: "reserve", count: 1, index: 2 });
    expect(back.reserve).toEqual(["AS", "2S", "3S"]);
    expect(back.columns[0].cards).toEqual(["4S"]);
  });

  it("restarts from the event's columns and empties the foundations", () => {
    const later = view({ foundations: ["H"], stock: 0, columns: [{ down: 0, cards: [] }] });
    const restarted = applyEvent(later, {
      type: "restarted",
      columns: view().columns,
      stock: 3,
      reserve: [],
    });
    expect(restarted.columns).toEqual(view().columns);
    expect([restarted.stock, restarted.foundations]).toEqual([3, []]);
  });

  it("takes score, counters and stuck from score; won and game_lost end it", () => {
    const scored = applyEvent(view(), {
      type: "score", score: 40, moves: 4, undos: 1, hints: 2, earned: 40, undo_depth: 3, stuck: true,
    });
    expect([scored.score, scored.moves, scored.undos, scored.hints, scored.earned, scored.undo_depth, scored.stuck])
      .toEqual([40, 4, 1, 2, 40, 3, true]);
    const won = applyEvent(scored, {
      type: "won", moves: 9, time_ms: 5000, score: 999, suits: 4, hints: 0, undos: 0, deal: 17,
    });
    expect([won.won, won.status, won.deal, won.score, won.time_ms]).toEqual([true, "won", 17, 999, 5000]);
    const lost = applyEvent(view({ deal: null }), { type: "game_lost", reason: "resigned", deal: 5 });
    expect([lost.status, lost.deal]).toEqual(["lost", 5]);
  });

  it("replaces the whole view on snapshot and ignores what it does not know", () => {
    const fresh = view({ moves: 12 });
    expect(applyEvent(view(), { type: "snapshot", view: fresh })).toEqual(fresh);
    const unknown = { type: "confetti" } as unknown as Parameters<typeof applyEvent>[1];
    expect(applyEvent(view(), unknown)).toEqual(view());
    expect(applyEvent(view(), { type: "hint", action: "deal" })).toEqual(view());
  });
});

describe("versions and the clock", () => {
  it("applies the next and the same version, ignores older, and calls a jump a gap", () => {
    const board = boardFrom(42, 3, view(), 0);
    const next = receive(board, { type: "events", game: 42, v: 4, events: [{ type: "deal" } as never] }, 0);
    expect(next.kind).toBe("applied");
    const clock = receive(board, { type: "events", game: 42, v: 3, events: [{ type: "clock", running: true, time_ms: 7 }] }, 100);
    expect(clock.kind === "applied" && [clock.board.view.running, clock.board.clockAt]).toEqual([true, 100]);
    expect(receive(board, { type: "events", game: 42, v: 2, events: [] }, 0).kind).toBe("old");
    expect(receive(board, { type: "events", game: 42, v: 5, events: [] }, 0).kind).toBe("gap");
    expect(receive(board, { type: "events", game: 41, v: 4, events: [] }, 0).kind).toBe("old");
    const snap = receive(board, { type: "events", game: 42, v: 9, events: [{ type: "snapshot", view: view({ moves: 5 }) }] }, 0);
    expect(snap.kind === "applied" && [snap.board.v, snap.board.view.moves]).toEqual([9, 5]);
  });

  it("refuses a push at the version it has that carries what only a new version carries (a repeat)", () => {
    const board = boardFrom(42, 3, view(), 0);
    const dealt: EventsPush = { type: "events", game: 42, v: 4, events: [{ type: "dealt", cards: ["2H", "3H", "5H"] }] };
    const once = receive(board, dealt, 0);
    expect(once.kind).toBe("applied");
    if (once.kind !== "applied") return;
    expect(() => receive(once.board, dealt, 0)).toThrow("version 4's events came again");
    const recorded: Event[] = [
      { type: "score", score: 1, moves: 1, undos: 0, hints: 0, earned: 1, undo_depth: 1, stuck: false },
      { type: "moved", card: "8D", from: 1, to: 2, count: 1 },
      { type: "hint", action: "deal" },
      { type: "game_lost", reason: "resigned", deal: 1 },
    ];
    for (const event of recorded) {
      expect(() => receive(board, { type: "events", game: 42, v: 3, events: [event] }, 0), event.type).toThrow();
    }
    const same = receive(board, { type: "events", game: 42, v: 3, events: [{ type: "lost_position", from_deal: false }] }, 0);
    expect(same.kind).toBe("applied");
  });

  it("catches up batch by batch, skipping versions it has, then takes the reply's clock", () => {
    const board = boardFrom(42, 1, view(), 0);
    const moved = { type: "moved", card: "7C", from: 7, to: 5, count: 7 } as const;
    const after = catchUp(
      board,
      {
        type: "catch_up", re: 1, game: 42, v: 2, time_ms: 5300, running: true,
        events: [{ v: 1, events: [moved] }, { v: 2, events: [moved] }],
      },
      50,
    );
    expect(after.v).toBe(2);
    expect(after.view.columns[4].cards).toHaveLength(14);
    expect([after.view.time_ms, after.view.running, after.clockAt]).toEqual([5300, true, 50]);
  });

  it("refuses a catch-up that skips a version or stops short of its own", () => {
    const board = boardFrom(42, 1, view(), 0);
    const score: Event = { type: "score", score: 0, moves: 0, undos: 0, hints: 1, earned: 0, undo_depth: 0, stuck: false };
    const reply = (v: number, versions: number[]) =>
      ({ type: "catch_up", re: 1, game: 42, v, time_ms: 0, running: true, events: versions.map((each) => ({ v: each, events: [score] })) }) as const;
    expect(() => catchUp(board, reply(3, [3]), 0)).toThrow("the catch-up skips from version 1 to 3");
    expect(() => catchUp(board, reply(3, [2]), 0)).toThrow("the catch-up stops at version 2, short of 3");
    expect(() => catchUp(board, reply(3, []), 0)).toThrow("short of 3");
    expect(catchUp(board, reply(3, [1, 2, 3]), 0).v).toBe(3);
    expect(catchUp(board, reply(1, []), 0).v).toBe(1);
  });

  it("ticks the play time while running and computes the timed score", () => {
    const board = boardFrom(1, 0, view({ time_ms: 29_000, running: true, earned: 100 }), 1000);
    expect(timeAt(board, 1000)).toBe(29_000);
    expect(scoreAt(board, 1000)).toBe(100);
    expect(timeAt(board, 3000)).toBe(31_000);
    expect(scoreAt(board, 3000)).toBe(70);
    expect(scoreAt(board, 1000 + 10 * 60_000)).toBe(0);
    const stopped = { ...board, view: { ...board.view, running: false } };
    expect(timeAt(stopped, 99_999)).toBe(29_000);
    const points = { ...board, view: { ...board.view, scoring: "points" as const } };
    expect(scoreAt(points, 999_999)).toBe(100);
    const won = { ...board, view: { ...board.view, status: "won" as const, score: 2652 } };
    expect(scoreAt(won, 999_999)).toBe(2652);
  });

  it("holds the clock still while the connection is lost, and takes the server's time again", () => {
    const board = boardFrom(42, 1, view({ time_ms: 29_000, running: true, earned: 100 }), 1000);
    const held = holdClock(board, 3000); // lost at 31 s of play
    expect(held.held).toBe(true);
    expect(timeAt(held, 3000)).toBe(31_000);
    expect(timeAt(held, 60_000)).toBe(31_000); // a minute offline counts nothing
    expect(scoreAt(held, 60_000)).toBe(70);
    expect(holdClock(held, 90_000)).toBe(held); // lost again before the resync: still the same time
    // the resync after reconnecting: the server's time, running from then on
    const back = catchUp(held, { type: "catch_up", re: 1, game: 42, v: 1, events: [], time_ms: 31_200, running: true }, 61_000);
    expect(back.held).toBe(false);
    expect(timeAt(back, 61_000)).toBe(31_200);
    expect(timeAt(back, 62_000)).toBe(32_200);
    // or a clock event of the server's, as a snapshot would be
    const clocked = receive(held, { type: "events", game: 42, v: 1, events: [{ type: "clock", running: true, time_ms: 31_100 }] }, 70_000);
    expect(clocked.kind === "applied" && [clocked.board.held, timeAt(clocked.board, 71_000)]).toEqual([false, 32_100]);
    // a clock already stopped (a paused game) is the server's own, not held
    const paused = boardFrom(42, 1, view({ time_ms: 5000, running: false }), 0);
    expect(holdClock(paused, 9000)).toBe(paused);
  });
});
