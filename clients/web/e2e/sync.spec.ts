// Two tabs of one player, a reload that continues the game, and a server restart mid-game.
import { readFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { decode, encode } from "@msgpack/msgpack";
import type { BrowserContext, Page } from "@playwright/test";
import { join } from "node:path";
import { STRINGS } from "../src/i18n";
import { knownDeal, ROOT, TestServer } from "./server";
import { atVersion, boxOf, drag, expect, register, startGame, still, tap, test, uniqueName, watch, type Watch } from "./fixtures";

test("two tabs of one player stay in sync, and a reload continues the game", async ({ page, context, server }) => {
  await register(page, server.url, uniqueName("tabs"));
  await startGame(page, "medium", knownDeal());
  const other = await context.newPage();
  const otherWatch: Watch = { problems: [], allow: [] };
  watch(other, otherWatch);
  await other.goto(server.url); // the token is shared: the unfinished game opens
  await expect(other.locator("main.game")).toBeVisible();
  await atVersion(other, 0);

  await tap(page, "QD");
  await atVersion(other, 1);
  await expect(other.locator('.column[data-column="7"] .card.up[data-card="QD"]')).toBeVisible();

  await drag(other, "9D", 1);
  await atVersion(page, 2);
  await expect(page.locator('.column[data-column="1"] .card.up[data-card="9D"]')).toBeVisible();

  await page.locator('.tools [data-action="pause"]').click();
  await expect(other.locator(".paused")).toBeVisible();
  await other.locator('[data-action="resume-big"]').click();
  await expect(page.locator(".table")).toBeVisible();

  await other.reload();
  await atVersion(other, 2);
  await expect(other.locator('.column[data-column="1"] .card.up[data-card="9D"]')).toBeVisible();
  expect(otherWatch.problems).toEqual([]);
});

test("the page resumes after a server restart with the same board, and undo works", async ({ page, watch }) => {
  const server = new TestServer();
  await server.start();
  try {
    await register(page, server.url, uniqueName("back"));
    await startGame(page, "medium", knownDeal());
    await tap(page, "QD");
    await atVersion(page, 1);
    await drag(page, "9D", 1);
    await atVersion(page, 2);
    const before = await page.locator(".columns").innerHTML();

    // the browser notes each refused connection while the server is down
    watch.allow.push(/WebSocket connection to .* failed/);
    await server.restart();
    await expect(page.locator(".toast.offline")).toHaveCount(0, { timeout: 20_000 });
    await atVersion(page, 2);
    expect(await page.locator(".columns").innerHTML()).toBe(before);

    await page.locator('.tools [data-action="undo"]').click();
    await atVersion(page, 3);
    await expect(page.locator('.column[data-column="1"] .card.up[data-card="9D"]')).toHaveCount(0);
  } finally {
    await server.dispose();
  }
});

test("a page left alone stays connected to a server whose idle timeout is short", async ({ page, watch }) => {
  // The page pinged after a minute whatever the server's idle timeout: one of 4 s
  // closed its connection every 4 s, and a move then waited for the reconnect.
  const server = new TestServer({ idleTimeoutMs: 4000 });
  await server.start();
  try {
    watch.allow.push(/WebSocket connection to .* failed/); // the server stopped at the end, the page still open
    let sockets = 0;
    page.on("websocket", () => sockets++);
    await register(page, server.url, uniqueName("idle"));
    await startGame(page, "medium", knownDeal());
    await page.waitForTimeout(10_000); // two and a half idle timeouts, nothing played
    expect(sockets).toBe(1);
    await tap(page, "QD");
    await atVersion(page, 1);
  } finally {
    await server.dispose();
  }
});

test("a second device signs in with the token and continues the game", async ({ page, browser, server }) => {
  const name = uniqueName("two");
  await register(page, server.url, name);
  await page.locator("details.token-box summary").click();
  const token = (await page.locator("code.token").textContent()) ?? "";
  expect(token.length).toBeGreaterThan(8);
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD");
  await atVersion(page, 1);

  const phone = await browser.newContext({ viewport: { width: 360, height: 740 } });
  const other = await phone.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(other, found);
  await other.goto(server.url);
  await other.locator("details.other-device summary").click();
  await other.locator("#token").fill("not-a-token");
  await other.locator("form.token button").click();
  // refused as unauthenticated: said as the token typed, not one this device kept, and not kept
  await expect(other.locator("p.error")).toHaveText(STRINGS.en.badTypedToken);
  expect(await other.evaluate(() => localStorage.getItem("scorpion.token"))).toBeNull();
  await expect(other.locator("#token")).toHaveValue("not-a-token"); // still open, as typed
  await other.locator("#token").fill(token);
  await other.locator("form.token button").click();
  await expect(other.locator("main.game")).toBeVisible();
  expect(await other.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);
  await expect(other.locator(".who")).toHaveText(name);
  await atVersion(other, 1);
  await expect(other.locator('.column[data-column="7"] .card.up[data-card="QD"]')).toBeVisible();
  expect(found.problems).toEqual([]);
  await phone.close();
});

test("signing out forgets the token on every tab of the browser", async ({ page, context, server }) => {
  await register(page, server.url, uniqueName("out"));
  const other = await context.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(other, found);
  await other.goto(server.url);
  await expect(other.locator("main.lobby")).toBeVisible();

  await startGame(other, "medium", knownDeal()); // the other tab plays

  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="sign-out"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect(page.locator("form.register")).toBeVisible();
  await page.reload();
  await expect(page.locator("form.register")).toBeVisible();

  // the other tab follows at once, saying why: signed out, its game gone from the page
  await expect(other.locator("form.register")).toBeVisible();
  await expect(other.locator("main.game")).toHaveCount(0);
  await expect(other.locator("p.error")).toHaveText("You signed out in another tab of this browser.");
  await expect(other.locator("header .who")).toHaveText("");
  // and its next page load has no token
  await other.reload();
  await expect(other.locator("form.register")).toBeVisible();
  expect(found.problems).toEqual([]);
});

test("signing out on this device asks first, showing the token without which the page cannot sign in again", async ({ page, context, server }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const name = uniqueName("keep");
  await register(page, server.url, name);
  const token = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="sign-out"]').click();
  const dialog = page.locator(".dialog");
  await expect(dialog).toContainText(`this browser cannot sign in as ${name} again`);
  await expect(dialog.locator("code.token")).toHaveText(token ?? "");
  await expect(page.locator('[data-action="confirm-no"]')).toBeFocused(); // not signed out by Enter
  await page.locator('[data-action="confirm-no"]').click();
  await expect(dialog).toHaveCount(0);
  await expect(page.locator("main.lobby")).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);

  // the token copied, then signed out
  await page.locator('[data-action="sign-out"]').click();
  await page.locator('[data-action="copy-token"]').click();
  await expect(page.locator('[data-action="copy-token"]')).toHaveText(STRINGS.en.tokenCopied);
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
  await page.locator('[data-action="confirm-yes"]').click();
  await expect(page.locator("form.register")).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBeNull();

  // the token kept signs the page in again as the player
  await page.locator('[data-action="other-device"]').click();
  await page.locator("#token").fill(token ?? "");
  await page.locator('[data-action="sign-in"]').click();
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(page.locator("header .who")).toHaveText(name);
});

