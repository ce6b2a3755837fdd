/**
 * Shared fixtures: one server per test file's worker, and a `page` that fails
 * its test on any console error, page error, failed request or HTTP error
 * response (`allow` lets a test accept messages it causes on purpose, such as
 * the browser's own note of a WebSocket that could not connect while the
 * server was down), a breach of the server's Content-Security-Policy among them.
 */
import { expect, test as base, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer } from "./server";

export const SHOTS = fileURLToPath(new URL("../test-results/screenshots", import.meta.url));
mkdirSync(SHOTS, { recursive: true });

export interface Watch {
  problems: string[];
  allow: RegExp[];
}

export function watch(page: Page, found: Watch): void {
  const note = (text: string) => {
    if (!found.allow.some((pattern) => pattern.test(text))) found.problems.push(text);
  };
  page.on("console", (message) => {
    if (message.type() === "error") note(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => note(`page error: ${error.message}`));
  page.on("requestfailed", (request) => note(`failed: ${request.url()} ${request.failure()?.errorText}`));
  page.on("response", (response) => {
    if (response.status() >= 400) note(`HTTP ${response.status()}: ${response.url()}`);
  });
}

/**
 * Has the page say every breach of its Content-Security-Policy as a console
 * error (`securitypolicyviolation`: what the policy refused, and by which
 * directive), whatever the browser itself logs of it.
 */
export async function reportViolations(page: Page): Promise<void> {
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(`Content-Security-Policy: ${event.effectiveDirective} refused ${event.blockedURI || "inline"}`);
    });
  });
}

