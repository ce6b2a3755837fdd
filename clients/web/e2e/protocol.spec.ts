// What the server sends is checked where it enters the page: a message that
// breaks the protocol is dropped and said once, and the game is resynced.
import { decode, encode } from "@msgpack/msgpack";
import type { Page } from "@playwright/test";
import { knownDeal } from "./server";
import { atVersion, expect, register, startGame, tap, test, uniqueName, version } from "./fixtures";

type Message = Record<string, unknown>;

interface Relay {
  /** What the page sent, in order. */
  sent: Message[];
  /** Sends `message` to the page as if the server had. */
  inject: (message: Message) => void;
}

/**
 * Puts the test between the page and the real server: `change` sees each
 * server message and returns what the page gets instead (null: nothing, for now).
 */
async function relay(page: Page, change: (message: Message) => Message | null): Promise<Relay> {
  const found: Relay = { sent: [], inject: () => {} };
  await page.routeWebSocket(/.*/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((frame) => {
      found.sent.push(decode(frame as Buffer) as Message);
      server.send(frame);
    });
    server.onMessage((frame) => {
      const message = change(decode(frame as Buffer) as Message);
      if (message) ws.send(Buffer.from(encode(message)));
    });
    found.inject = (message) => ws.send(Buffer.from(encode(message)));
  });
  return found;
}

/** Counts the console's protocol errors, which the test expects (the fixture fails on any other). */
function protocolErrors(page: Page, allow: RegExp[]): string[] {
  const said: string[] = [];
  allow.push(/protocol error: /);
  page.on("console", (message) => {
    if (message.type() === "error" && message.text().startsWith("protocol error: ")) said.push(message.text());
  });
  return said;
}

test("a push with a wrong-typed field is dropped, said once, and the game resynced", async ({ page, server, watch }) => {
  const said = protocolErrors(page, watch.allow);
  let held: Message | null = null;
  const wire = await relay(page, (message) => {
    if (message.type === "events" && message.v === 1) {
      const events = message.events as Message[];
      return { ...message, events: events.map((event) => (event.type === "score" ? { ...event, earned: "ten" } : event)) };
    }
    const resync = wire.sent.find((each) => each.type === "open_game" && each.since === 0);
    if (resync && message.re === resync.id) {
      held = message; // the resync's answer waits until the page is looked at
      return null;
    }
    return message;
  });
  await register(page, server.url, uniqueName("typed"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD");

  await expect(page.locator(".toast.error")).toContainText(/events\.events\[\d+\]\.earned must be an integer in 0\.\.2\^53-1, got "ten"/);
  expect(await version(page)).toBe(0);
  await expect(page.locator(".status .moves")).toHaveText("0");
  await expect(page.locator(".status .score")).toHaveText(/^\d+$/);
  await expect.poll(() => wire.sent.some((each) => each.type === "open_game" && each.since === 0)).toBe(true);
  await expect.poll(() => held !== null).toBe(true); // its answer is in, not just the request out

  wire.inject(held as unknown as Message);
  await atVersion(page, 1);
  await expect(page.locator('.column[data-column="7"] .card.up[data-card="QD"]')).toBeVisible();
  await expect(page.locator(".status .moves")).toHaveText("1");
  await expect(page.locator(".status .score")).toHaveText(/^\d+$/);
  expect(said).toHaveLength(1);
});

test("a push that does not fit the board is left unapplied, and the game resynced", async ({ page, server, watch }) => {
  const said = protocolErrors(page, watch.allow);
  const wire = await relay(page, (message) => {
    if (message.type !== "events" || message.v !== 1) return message;
    const events = message.events as Message[];
    return { ...message, events: events.map((event) => (event.type === "moved" ? { ...event, from: 9 } : event)) };
  });
  await register(page, server.url, uniqueName("fit"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD");

  await expect(page.locator(".toast.error")).toContainText("events cannot be applied: the view has no column 9");
  await expect.poll(() => wire.sent.some((each) => each.type === "open_game" && each.since === 0)).toBe(true);
  await atVersion(page, 1); // from the resync
  await expect(page.locator('.column[data-column="7"] .card.up[data-card="QD"]')).toBeVisible();
  expect(said).toHaveLength(1);
});

test("a snapshot with a column of a billion face-down cards is refused, and the page goes on", async ({ page, server, watch }) => {
  const said = protocolErrors(page, watch.allow);
  let dealt: Message | null = null;
  const wire = await relay(page, (message) => {
    if (message.type === "game") dealt = message;
    return message;
  });
  await register(page, server.url, uniqueName("huge"));
  await startGame(page, "medium", knownDeal());
  const game = dealt as unknown as { game: number; view: { columns: { down: number; cards: string[] }[] } };
  const columns = game.view.columns.map((column, i) => (i === 0 ? { ...column, down: 1e9 } : column));
  wire.inject({ type: "events", game: game.game, v: 1, events: [{ type: "snapshot", view: { ...game.view, columns } }] });

  await expect(page.locator(".toast.error")).toContainText(
    "events.events[0].view.columns[0].down must be an integer in 0..104, got 1000000000",
  );
  await expect.poll(() => wire.sent.some((each) => each.type === "open_game" && each.since === 0)).toBe(true);
  expect(await version(page)).toBe(0);
  expect(await page.locator('.column[data-column="1"] .card.down').count()).toBe(game.view.columns[0].down);
  await tap(page, "QD");
  await atVersion(page, 1);
  expect(said).toHaveLength(1);
});

test("statistics and past games the server refuses are said where they would be, not left blank", async ({ page, server }) => {
  // the results' statistics were left out without a word, and the list of past games
  // showed its heading alone once the refusal's notice had gone
  const wire = await relay(page, (message) => {
    const asked = wire.sent.find((each) => each.id === message.re);
    const refused = (asked?.type === "stats" && asked.level !== undefined) || (asked?.type === "games" && asked.status === undefined);
    return refused ? { type: "error", re: message.re, code: "unavailable", message: "The database is unavailable." } : message;
  });
  await register(page, server.url, uniqueName("refused"));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results .level-stats p.unread")).toBeVisible();
  await expect(page.locator("main.results .level-stats dl.stats")).toHaveCount(0);
  await page.locator("header nav button", { hasText: "Past games" }).click();
  await expect(page.locator("main.history p.unread")).toBeVisible();
  await page.waitForTimeout(6000); // longer than a notice is shown: the panel still says it
  await expect(page.locator("main.history p.unread")).toBeVisible();
});