/** `name` registered and playing in `page`, and a second tab of the browser on the game; the token kept. */
async function playingInTwoTabs(page: Page, context: BrowserContext, url: string, name: string) {
  await register(page, url, name);
  await startGame(page, "medium", knownDeal());
  const token = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  const other = await context.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(other, found);
  await other.goto(url);
  await expect(other.locator("main.game")).toBeVisible();
  return { token, other, found };
}

test("storage cleared in another tab is no sign-out: the tab keeps its token and writes it back", async ({ page, context, server }) => {
  const name = uniqueName("clear");
  const { token, other, found } = await playingInTwoTabs(page, context, server.url, name);

  await other.evaluate(() => localStorage.clear()); // as a script, or "clear site data" in one tab, does
  await expect.poll(() => page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);
  await expect(page.locator("main.game")).toBeVisible();
  await expect(page.locator("p.error")).toHaveCount(0);
  await tap(page, "QD");
  await atVersion(page, 1);
  // the tab that cleared it finds the token again: its next load is the player's
  await other.reload();
  await expect(other.locator("main.game")).toBeVisible();
  await expect(other.locator("header .who")).toHaveText(name);
  await atVersion(other, 1);
  expect(found.problems).toEqual([]);
});

/**
 * The page's sockets pass through to the server, but for the first hello that carries the token
 * `armed()` names, answered `rate_limited` as the address's refused tokens past their rate are.
 */
async function limitOneHello(page: Page, armed: () => string | null): Promise<void> {
  let limited = false;
  await page.routeWebSocket(/.*/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      const token = armed();
      if (!limited && token !== null && message.type === "hello" && message.token === token) {
        limited = true;
        const refusal = { type: "error", re: message.id, code: "rate_limited", message: "Too many requests.", retry_after_ms: 300 };
        ws.send(Buffer.from(encode(refusal)));
        return;
      }
      server.send(frame);
    });
  });
}

for (const [kind, written, limit] of [
  ["no player's", "Z".repeat(43), false],
  ["too long to be one", "Z".repeat(200), false],
  ["no player's, the hello going back limited at first", "Z".repeat(43), true],
] as const) {
  test(`a token another tab keeps that the server refuses (${kind}): the tab goes back to the token it held, and keeps it`, async ({ page, context, server }) => {
    // one too long to be a token was forgotten by the first tab to read it: the other tabs
    // took that for a sign-out; a hello going back limited lost the token it went back to
    let armed: string | null = null;
    if (limit) await limitOneHello(page, () => armed);
    const name = uniqueName("corrupt");
    const { token, other, found } = await playingInTwoTabs(page, context, server.url, name);
    armed = token;

    await other.evaluate((value) => localStorage.setItem("scorpion.token", value), written);
    await expect.poll(() => page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);
    await page.waitForTimeout(limit ? 1500 : 500); // time for the tabs to settle
    await expect(page.locator("main.game")).toBeVisible();
    await expect(page.locator("header .who")).toHaveText(name);
    await expect(other.locator("header .who")).toHaveText(name);
    await tap(page, "QD");
    await atVersion(page, 1);
    await atVersion(other, 1);
    await other.reload();
    await expect(other.locator("header .who")).toHaveText(name);
    expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);
    expect(found.problems).toEqual([]);
  });
}

test("the sign-out question shows the token the page holds now, not one another tab replaced", async ({ page, context, server }) => {
  // opened, then another tab asked for a new sign-in token: the question showed, and copied,
  // the old one, which no longer signs in
  const name = uniqueName("stale");
  await register(page, server.url, name);
  const old = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  const other = await context.newPage();
  await other.goto(server.url);
  await expect(other.locator("main.lobby")).toBeVisible();
  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="sign-out"]').click();
  await expect(page.locator(".dialog code.token")).toHaveText(old ?? "");

  await other.locator("details.token-box summary").click();
  await other.locator('[data-action="new-token"]').click();
  await other.locator('[data-action="confirm-yes"]').click();
  await expect.poll(() => other.evaluate(() => localStorage.getItem("scorpion.token"))).not.toBe(old);
  const fresh = await other.evaluate(() => localStorage.getItem("scorpion.token"));
  await expect(page.locator(".dialog code.token")).toHaveText(fresh ?? "");
});

test("a tab on the sign-in page follows a sign-in in another tab of the browser", async ({ page, context, server }) => {
  // the sign-in page, open in one tab while another signs in: registering a second name
  // there replaced the token the other tab had stored, and its player was lost to the browser
  await page.goto(server.url);
  await expect(page.locator("form.register")).toBeVisible();
  const other = await context.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(other, found);
  const name = uniqueName("first");
  await register(other, server.url, name);

  // the first tab is signed in as that player too: its lobby, no sign-in page left
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(page.locator("header .who")).toContainText(name);
  await expect(page.locator("form.register")).toHaveCount(0);
  await startGame(other, "medium", knownDeal());
  await page.reload(); // and its next load opens that player's game
  await expect(page.locator("main.game")).toBeVisible();
  await expect(page.locator("header .who")).toContainText(name);
  expect(found.problems).toEqual([]);
});

test("a new game asks first when another tab has started a game meanwhile", async ({ page, context, server }) => {
  await register(page, server.url, uniqueName("meanwhile"));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results")).toBeVisible();

  const other = await context.newPage();
  const otherWatch: Watch = { problems: [], allow: [] };
  watch(other, otherWatch);
  await other.goto(server.url);
  await startGame(other, "hard");
  const started = await other.locator("main.game").getAttribute("data-game");

  // the first tab still shows its results: a new game there would abandon the other tab's
  await page.locator('.results [data-action="new"]').click();
  await expect(page.locator(".dialog")).toBeVisible();
  await page.locator(".dialog .no").click();
  await page.locator("header nav button", { hasText: "Levels" }).click();
  await expect(page.locator('[data-action="continue"]')).toBeVisible();
  await page.locator('[data-action="play"]').click();
  await expect(page.locator(".dialog")).toBeVisible();
  await page.locator(".dialog .no").click();
  await expect(other.locator("main.game")).toHaveAttribute("data-game", started ?? "");
  await expect(other.locator("main.results")).toHaveCount(0);
  expect(otherWatch.problems).toEqual([]);
});