export const test = base.extend<{ watch: Watch }, { server: TestServer }>({
  server: [
    async ({}, use) => {
      const server = new TestServer();
      await server.start();
      await use(server);
      await server.dispose();
    },
    { scope: "worker", timeout: 60_000 },
  ],
  watch: [
    async ({ page }, use) => {
      const found: Watch = { problems: [], allow: [] };
      await reportViolations(page);
      watch(page, found);
      await use(found);
      expect(found.problems, "console errors or failed requests").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

let names = 0;
/** A player name no other test uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}${Date.now().toString(36).slice(-5)}${++names}`;
}

/**
 * The longest name there is (32 letters), unique, of wide letters alone: W and M
 * spell the time and a count in binary. (A unique name padded with W held some
 * narrow digits, and at times fitted where it was meant to be cut.)
 */
export function wideName(): string {
  const unique = (Date.now() % 2 ** 24) * 256 + (++names % 256);
  return unique.toString(2).padStart(32, "0").replace(/0/g, "W").replace(/1/g, "M");
}

export async function register(page: Page, url: string, name: string): Promise<void> {
  await page.goto(url);
  await page.locator("#name").fill(name);
  await page.locator("form.register button[type=submit]").click();
  await expect(page.locator("main.lobby")).toBeVisible();
}

export const SIZES = [[1280, 800], [360, 740]] as const;

/**
 * Waits until no card is on its way: after a move the cards slide to their new
 * places for a moment, and a press meant for a card that stays put could land
 * on one passing over it (then its click is on neither, and nothing moves).
 */
export async function still(page: Page): Promise<void> {
  await page.waitForFunction(() => document.getAnimations().every((animation) => animation.playState !== "running"));
}

/** Waits until no card is on its way (a move's slide) and the columns know the room the window gives them. */
export async function settled(page: Page): Promise<void> {
  await still(page);
  await page.waitForFunction(() => {
    return [...document.querySelectorAll<HTMLElement>(".columns")].every((columns) => {
      const top = columns.getBoundingClientRect().top + window.scrollY;
      return columns.style.getPropertyValue("--room") === `${Math.max(0, Math.floor(window.innerHeight - top - 10))}px`;
    });
  });
}

export async function shot(page: Page, name: string): Promise<void> {
  for (const [width, height] of SIZES) {
    await page.setViewportSize({ width, height });
    await settled(page);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}x${height}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

/**
 * Checks that every column of the table in `scope` is drawn whole: its cards
 * share one left edge and width, its face-up cards on others all show strips
 * of one height, and its last card ends inside the table, which ends inside
 * the window (scrolled to the top). Returns the most cards a column has.
 */
export async function expectColumnsFit(page: Page, scope: string): Promise<number> {
  await page.evaluate(() => window.scrollTo(0, 0));
  await settled(page);
  const found = await page.$eval(scope, (root) => {
    const table = root.querySelector(".table")?.getBoundingClientRect();
    return {
      table: table ? { bottom: table.bottom } : null,
      window: window.innerHeight,
      columns: [...root.querySelectorAll(".columns .column")].map((column) =>
        [...column.querySelectorAll(".card")].map((card) => {
          const box = card.getBoundingClientRect();
          return { up: card.classList.contains("up"), left: box.left, width: box.width, top: box.top, bottom: box.bottom };
        }),
      ),
    };
  });
  expect(found.table, "a table is drawn").not.toBeNull();
  const tableBottom = found.table?.bottom ?? 0;
  expect(tableBottom).toBeLessThanOrEqual(found.window);
  for (const [index, cards] of found.columns.entries()) {
    const name = `column ${index + 1} (${cards.length} cards)`;
    if (cards.length === 0) continue;
    for (const card of cards) {
      expect(Math.abs(card.left - cards[0].left), `${name}: left edges`).toBeLessThan(0.5);
      expect(Math.abs(card.width - cards[0].width), `${name}: widths`).toBeLessThan(0.5);
    }
    const strips = cards.slice(1).flatMap((card, i) => (card.up && cards[i].up ? [card.top - cards[i].top] : []));
    for (const strip of strips) {
      expect(Math.abs(strip - strips[0]), `${name}: strips ${strips.map((each) => each.toFixed(1)).join(" ")}`).toBeLessThan(1);
      expect(strip, `${name}: a strip shows the rank`).toBeGreaterThanOrEqual(10.5);
    }
    expect(cards[cards.length - 1].bottom, `${name}: the last card's bottom`).toBeLessThanOrEqual(tableBottom);
  }
  return Math.max(...found.columns.map((cards) => cards.length));
}

/** Starts a game of `level` on deal `deal` from the lobby. */
export async function startGame(page: Page, level: string, deal?: number): Promise<void> {
  await page.locator(`button.level[data-level="${level}"]`).click();
  if (deal !== undefined) await page.locator("#deal").fill(String(deal));
  await page.locator('[data-action="play"]').click();
  // asked first when it abandons an unfinished game, after a look at the server's list
  await expect(page.locator("main.game, .dialog")).toBeVisible();
  const confirm = page.locator(".dialog .yes");
  if (await confirm.isVisible().catch(() => false)) await confirm.click();
  await expect(page.locator("main.game")).toBeVisible();
}

export function version(page: Page): Promise<number> {
  return page.locator("main.game").getAttribute("data-v").then(Number);
}

/** Where `selector` is on screen: asked again if the page was drawn anew between finding it and measuring it. */
export async function boxOf(page: Page, selector: string): Promise<{ x: number; y: number; width: number; height: number }> {
  let box: { x: number; y: number; width: number; height: number } | null = null;
  await expect.poll(async () => (box = await page.locator(selector).boundingBox()) !== null, { message: `cannot see ${selector}` }).toBe(true);
  if (!box) throw new Error(`cannot see ${selector}`);
  return box;
}

/** Drags the card (and all on it) onto column `to` with the mouse. */
export async function drag(page: Page, card: string, to: number): Promise<void> {
  await still(page);
  const box = await boxOf(page, `.card.up[data-card="${card}"]`);
  const target = await boxOf(page, `.column[data-column="${to}"]`);
  await page.mouse.move(box.x + box.width / 2, box.y + 6);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 + 10, box.y + 20, { steps: 2 });
  await page.mouse.move(target.x + target.width / 2, target.y + target.height - 8, { steps: 6 });
  await page.mouse.up();
}

/** A finger's point on the screen: `id` tells fingers apart. */
export interface Finger {
  x: number;
  y: number;
  id: number;
}

/**
 * Fingers on `page` (of a context made with `hasTouch`), put down, moved and
 * lifted through Chromium's DevTools protocol: each call gives every finger
 * on the screen after it (none: all lifted).
 */
export async function fingers(page: Page): Promise<(type: "touchStart" | "touchMove" | "touchEnd", points: Finger[]) => Promise<void>> {
  const cdp = await page.context().newCDPSession(page);
  return async (type, touchPoints) => {
    await cdp.send("Input.dispatchTouchEvent", { type, touchPoints });
  };
}

/** Drags the card (and all on it) onto column `to` with a finger. */
export async function touchDrag(page: Page, card: string, to: number): Promise<void> {
  await still(page);
  const box = await boxOf(page, `.card.up[data-card="${card}"]`);
  const target = await boxOf(page, `.column[data-column="${to}"]`);
  const touch = await fingers(page);
  const from = { x: box.x + box.width / 2, y: box.y + 6, id: 1 };
  const end = { x: target.x + target.width / 2, y: target.y + target.height - 8 };
  await touch("touchStart", [from]);
  for (let i = 1; i <= 8; i++) {
    await touch("touchMove", [{ x: from.x + ((end.x - from.x) * i) / 8, y: from.y + ((end.y - from.y) * i) / 8, id: 1 }]);
  }
  await touch("touchEnd", []);
}

/** Waits until the board shows version `v`. */
export async function atVersion(page: Page, v: number): Promise<void> {
  await expect(page.locator("main.game")).toHaveAttribute("data-v", String(v));
}

/** Taps a card where it shows even when others lie on it (its top edge). */
export async function tap(page: Page, card: string): Promise<void> {
  await still(page);
  await page.locator(`.card.up[data-card="${card}"]`).click({ position: { x: 12, y: 6 } });
}

/** What a screen reader would be told from now on (`heard` reads it): the live regions put in the
 * page (alerts, statuses: each said when put in), each change of the alert and status regions kept
 * outside it, and the page's redraws. */
export async function listen(page: Page): Promise<void> {
  await page.evaluate(() => {
    const heard = { live: [] as string[], alerted: 0, said: 0, redraws: 0 };
    (window as unknown as { heard: typeof heard }).heard = heard;
    new MutationObserver((changes) => {
      for (const change of changes) {
        const region = change.target instanceof Element ? change.target : change.target.parentElement;
        if (region?.closest(".alerted")) heard.alerted++;
        if (region?.closest(".said")) heard.said++;
        for (const node of change.addedNodes) {
          if (!(node instanceof HTMLElement)) continue;
          if (node.tagName === "MAIN") heard.redraws++;
          const live = "[role=alert], [role=status], [aria-live]";
          for (const region of [node, ...node.querySelectorAll(live)]) {
            if (region.matches(live)) heard.live.push(region.textContent ?? "");
          }
        }
      }
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
}

interface Heard {
  live: string[];
  alerted: number;
  said: number;
  redraws: number;
}

export function heard(page: Page): Promise<Heard> {
  return page.evaluate(() => (window as unknown as { heard: Heard }).heard);
}

/** A redraw of the page that changes none of its words: a phone turned on its side and back. */
export async function redraw(page: Page): Promise<void> {
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  const before = (await heard(page)).redraws;
  await page.setViewportSize({ width: 800, height: 400 }); // SHORT_AND_WIDE: the hint's words move
  await expect.poll(async () => (await heard(page)).redraws).toBeGreaterThan(before);
  await page.setViewportSize(size);
  await expect.poll(async () => (await heard(page)).redraws).toBeGreaterThan(before + 1);
}
