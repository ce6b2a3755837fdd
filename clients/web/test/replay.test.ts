import { describe, expect, it } from "vitest";
import { applyEvent } from "../src/board";
import { movedCard, replaySteps, rewind } from "../src/replay";
import type { Event, EventBatch, View } from "../src/wire";
import { view as deal } from "./fixtures";

function score(moves: number, undos = 0): Event {
  return { type: "score", score: 0, moves, undos, hints: 0, earned: 0, undo_depth: moves - undos, stuck: false };
}

function batches(...lists: Event[][]): EventBatch[] {
  return lists.map((events, i) => ({ v: i + 1, events }));
}

/** The final view a server would hold after `history` from `start`, finished by resigning. */
function played(start: View, history: EventBatch[]): View {
  const end = history.flatMap((batch) => batch.events).reduce(applyEvent, start);
  return { ...end, status: "lost", time_ms: 61_000 };
}

const resigned: Event = { type: "game_lost", reason: "resigned", deal: 1 };

describe("replaySteps", () => {
  // a move that turns a card up, its undo, the move again, a deal, its undo, the deal again
  const history = batches(
    [{ type: "moved", card: "4H", from: 1, to: 5, count: 3 }, score(1)],
    [{ type: "moved", card: "AS", from: 1, to: 7, count: 1 }, { type: "flipped", column: 1, card: "KH" }, score(2)],
    [{ type: "undone", action: "move" }, { type: "unflipped", column: 1 }, { type: "moved", card: "AS", from: 7, to: 1, count: 1 }, score(2, 1)],
    [{ type: "moved", card: "AS", from: 1, to: 7, count: 1 }, { type: "flipped", column: 1, card: "KH" }, score(3, 1)],
    [{ type: "dealt", cards: ["2S", "3H", "9C"] }, score(4, 1)],
    [{ type: "undone", action: "deal" }, { type: "undealt", count: 3 }, score(4, 2)],
    [{ type: "dealt", cards: ["2S", "3H", "9C"] }, score(5, 2)],
    [resigned],
  );
  const final = played(deal(), history);

  it("starts from the deal, taking every event back from the final view", () => {
    expect(rewind(final, history)).toEqual({ ...deal(), status: "active", time_ms: 0 });
  });

  it("gives one board per version, each the view after that version's events", () => {
    const steps = replaySteps(final, history);
    expect(steps).not.toBeNull();
    if (!steps) return;
    expect(steps).toHaveLength(history.length + 1);
    expect(steps[0].columns[0]).toEqual({ down: 3, cards: ["AS", "4H", "TH", "8D"] });
    // step 1: 4H with TH and 8D on it went onto column 5
    expect(steps[1].columns[0]).toEqual({ down: 3, cards: ["AS"] });
    expect(steps[1].columns[4].cards.slice(-3)).toEqual(["4H", "TH", "8D"]);
    expect(steps[1].moves).toBe(1);
    // step 2 turned KH up, step 3 (the undo) turned it down again
    expect(steps[2].columns[0]).toEqual({ down: 2, cards: ["KH"] });
    expect(steps[3].columns[0]).toEqual({ down: 3, cards: ["AS"] });
    expect(steps[5].stock).toBe(0);
    expect(steps[5].columns[2].cards.at(-1)).toBe("9C");
    expect(steps[6].stock).toBe(3);
    expect(steps[6].columns[2].cards.at(-1)).toBe("6C");
    const last = steps[steps.length - 1];
    expect(last.columns).toEqual(final.columns);
    expect(last.status).toBe("lost");
  });

  it("stepping leaves the earlier boards as they were", () => {
    const steps = replaySteps(final, history);
    expect(steps?.[0]).toEqual(rewind(final, history));
    expect(steps?.[1].columns[4].cards).toHaveLength(10);
    expect(steps?.[0].columns[4].cards).toHaveLength(7);
  });

  it("takes a removed suit back to its column, and a restored one back to its foundation", () => {
    const suit = ["KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "4S", "3S", "2S", "AS"];
    const start = deal({ columns: [{ down: 1, cards: suit }, { down: 0, cards: ["KD"] }], stock: 0 });
    const suits = batches(
      [{ type: "suit_removed", column: 1, suit: "S", slot: 1 }, { type: "flipped", column: 1, card: "9H" }, score(1)],
      [{ type: "undone", action: "move" }, { type: "unflipped", column: 1 }, { type: "suit_restored", column: 1, suit: "S", slot: 1 }, score(1, 1)],
      [{ type: "suit_removed", column: 1, suit: "S", slot: 1 }, { type: "flipped", column: 1, card: "9H" }, score(2, 1)],
      [resigned],
    );
    const end = played(start, suits);
    expect(end.foundations).toEqual(["S"]);
    const steps = replaySteps(end, suits);
    expect(steps?.[0].columns[0]).toEqual({ down: 1, cards: suit });
    expect(steps?.[0].foundations).toEqual([]);
    expect(steps?.[1].columns[0]).toEqual({ down: 0, cards: ["9H"] });
    expect(steps?.[2].columns[0].cards).toEqual(suit);
  });

  it("puts a reserve card back where an undo says it lay, and one never taken back at the end", () => {
    const start = deal({
      level: "three-blind-mice",
      columns: [{ down: 0, cards: ["5C"] }, { down: 0, cards: ["5D"] }, { down: 0, cards: ["TH"] }],
      stock: 0,
      reserve: ["4D", "9H"],
    });
    const reserve = batches(
      [{ type: "moved", card: "4D", from: "reserve", to: 2, count: 1 }, score(1)],
      [{ type: "undone", action: "move" }, { type: "moved", card: "4D", from: 2, to: "reserve", count: 1, index: 1 }, score(1, 1)],
      [{ type: "moved", card: "9H", from: "reserve", to: 3, count: 1 }, score(2, 1)],
      [resigned],
    );
    const end = played(start, reserve);
    expect(end.reserve).toEqual(["4D"]);
    const steps = replaySteps(end, reserve);
    expect(steps?.[0].reserve).toEqual(["4D", "9H"]);
    expect(steps?.[1].reserve).toEqual(["9H"]);
    expect(steps?.[1].columns[1].cards).toEqual(["5D", "4D"]);
    expect(steps?.[3].columns[2].cards).toEqual(["TH", "9H"]);
  });

  it("starts a history with a restart from the deal the restart puts back", () => {
    const start = deal();
    const withRestart = batches(
      [{ type: "moved", card: "AS", from: 1, to: 7, count: 4 }, { type: "flipped", column: 1, card: "KH" }, score(1)],
      [{ type: "restarted", columns: start.columns, stock: 3, reserve: [] }, score(1)],
      [{ type: "moved", card: "8D", from: 1, to: 6, count: 1 }, score(2)],
      [resigned],
    );
    const end = played(start, withRestart);
    const steps = replaySteps(end, withRestart);
    expect(steps?.[0].columns).toEqual(start.columns);
    expect(steps?.[1].columns[0]).toEqual({ down: 2, cards: ["KH"] });
    expect(steps?.[2].columns).toEqual(start.columns);
    expect(steps?.[3].columns[5].cards.at(-1)).toBe("8D");
  });

  it("gives no steps when the history does not lead to the final view", () => {
    // column 7 does not end with AS, which the history put there last
    const other = { ...final, columns: final.columns.map((column, i) => (i === 6 ? { down: 0, cards: ["KC"] } : column)) };
    expect(replaySteps(other, history)).toBeNull();
    const noSuit: View = { ...final, foundations: ["H"] };
    expect(replaySteps(noSuit, history)).toBeNull();
    expect(replaySteps({ ...final, status: "active" }, history)).toBeNull(); // an unfinished game has no replay
    expect(replaySteps(final, history.slice(1))).toBeNull(); // versions must start at 1
  });

  it("gives no steps for a history it cannot take back, instead of throwing", () => {
    const broken = batches([{ type: "unflipped", column: 1 }], [resigned]);
    // the view such a history would end on: column 1 turned down whole
    const start = deal();
    const turned = start.columns.map((c, i) => (i === 0 ? { down: c.down + 1, cards: [] } : c));
    const final: View = { ...start, columns: turned, status: "lost", time_ms: 61_000, deal: 1 };
    expect(replaySteps(final, broken)).toBeNull();
  });
});

describe("movedCard", () => {
  it("names the card a step moved, and none for a deal", () => {
    expect(movedCard({ v: 1, events: [{ type: "moved", card: "4H", from: 1, to: 5, count: 3 }, score(1)] })).toBe("4H");
    expect(movedCard({ v: 2, events: [{ type: "dealt", cards: ["2S", "3H", "9C"] }] })).toBeUndefined();
    expect(movedCard(undefined)).toBeUndefined();
  });
});