test("continuing a game another tab has ended since shows its results", async ({ page, context, server }) => {
  await register(page, server.url, uniqueName("ended"));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="menu"]').click();
  await expect(page.locator('[data-action="continue"]')).toBeVisible();

  const other = await context.newPage();
  await other.goto(server.url);
  await expect(other.locator("main.game")).toBeVisible();
  await other.locator('.tools [data-action="resign"]').click();
  await other.locator(".dialog .yes").click();
  await expect(other.locator("main.results")).toBeVisible();

  await page.locator('[data-action="continue"]').click();
  await expect(page.locator("main.results.lost")).toBeVisible();
  await page.locator("header nav button", { hasText: "Levels" }).click();
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(page.locator('[data-action="continue"]')).toHaveCount(0);
});

test("a name pressed while the server is down is said as waiting, and registered once it is back", async ({ page, watch }) => {
  const server = new TestServer();
  await server.start();
  try {
    await page.goto(server.url);
    await expect(page.locator("main.signin")).toBeVisible();
    // the browser notes each refused connection while the server is down
    watch.allow.push(/WebSocket connection to .* failed/);
    await server.stop();
    // the sign-in page says the connection is lost, as a game does
    await expect(page.locator(".toast.offline")).toHaveText("Connection lost: reconnecting…");
    const name = uniqueName("down");
    await page.locator("#name").fill(name);
    await page.locator("form.register button[type=submit]").click();
    await expect(page.locator("main.signin p.error")).toHaveText(
      "The server cannot be reached: trying again. You will be signed up as soon as it answers.",
    );
    await page.waitForTimeout(1000);
    await expect(page.locator("main.signin p.error")).toBeVisible(); // still waiting, still said
    await server.start();
    // registered without pressing again
    await expect(page.locator("main.lobby")).toBeVisible({ timeout: 20_000 });
    await expect(page.locator("header .who")).toHaveText(name);
    await expect(page.locator(".toast.offline")).toHaveCount(0);
    await expect(page.locator("p.error")).toHaveCount(0);
  } finally {
    await server.dispose();
  }
});

test("statistics cut off by a dropped connection are said as such, and read again once it is back", async ({ page, watch }) => {
  // the table the page had at sign-in stayed on show as the player's statistics, a loss short
  const server = new TestServer();
  await server.start();
  try {
    await register(page, server.url, uniqueName("stale"));
    await startGame(page, "medium", knownDeal());
    await page.locator('.tools [data-action="resign"]').click();
    await page.locator(".dialog .yes").click();
    await expect(page.locator("main.results")).toBeVisible();
    watch.allow.push(/WebSocket connection to .* failed/);
    await server.stop();
    await expect(page.locator(".toast.offline")).toBeVisible();
    await page.locator("header nav button", { hasText: "Statistics" }).click();
    await expect(page.locator("main.stats-page p.unread")).toHaveText(
      "Not loaded: the connection dropped. It is asked for again once the server answers.",
    );
    await expect(page.locator("main.stats-page table")).toHaveCount(0); // no older table instead
    await server.start();
    const medium = page.locator('main.stats-page tr[data-level="medium"][data-winnable="false"] td');
    await expect(medium.nth(2)).toHaveText("1", { timeout: 20_000 }); // losses: the resigned game
    await expect(page.locator("main.stats-page p.unread")).toHaveCount(0);
  } finally {
    await server.dispose();
  }
});

test("an action while the connection is lost is refused and said, and nothing is sent once it is back", async ({ page, watch }) => {
  const server = new TestServer();
  await server.start();
  try {
    await register(page, server.url, uniqueName("offline"));
    await startGame(page, "medium", knownDeal());
    await tap(page, "QD");
    await atVersion(page, 1);
    const before = await page.locator(".columns").innerHTML();
    const deal = page.locator('.tools [data-action="deal"]');
    const undo = page.locator('.tools [data-action="undo"]');
    await expect(undo).toBeEnabled();

    // the browser notes each refused connection while the server is down
    watch.allow.push(/WebSocket connection to .* failed/);
    await server.stop();
    await expect(page.locator(".toast.offline")).toHaveText(STRINGS.en.reconnecting);
    // the action buttons wait for the connection
    await expect(deal).toBeDisabled();
    await expect(undo).toBeDisabled();
    await expect(page.locator('.tools [data-action="hint"]')).toBeDisabled();
    await expect(page.locator('.tools [data-action="menu"]')).toBeEnabled();

    // a key, the stock, a tap and a drag are refused at once, and said
    await page.locator("body").press("u");
    await expect(page.locator(".toast.error")).toHaveText(STRINGS.en.offlineAction);
    await page.locator("body").press("d");
    await page.locator(".stock").click();
    await tap(page, "9D");
    await drag(page, "9D", 1);
    await expect(page.locator(".toast.error")).toHaveText(STRINGS.en.offlineAction);
    // the dragged card went back where it was
    await expect(page.locator('.column[data-column="3"] .card.up[data-card="9D"]:not(.returning)')).toBeVisible();
    await expect(page.locator('.column[data-column="1"] .card.up[data-card="9D"]')).toHaveCount(0);

    await server.start();
    await expect(page.locator(".toast.offline")).toHaveCount(0, { timeout: 20_000 });
    await expect(undo).toBeEnabled();
    // none of them was kept to be sent now
    await page.waitForTimeout(2000);
    await atVersion(page, 1);
    expect(await page.locator(".columns").innerHTML()).toBe(before);

    await undo.click();
    await atVersion(page, 2);
  } finally {
    await server.dispose();
  }
});

