import { describe, expect, it } from "vitest";
import { checkServerMessage, ProtocolError } from "../src/checks";
import { view } from "./fixtures";

/** The problem `checkServerMessage` finds in `message` ("" when none). */
function problem(message: unknown): string {
  try {
    checkServerMessage(message);
    return "";
  } catch (error) {
    if (error instanceof ProtocolError) return error.message;
    throw error;
  }
}

const game = { type: "game", re: "a-1", game: 7, v: 0, view: view() };
const push = (events: unknown[], v: unknown = 1) => ({ type: "events", game: 7, v, events });

describe("checkServerMessage lets through", () => {
  it("what the server sends: a snapshot, events, an error, a welcome", () => {
    expect(problem(game)).toBe("");
    expect(problem(push([{ type: "moved", card: "8D", from: 1, to: 3, count: 1 }, { type: "flipped", column: 1, card: "QS" }]))).toBe("");
    expect(problem({ type: "error", re: "a-2", code: "stale", message: "stale", v: 3 })).toBe("");
    expect(problem({ type: "welcome", re: "a-3", server: "scorpion", protocol: 1, player: null, games: [] })).toBe("");
  });

  it("what a later server may add: fields, event types, message types, error codes", () => {
    expect(problem({ ...game, extra: [1, 2], view: { ...view(), paused: true } })).toBe("");
    expect(problem(push([{ type: "confetti", colours: 3 }]))).toBe("");
    expect(problem({ type: "news", text: 42 })).toBe("");
    expect(problem({ type: "error", code: "too_sunny", message: "later" })).toBe("");
  });
});

describe("checkServerMessage refuses, naming the field", () => {
  it("a wrong-typed field of a push", () => {
    expect(problem(push([], "2"))).toBe('events.v must be an integer in 0..2^53-1, got "2"');
    expect(problem(push([{ type: "score", score: 5, moves: 1, undos: 0, hints: 0, earned: "ten", undo_depth: 1, stuck: false }]))).toBe(
      'events.events[0].earned must be an integer in 0..2^53-1, got "ten"',
    );
    expect(problem(push([{ type: "clock", running: "yes", time_ms: 5 }]))).toBe("events.events[0].running must be a boolean, got \"yes\"");
  });

  it("a missing field, a value out of its set, a card that is no card", () => {
    const { stock: _, ...noStock } = view();
    expect(problem({ ...game, view: noStock })).toBe("game.view.stock is required");
    expect(problem({ ...game, view: view({ status: "paused" as "active" }) })).toBe('game.view.status must be one of "active", "won", "lost", got "paused"');
    expect(problem(push([{ type: "flipped", column: 1, card: "ZZ" }]))).toMatch(/^events\.events\[0\]\.card must be a string matching .*, got "ZZ"$/);
    expect(problem({ ...game, view: view({ deal: 1.5 }) })).toBe("game.view.deal must be an integer in 1..2^53-1 or nil, got 1.5");
  });

  it("what is wrong inside a map that may also be nil: the field, not that it is no map", () => {
    const welcome = (player: unknown) => ({ type: "welcome", re: "a-3", server: "scorpion", protocol: 1, player, games: [] });
    expect(problem(welcome({ id: 1, name: "x".repeat(160) }))).toMatch(/^welcome\.player\.name must be a string /);
    expect(problem(welcome({ id: 1 }))).toBe("welcome.player.name is required");
    expect(problem(welcome(7))).toMatch(/^welcome\.player must be .* or nil, got 7$/);
  });

  it("not a map, no type, an event that is not a map", () => {
    expect(problem([1, 2])).toBe("message must be a map, got an array");
    expect(problem({ re: "a-1" })).toBe("type must be a string, got nil");
    expect(problem(push([7]))).toBe("events.events[0] must be a map, got 7");
    expect(problem(push([{ type: 3 }]))).toBe("events.events[0].type must be a string, got 3");
    expect(problem({ ...game, view: [] })).toBe("game.view must be a map, got an array");
  });

  it("a count that is no count: negative, fractional, not a number", () => {
    const column = (down: unknown) => ({ ...game, view: { ...view(), columns: [{ down, cards: [] }] } });
    expect(problem(column(-1))).toBe("game.view.columns[0].down must be an integer in 0..2^53-1, got -1");
    expect(problem(column(2.5))).toBe("game.view.columns[0].down must be an integer in 0..2^53-1, got 2.5");
    expect(problem(column(NaN))).toBe("game.view.columns[0].down must be an integer in 0..2^53-1, got NaN");
    expect(problem(column(true))).toBe("game.view.columns[0].down must be an integer in 0..2^53-1, got a boolean");
  });
});

describe("checkServerMessage bounds the counts the page draws and loops over", () => {
  const columns = (...each: [number, number][]) => each.map(([down, up]) => ({ down, cards: Array(up).fill("AS") }));
  const snapshot = (table: object) => push([{ type: "snapshot", view: { ...view(), ...table } }]);

  it("a column's face-down count", () => {
    expect(problem({ ...game, view: view({ columns: columns([1e9, 0]) }) })).toBe(
      "game.view.columns[0].down must be an integer in 0..104, got 1000000000",
    );
    expect(problem(snapshot({ columns: columns([0, 4], [1e9, 1]) }))).toBe(
      "events.events[0].view.columns[1].down must be an integer in 0..104, got 1000000000",
    );
    expect(problem(snapshot({ columns: columns([100, 5]), stock: 0 }))).toBe(
      "events.events[0].view.columns[0] holds 105 cards; a column holds at most 104",
    );
  });

  it("the cards on a table, and its columns", () => {
    expect(problem(snapshot({ stock: 1e9 }))).toBe("events.events[0].view.stock must be an integer in 0..104, got 1000000000");
    expect(problem(snapshot({ columns: columns(...Array(7).fill([5, 10])), stock: 0, reserve: ["AS"] }))).toBe(
      "events.events[0].view has 106 cards in play; a game has at most 104",
    );
    expect(problem(snapshot({ columns: columns(...Array(105).fill([0, 0])), stock: 0 }))).toBe(
      "events.events[0].view.columns has 105 columns; a table has at most 104",
    );
    expect(problem(push([{ type: "restarted", columns: columns([3, 4]), stock: 200, reserve: [] }]))).toBe(
      "events.events[0].stock must be an integer in 0..104, got 200",
    );
    expect(problem(push([{ type: "restarted", columns: columns([60, 0], [0, 60]), stock: 0, reserve: [] }]))).toBe(
      "events.events[0] has 120 cards in play; a game has at most 104",
    );
  });

  it("the cards a move or an undone deal moves", () => {
    expect(problem(push([{ type: "moved", card: "8D", from: 1, to: 3, count: 105 }]))).toBe(
      "events.events[0].count must be an integer in 1..104, got 105",
    );
    expect(problem(push([{ type: "undealt", count: 1e9 }]))).toBe("events.events[0].count must be an integer in 0..104, got 1000000000");
  });

  it("lets through a table of 104 cards, two packs", () => {
    expect(problem(snapshot({ columns: columns(...Array(7).fill([5, 9]), [0, 3]), stock: 3, reserve: [] }))).toBe("");
    expect(problem(snapshot({ columns: columns([52, 52]), stock: 0, reserve: [] }))).toBe("");
  });
});