test("a lost connection is said in the same words through every attempt to reconnect", async ({ page, watch }) => {
  // each change of a status region's words is read out: "Connecting…" between
  // attempts, and "Connection lost" again, was a flicker read every few seconds
  const server = new TestServer();
  await server.start();
  try {
    await register(page, server.url, uniqueName("flap"));
    await startGame(page, "medium", knownDeal());
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      setInterval(() => {
        const words = document.querySelector(".notices .toast.offline")?.textContent ?? "";
        if (words !== seen.at(-1)) seen.push(words);
      }, 20);
    });
    watch.allow.push(/WebSocket connection to .* failed/);
    await server.stop();
    await page.waitForTimeout(6000); // several attempts: the delay grows from 0.25 s to 4 s
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    expect(seen.filter((words) => words !== "")).toEqual([STRINGS.en.reconnecting]);
  } finally {
    await server.dispose();
  }
});

test("a first visit while the server cannot be reached says so, keeps trying, and signs in once it is back", async ({ page, watch }) => {
  const server = new TestServer();
  await server.start();
  await server.stop();
  // the page itself is at hand (from the build), its server is not
  const dir = process.env.SCORPION_WEB_DIR ?? join(ROOT, "server", "web");
  await page.route(`${server.url}**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    const file = join(dir, path === "/" ? "index.html" : path);
    const type = file.endsWith(".js") ? "text/javascript" : file.endsWith(".css") ? "text/css" : "text/html";
    await route.fulfill({ body: readFileSync(file), contentType: type });
  });
  watch.allow.push(/WebSocket connection to .* failed/);
  // a page the test serves has no address of its own: Chromium asks before it reaches 127.0.0.1
  await page.context().grantPermissions(["local-network-access"]);
  try {
    await page.goto(server.url);
    await expect(page.locator("main.center")).toContainText("Connecting…");
    await expect(page.locator("main.center .unreachable")).toHaveText(STRINGS.en.unreachable, { timeout: 15_000 });
    await server.start();
    await expect(page.locator("main.signin")).toBeVisible({ timeout: 20_000 });
    await expect(page.locator(".unreachable")).toHaveCount(0);
  } finally {
    await server.dispose();
  }
});

test("a restart asked while another tab pauses the game is withdrawn: the pause screen has the focus", async ({ page, context, server }) => {
  await register(page, server.url, uniqueName("ask-pause"));
  await startGame(page, "medium", knownDeal());
  const other = await context.newPage();
  await other.goto(server.url);
  await expect(other.locator("main.game")).toBeVisible();
  await page.locator('.tools [data-action="restart"]').click();
  await expect(page.locator(".dialog")).toBeVisible();
  await other.locator('.tools [data-action="pause"]').click();
  await expect(page.locator(".paused")).toBeVisible();
  await expect(page.locator(".dialog")).toHaveCount(0); // the server would refuse it: paused
  await expect(page.locator('[data-action="resume-big"]')).toBeFocused();
  await atVersion(page, 0);
});

test("a button pressed while a push draws the page anew still clicks when released", async ({ page, context, server }) => {
  // The page is drawn anew on each reply and push: a press and its release on two
  // different nodes make no click, so a Deal or a tool pressed as a push came was lost.
  let received = 0;
  page.on("websocket", (socket) => socket.on("framereceived", () => (received += 1)));
  await register(page, server.url, uniqueName("press"));
  await startGame(page, "medium", knownDeal());
  const other = await context.newPage();
  await other.goto(server.url); // the same player: the unfinished game opens
  await atVersion(other, 0);
  const elsewhere = [() => tap(other, "QD"), () => other.locator('.tools [data-action="undo"]').click()];
  for (const [index, pressed] of [".stock", '.tools [data-action="hint"]'].entries()) {
    const box = await boxOf(page, pressed); // asked again if the page is drawn anew meanwhile
    await page.mouse.move(box!.x + box!.width / 2, box!.y + box!.height / 2);
    await page.mouse.down();
    const before = received;
    await elsewhere[index]!(); // an action on the other tab, pushed to this one
    await expect.poll(() => received).toBeGreaterThan(before);
    await page.mouse.up();
    await atVersion(page, 2 * index + 2); // the press was a click
  }
  await expect(page.locator(".banner.hint")).toBeVisible();
});

/**
 * 9D held in `page` (after QD's move), a second tab of the player open on the game, and
 * `elsewhere` done in that tab meanwhile, its push heard by `page` but not yet drawn; then 9D
 * let go on column 1, where it fits. The frames `page` sent after the release.
 */
async function heldThrough(
  page: Page,
  context: BrowserContext,
  url: string,
  elsewhere: (other: Page) => Promise<void>,
  drawn: () => Promise<void>,
): Promise<number> {
  let sent = 0;
  let received = 0;
  page.on("websocket", (socket) => {
    socket.on("framesent", () => (sent += 1));
    socket.on("framereceived", () => (received += 1));
  });
  await register(page, url, uniqueName("held"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD"); // uncovers 9D, which goes on column 1
  await atVersion(page, 1);
  const other = await context.newPage();
  await other.goto(url);
  await atVersion(other, 1);
  await still(page);
  const card = await boxOf(page, '.card.up[data-card="9D"]');
  const target = await boxOf(page, '.column[data-column="1"]');
  await page.mouse.move(card!.x + card!.width / 2, card!.y + 6);
  await page.mouse.down();
  await page.mouse.move(card!.x + card!.width / 2 + 10, card!.y + 20, { steps: 2 });
  const heard = received;
  await elsewhere(other);
  await expect.poll(() => received).toBeGreaterThan(heard); // pushed: the drawing waits for the release
  await expect(page.locator(".paused")).toHaveCount(0);
  const before = sent;
  await page.mouse.move(target!.x + target!.width / 2, target!.y + target!.height - 8, { steps: 6 });
  await page.mouse.up();
  await drawn();
  await page.waitForTimeout(300);
  await expect(page.locator(".toast.error")).toHaveCount(0);
  return sent - before;
}

test("a drag let go after another tab paused the game sends no move: the pause screen shows", async ({ page, context, server }) => {
  const pause = async (other: Page) => {
    await other.locator('.tools [data-action="pause"]').click();
    await expect(other.locator(".paused")).toBeVisible();
  };
  const sent = await heldThrough(page, context, server.url, pause, () => expect(page.locator(".paused")).toBeVisible());
  expect(sent, "frames sent after the release").toBe(0);
  await atVersion(page, 1);
});

test("a drag let go after another tab's move is not sent against the board it did not show", async ({ page, context, server }) => {
  const deal = async (other: Page) => {
    await other.locator(".stock").click(); // the deal, pushed while the card is held
    await atVersion(other, 2);
  };
  const sent = await heldThrough(page, context, server.url, deal, () => atVersion(page, 2)); // the deal, drawn at the release
  expect(sent, "frames sent after the release").toBe(0);
  await expect.poll(() => page.locator(".card.up.dragging").count()).toBe(0);
});

test("a new sign-in token: this browser's tabs keep playing, a device with the old one is signed out", async ({ page, context, browser, server }) => {
  const name = uniqueName("rotate");
  await register(page, server.url, name);
  await page.locator("details.token-box summary").click();
  const old = (await page.locator("code.token").textContent()) ?? "";
  expect(old).not.toBe("");
  const tab = await context.newPage(); // another tab of this browser
  await tab.goto(server.url);
  await expect(tab.locator("main.lobby")).toBeVisible();
  const device = await browser.newContext(); // another device, given the token
  const phone = await device.newPage();
  await phone.addInitScript((token) => localStorage.setItem("scorpion.token", token), old);
  await phone.goto(server.url);
  await expect(phone.locator("header .who")).toHaveText(name);

  await page.locator('[data-action="new-token"]').click();
  await expect(page.locator(".dialog")).toContainText("The one shown stops working");
  await page.locator('[data-action="confirm-yes"]').click();
  await expect(page.locator(".toast.done")).toHaveText("A new sign-in token replaces the old one.");
  const fresh = (await page.locator("code.token").textContent()) ?? "";
  expect(fresh).not.toBe(old);
  expect(fresh).not.toBe("");

  // the other tab takes the new token from the browser's storage and plays on
  await startGame(tab, "medium", knownDeal());
  await tap(tab, "QD");
  await atVersion(tab, 1);
  await tab.reload();
  await atVersion(tab, 1);
  // the other device, still on the old token, is signed out at its next request
  await phone.locator('[data-action="play"]').click();
  await expect(phone.locator("form.register")).toBeVisible();
  await device.close();

  // and signing out everywhere leaves no way back in, here or in the other tab
  await expect(page.locator("details.token-box")).toHaveAttribute("open", ""); // still open
  await page.locator('[data-action="sign-out-everywhere"]').click();
  await expect(page.locator(".dialog")).toContainText(`no device can sign in as ${name} again`);
  await page.locator('[data-action="confirm-yes"]').click();
  await expect(page.locator("form.register")).toBeVisible();
  await expect(page.locator("main.signin p.error")).toHaveText(
    "Signed out on every device: no sign-in token of that player works any more.",
  );
  await expect(tab.locator("form.register")).toBeVisible();
  const again = await browser.newContext();
  const check = await again.newPage();
  await check.addInitScript((token) => localStorage.setItem("scorpion.token", token), fresh);
  await check.goto(server.url);
  await expect(check.locator("form.register")).toBeVisible(); // the token is refused: sign in again
  await again.close();
});

type Sent = { type?: string; id?: number; token?: string };

/**
 * The server's first answer to rotate_token never reaches `page`: its connection drops
 * instead, and for `awayMs` after that the page's new connections are closed at once.
 * `toServer` sees each message the page sends and may answer it itself (true: not sent on).
 */
async function loseTheRotationsAnswer(
  page: Page,
  { awayMs = 0, toServer }: { awayMs?: number; toServer?: (message: Sent, answer: (reply: object) => void) => boolean } = {},
): Promise<() => number> {
  let cut = 0;
  let cutAt = 0;
  await page.routeWebSocket(/.*/, (ws) => {
    if (cut > 0 && Date.now() - cutAt < awayMs) {
      void ws.close({ code: 1001 });
      return;
    }
    const real = ws.connectToServer();
    ws.onMessage((frame) => {
      const answer = (reply: object) => ws.send(Buffer.from(encode(reply)));
      if (!toServer?.(decode(frame as Buffer) as Sent, answer)) real.send(frame);
    });
    real.onMessage((frame) => {
      if (cut === 0 && typeof frame !== "string" && (decode(frame) as Sent).type === "token") {
        cut += 1;
        cutAt = Date.now();
        real.close();
        ws.close();
        return;
      }
      ws.send(frame);
    });
  });
  return () => cut;
}

test("a new sign-in token whose answer is lost on the way: the page signs in with it all the same", async ({ page, browser, server }) => {
  const cuts = await loseTheRotationsAnswer(page);
  const name = uniqueName("cutrot");
  await register(page, server.url, name);
  await page.locator("details.token-box summary").click();
  const old = (await page.locator("code.token").textContent()) ?? "";
  await page.locator('[data-action="new-token"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect.poll(cuts).toBe(1);
  // the server replaced the token: the reconnection's hello with the old one is refused,
  // and the page signs in with the new one it made and kept before asking
  await expect(page.locator(".toast.done")).toHaveText("A new sign-in token replaces the old one.");
  await expect(page.locator("header .who")).toHaveText(name);
  const fresh = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  expect(fresh).not.toBe(old);
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token.next"))).toBeNull();
  await page.locator("details.token-box summary").click();
  await expect(page.locator("code.token")).toHaveText(fresh ?? "");
  for (const [token, signedIn] of [[old, false], [fresh, true]] as const) {
    const device = await browser.newContext();
    const check = await device.newPage();
    await check.addInitScript((kept) => localStorage.setItem("scorpion.token", kept ?? ""), token);
    await check.goto(server.url);
    await expect(check.locator(signedIn ? "main.lobby" : "form.register")).toBeVisible();
    await device.close();
  }
});

test("a new token's hello answered 'too many requests' after its rotation's answer was lost keeps both tokens until it is taken", async ({ page, server }) => {
  let limited = 0;
  let nextToken: string | undefined;
  const cuts = await loseTheRotationsAnswer(page, {
    // the first hello with the rotation's token is told to wait, as after many refused tokens from one address
    toServer: (message, answer) => {
      if (limited > 0 || message.type !== "hello" || message.token === undefined || message.token !== nextToken) return false;
      limited += 1;
      answer({ type: "error", re: message.id, code: "rate_limited", message: "Too many auth requests.", retry_after_ms: 1000 });
      return true;
    },
  });
  const name = uniqueName("limrot");
  await register(page, server.url, name);
  const old = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="new-token"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect.poll(cuts).toBe(1);
  nextToken = await page.evaluate(() => (JSON.parse(localStorage.getItem("scorpion.token.next") ?? "{}") as { next?: string }).next);
  expect(nextToken).toBeTruthy();
  await expect.poll(() => limited, { timeout: 15_000 }).toBe(1);
  await expect(page.locator("header .who")).toHaveText(name, { timeout: 15_000 });
  await expect.poll(() => page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(nextToken);
  expect(nextToken).not.toBe(old);
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token.next"))).toBeNull();
});

test("signing out while a rotation's answer is awaited leaves neither token behind", async ({ page, browser, server }) => {
  const cuts = await loseTheRotationsAnswer(page, { awayMs: 4000 });
  await register(page, server.url, uniqueName("outrot"));
  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="new-token"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect.poll(cuts).toBe(1);
  const pending = await page.evaluate(() => localStorage.getItem("scorpion.token.next"));
  expect(pending).not.toBeNull();
  await page.locator('[data-action="sign-out"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect(page.locator("form.register")).toBeVisible();
  // the rotation's token signs in as the player: it must not stay for whoever comes next
  expect(await page.evaluate(() => [localStorage.getItem("scorpion.token"), localStorage.getItem("scorpion.token.next")])).toEqual([null, null]);
  await page.waitForTimeout(4500); // back online: still nothing kept
  await register(page, server.url, uniqueName("next"));
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token.next"))).toBeNull();
});

for (const presses of [1, 2]) {
test(`a tab waiting for its turn to replace the token (pressed ${presses}x), whose hello is refused meanwhile, does not wait for itself`, async ({ page, context, server }) => {
  // tab B's rotation reaches the server, its answer is held; tab A asks too (waiting for B's turn),
  // then A's connection drops: its hello with the old token is refused. A waited for the rotation
  // lock its own queued rotation was waiting for, whose request waited for A's hello: both tabs hung.
  const name = uniqueName("turns");
  await register(page, server.url, name);
  const tab = await context.newPage();
  let held = false;
  let cutB = () => {};
  await tab.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    cutB = () => ws.close();
    real.onMessage((frame) => {
      if (!held && typeof frame !== "string" && (decode(frame) as Sent).type === "token") {
        held = true; // never delivered: B's connection is cut below
        return;
      }
      ws.send(frame);
    });
  });
  let cutA = () => {};
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    cutA = () => ws.close();
    ws.onMessage((frame) => real.send(frame));
    real.onMessage((frame) => ws.send(frame));
  });
  await page.reload();
  await expect(page.locator("main.lobby")).toBeVisible();
  await tab.goto(server.url);
  await expect(tab.locator("main.lobby")).toBeVisible();
  for (const [each, times] of [[tab, 1], [page, presses]] as const) {
    await each.locator("details.token-box summary").click();
    for (let press = 0; press < times; press++) {
      await each.locator('[data-action="new-token"]').click();
      await each.locator('[data-action="confirm-yes"]').click();
    }
    await expect.poll(() => held).toBe(true); // B's rotation is done on the server
  }
  // pressed once: A's connection drops, its hello is refused while its rotation waits for
  // its turn; pressed twice: the first, refused, signs A out and its hello again is refused
  // while the second waits
  if (presses === 1) cutA();
  await page.waitForTimeout(1500);
  cutB();
  // at once: not after the bounded wait (5 s) for a lock this tab's own queued rotation waits for
  for (const each of [page, tab]) {
    await expect(each.locator("header .who")).toHaveText(name, { timeout: 3500 });
    await expect(each.locator(".toast.offline")).toHaveCount(0, { timeout: 3500 });
  }
  const kept = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  const device = await context.browser()!.newContext();
  const check = await device.newPage();
  await check.addInitScript((token) => localStorage.setItem("scorpion.token", token ?? ""), kept);
  await check.goto(server.url);
  await expect(check.locator("header .who")).toHaveText(name);
  await device.close();
});
}

for (const action of ["reads its statistics", "asks for a new sign-in token too"]) {
  test(`a tab signed out by another tab's rotation whose answer is lost follows the new token when it ${action}`, async ({ page, context, server }) => {
    const cuts = await loseTheRotationsAnswer(page, { awayMs: 3000 }); // away a while: the other tab acts first
    const name = uniqueName("tabrot");
    await register(page, server.url, name);
    const old = await page.evaluate(() => localStorage.getItem("scorpion.token"));
    const tab = await context.newPage();
    await tab.goto(server.url);
    await expect(tab.locator("main.lobby")).toBeVisible();
    await page.locator("details.token-box summary").click();
    await page.locator('[data-action="new-token"]').click();
    await page.locator('[data-action="confirm-yes"]').click();
    await expect.poll(cuts).toBe(1);
    // the rotation signed the other tab's connection out: its next request is refused
    if (action === "reads its statistics") {
      await tab.locator("header nav button", { hasText: "Statistics" }).click();
      await expect(tab.locator("main.stats-page")).toBeVisible();
    } else {
      // a second new token would leave the first one's in no tab's keeping: the same one is asked for
      await tab.locator("details.token-box summary").click();
      await tab.locator('[data-action="new-token"]').click();
      await tab.locator('[data-action="confirm-yes"]').click();
    }
    await expect(tab.locator("header .who")).toHaveText(name);
    await expect.poll(() => tab.evaluate(() => localStorage.getItem("scorpion.token.next"))).toBeNull();
    const fresh = await tab.evaluate(() => localStorage.getItem("scorpion.token"));
    expect(fresh).not.toBe(old);
    await expect(page.locator("header .who")).toHaveText(name, { timeout: 15_000 }); // and this tab, back
    await expect(page.locator("form.register")).toHaveCount(0);
    expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(fresh);
  });
}

test("a tab's request refused while another tab's new token is on its way keeps the player in every tab", async ({ page, context, server }) => {
  // A's rotation is done on the server, its answer held: B's request with the old token is
  // refused, and decided once A has kept the new token and B has followed it. Judged against
  // the token B held by then, the refusal signed B out and forgot the browser's new token.
  let release: (() => void) | null = null;
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => real.send(frame));
    real.onMessage((frame) => {
      if (typeof frame !== "string" && (decode(frame) as Sent).type === "token") release = () => ws.send(frame);
      else ws.send(frame);
    });
  });
  const name = uniqueName("refrot");
  await register(page, server.url, name);
  const old = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  const tab = await context.newPage();
  let refused = 0;
  const hellos: string[] = [];
  tab.on("websocket", (socket) => {
    socket.on("framereceived", (frame) => {
      if (typeof frame.payload !== "string" && (decode(frame.payload) as { code?: string }).code === "unauthenticated") refused += 1;
    });
    socket.on("framesent", (frame) => {
      const sent = typeof frame.payload !== "string" ? (decode(frame.payload) as Sent) : {};
      if (sent.type === "hello" && sent.token) hellos.push(sent.token);
    });
  });
  await tab.goto(server.url);
  await expect(tab.locator("main.lobby")).toBeVisible();
  const locks = (each: Page) => each.evaluate(async () => (await navigator.locks.query()).pending?.filter((lock) => lock.name === "scorpion.token").length ?? 0);
  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="new-token"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect.poll(() => release !== null).toBe(true);
  // the turn after A's rotation is the test's: B decides only once it has followed A's new token
  await page.evaluate(() => {
    void navigator.locks.request("scorpion.token", () => new Promise<void>((resolve) => Object.assign(window, { freeTurn: resolve })));
  });
  await expect.poll(() => locks(page)).toBe(1);
  await tab.locator("header nav button", { hasText: "Statistics" }).click();
  await expect.poll(() => refused).toBe(1);
  await expect.poll(() => locks(tab)).toBe(2); // B waits for its turn
  release!();
  await expect(page.locator(".toast.done")).toHaveText("A new sign-in token replaces the old one.");
  const fresh = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  expect(fresh).not.toBe(old);
  await expect.poll(() => hellos.includes(fresh ?? "")).toBe(true); // B follows it
  await page.evaluate(() => (window as unknown as { freeTurn: () => void }).freeTurn());
  await expect.poll(() => locks(tab)).toBe(0); // B has decided
  // B reads its statistics again with the new token, which the browser keeps
  await expect(tab.locator("main.stats-page")).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(fresh);
  for (const each of [page, tab]) {
    await expect(each.locator("header .who")).toHaveText(name);
    await expect(each.locator("form.register")).toHaveCount(0);
  }
});

test("a page reloaded as its new sign-in token is asked for completes the rotation: every tab keeps a token that works", async ({ page, context, browser, server }) => {
  // The page's rotation reaches the server only after the reloaded page's hello with the old
  // token (here it is sent from another device on that token, the page's own never arrives):
  // the server signs the page and the other tab out, and says nothing. The page kept the old
  // token, dead, and the new one unanswered.
  let asked = false;
  let landed = false;
  const later: (() => void)[] = []; // the reloaded page's rotate_token, sent once the first one has landed
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => {
      const type = (decode(frame as Buffer) as Sent).type;
      if (type === "rotate_token" && !asked) asked = true; // lost with the page that asked
      else if (type === "rotate_token" && !landed) later.push(() => real.send(frame));
      else real.send(frame);
    });
    real.onMessage((frame) => ws.send(frame));
  });
  const name = uniqueName("reloadrot");
  await register(page, server.url, name);
  const old = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  const tab = await context.newPage();
  await tab.goto(server.url);
  await expect(tab.locator("main.lobby")).toBeVisible();
  const device = await browser.newContext();
  const elsewhere = await device.newPage();
  let rotate = (_next: string) => {};
  await elsewhere.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    rotate = (next) => real.send(Buffer.from(encode({ type: "rotate_token", id: "elsewhere-1", token: next })));
    ws.onMessage((frame) => real.send(frame));
    real.onMessage((frame) => {
      if (typeof frame === "string" || (decode(frame) as { re?: string }).re !== "elsewhere-1") return ws.send(frame);
      landed = true;
      later.splice(0).forEach((send) => send());
    });
  });
  await elsewhere.addInitScript((token) => localStorage.setItem("scorpion.token", token ?? ""), old);
  await elsewhere.goto(server.url);
  await expect(elsewhere.locator("header .who")).toHaveText(name);

  await page.locator("details.token-box summary").click();
  await page.locator('[data-action="new-token"]').click();
  await page.locator('[data-action="confirm-yes"]').click();
  await expect.poll(() => asked).toBe(true);
  const next = await page.evaluate(() => (JSON.parse(localStorage.getItem("scorpion.token.next") ?? "{}") as { next?: string }).next);
  expect(next).toBeTruthy();
  await page.reload();
  await expect(page.locator("header .who")).toHaveText(name); // signed in with the old token
  rotate(next ?? ""); // the rotation reaches the server now, and signs both tabs out
  await expect.poll(() => landed).toBe(true);
  await expect(page.locator(".toast.done")).toHaveText("A new sign-in token replaces the old one.");
  await expect.poll(() => page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(next);
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token.next"))).toBeNull();
  expect(next).not.toBe(old);
  await page.locator("details.token-box summary").click();
  await expect(page.locator("code.token")).toHaveText(next ?? "");
  // both tabs are signed in: their next requests are answered as the player
  for (const each of [page, tab]) {
    await each.locator("header nav button", { hasText: "Statistics" }).click();
    await expect(each.locator("main.stats-page")).toBeVisible();
    await expect(each.locator("header .who")).toHaveText(name);
  }
  await device.close();
});

/**
 * Opens each tab on the sign-in page, and counts the `register` requests they send from
 * then on: each makes a player, and one whose token no tab keeps is lost.
 */
async function onSignInPage(tabs: Page[], url: string): Promise<() => number> {
  let registers = 0;
  for (const tab of tabs) {
    tab.on("websocket", (socket) =>
      socket.on("framesent", (frame) => {
        if (typeof frame.payload !== "string" && (decode(frame.payload) as { type?: string }).type === "register") registers += 1;
      }),
    );
    await tab.goto(url);
    await expect(tab.locator("form.register")).toBeVisible();
  }
  return () => registers;
}

test("two tabs registering at the same moment end as one player, whose token the browser keeps", async ({ page, context, server }) => {
  const other = await context.newPage();
  const registers = await onSignInPage([page, other], server.url);
  const names = [uniqueName("ra"), uniqueName("rb")];
  const at = Date.now() + 700; // both submitted at this moment, not one click after the other
  await Promise.all(
    [page, other].map((tab, index) =>
      tab.evaluate(
        ({ name, at }) => {
          const field = document.querySelector<HTMLInputElement>("#name")!;
          field.value = name;
          field.dispatchEvent(new Event("input", { bubbles: true }));
          setTimeout(() => document.querySelector<HTMLFormElement>("form.register")!.requestSubmit(), at - Date.now());
        },
        { name: names[index], at },
      ),
    ),
  );
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(other.locator("main.lobby")).toBeVisible();
  const shown = await page.locator("header .who").textContent();
  expect(names).toContain(shown);
  await expect(other.locator("header .who")).toHaveText(shown!);
  await other.reload(); // the token kept is that player's
  await expect(other.locator("header .who")).toHaveText(shown!);
  expect(registers()).toBe(1);
});

test("a tab whose copy of the storage has not yet seen another tab's registration does not register a second player", async ({ page, context, server }) => {
  const other = await context.newPage();
  // the other tab's copy of localStorage lags (as Chromium's does under load): it reads no
  // token, and hears no storage event, while `lagging` holds
  await other.addInitScript(() => {
    const lag = window as unknown as { lagging: boolean };
    lag.lagging = false;
    const getItem = Storage.prototype.getItem;
    Storage.prototype.getItem = function (this: Storage, key: string) {
      return lag.lagging && key === "scorpion.token" ? null : getItem.call(this, key);
    };
    window.addEventListener("storage", (event) => {
      if (lag.lagging) event.stopImmediatePropagation();
    });
  });
  const registers = await onSignInPage([page, other], server.url);
  await other.evaluate(() => ((window as unknown as { lagging: boolean }).lagging = true));
  const name = uniqueName("first");
  await page.locator("#name").fill(name);
  await page.locator('[data-action="register"]').click();
  await expect(page.locator("main.lobby")).toBeVisible();
  await other.locator("#name").fill(uniqueName("second"));
  await other.locator('[data-action="register"]').click();
  await page.waitForTimeout(1000);
  expect(registers()).toBe(1); // waiting for the token the other tab's mark says is on its way
  await other.evaluate(() => ((window as unknown as { lagging: boolean }).lagging = false));
  await expect(other.locator("header .who")).toHaveText(name);
  expect(registers()).toBe(1);
});

test("two tabs asking for a new sign-in token at the same moment keep the player", async ({ page, context, server }) => {
  const name = uniqueName("rot2");
  await register(page, server.url, name);
  const other = await context.newPage();
  await other.goto(server.url);
  await expect(other.locator("main.lobby")).toBeVisible();
  for (let round = 0; round < 4; round++) {
    for (const tab of [page, other]) {
      await expect(tab.locator("main.lobby")).toBeVisible();
      const box = tab.locator("details.token-box");
      if ((await box.getAttribute("open")) === null) await tab.locator("details.token-box summary").click();
      await tab.locator('[data-action="new-token"]').click();
      await expect(tab.locator(".dialog")).toBeVisible();
    }
    const at = Date.now() + 400;
    await Promise.all(
      [page, other].map((tab) =>
        tab.evaluate((at) => {
          setTimeout(() => document.querySelector<HTMLButtonElement>('[data-action="confirm-yes"]')!.click(), at - Date.now());
        }, at),
      ),
    );
    await page.waitForTimeout(1500);
  }
  for (const tab of [page, other]) {
    await tab.reload(); // whatever token the browser kept opens the player
    await expect(tab.locator("main.lobby")).toBeVisible();
    await expect(tab.locator("header .who")).toHaveText(name);
  }
});

/**
 * A TCP relay to `port` on 127.0.0.1 whose `kill` makes every connection open
 * now go silent both ways, with no close (a phone's connection dead after a
 * sleep or a change of network); new connections are relayed as ever.
 */
async function silentRelay(port: number): Promise<{ url: string; opened: () => number; kill: () => void; close: () => Promise<void> }> {
  const dead = new WeakSet<Socket>();
  const live: Socket[] = [];
  let opened = 0;
  const relay: Server = createServer((client) => {
    opened++;
    const upstream = createConnection(port, "127.0.0.1");
    live.push(client, upstream);
    const pipe = (from: Socket, to: Socket) => {
      from.on("data", (chunk) => {
        if (!dead.has(from)) to.write(chunk);
      });
      from.on("close", () => {
        if (!dead.has(from)) to.destroy();
      });
      from.on("error", () => to.destroy());
    };
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const address = relay.address();
  const own = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${own}/`,
    opened: () => opened,
    kill: () => live.splice(0).forEach((socket) => dead.add(socket)),
    close: async () => {
      live.forEach((socket) => socket.destroy());
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}

test("a page shown again on a connection that died unseen checks it and reconnects at once", async ({ page, server }) => {
  const relay = await silentRelay(server.port);
  // the page is loaded through the relay too: a page the test serves has no address of its own
  await page.context().grantPermissions(["local-network-access"]);
  try {
    await register(page, relay.url, uniqueName("woken"));
    await startGame(page, "medium", knownDeal());
    const before = relay.opened();
    relay.kill();
    // the phone woke: the page is shown again
    await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    // no pong within a few seconds: a new connection, long before a move would time out (30 s)
    await expect.poll(() => relay.opened(), { timeout: 8000 }).toBeGreaterThan(before);
    await expect(page.locator(".toast.offline")).toHaveCount(0);
    await tap(page, "QD");
    await atVersion(page, 1);
  } finally {
    await page.goto("about:blank"); // no page left reconnecting to the relay as it closes
    await relay.close();
  }
});

test("a network gone says the connection is lost at once, sends no move, and reconnects as soon as it is back", async ({ page, context, server, watch }) => {
  // when the page heard the network come back, and when it opened each socket (its own clock)
  await page.addInitScript(() => {
    const seen = window as unknown as { opened: number[]; online?: number };
    seen.opened = [];
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
      constructor(url: string | URL, protocols?: string | string[]) {
        super(url, protocols);
        seen.opened.push(performance.now());
      }
    };
    window.addEventListener("online", () => (seen.online = performance.now()));
  });
  await register(page, server.url, uniqueName("network"));
  await startGame(page, "medium", knownDeal());
  await still(page);
  // the browser notes each connection that cannot be opened while the network is gone
  watch.allow.push(/WebSocket connection to .* failed/);
  await context.setOffline(true);
  await expect(page.locator(".toast.offline")).toHaveText(STRINGS.en.reconnecting, { timeout: 2000 });
  // a tap is refused and said, not sent to be applied once the network is back
  await tap(page, "QD");
  await expect(page.locator(".toast.error")).toHaveText(STRINGS.en.offlineAction);
  await page.waitForTimeout(8000); // the attempts to reconnect now 4 s apart
  await context.setOffline(false);
  // back at once, not at the next attempt (4 s apart): a socket opened within a second of the
  // network's return, by the page's clock (a loaded machine delays the server's answer, not this)
  const openedAtOnce = () =>
    page.evaluate(() => {
      const { opened, online } = window as unknown as { opened: number[]; online?: number };
      return online !== undefined && opened.some((at) => at >= online && at - online < 1000);
    });
  await expect.poll(openedAtOnce).toBe(true);
  await expect(page.locator(".toast.offline")).toHaveCount(0);
  await page.waitForTimeout(2000);
  await atVersion(page, 0);
  await tap(page, "QD");
  await atVersion(page, 1);
});
