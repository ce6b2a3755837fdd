/**
 * Shared fixtures: one server per test file's worker, and a `page` that fails
 * its test on any console error, page error, failed request or HTTP error
 * response (`allow` lets a test accept messages it causes on purpose, such as
 * the browser's own note of a WebSocket that could not connect while the
 * server was down).
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

export async function register(page: Page, url: string, name: string): Promise<void> {
  await page.goto(url);
  await page.locator("#name").fill(name);
  await page.locator("form.register button[type=submit]").click();
  await expect(page.locator("main.lobby")).toBeVisible();
}

export async function shot(page: Page, name: string): Promise<void> {
  for (const [width, height] of [[1280, 800], [360, 740]] as const) {
    await page.setViewportSize({ width, height });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}x${height}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** Starts a game of `level` on deal `deal` from the lobby. */
export async function startGame(page: Page, level: string, deal?: number): Promise<void> {
  await page.locator(`button.level[data-level="${level}"]`).click();
  if (deal !== undefined) await page.locator("#deal").fill(String(deal));
  await page.locator('[data-action="play"]').click();
  const confirm = page.locator(".dialog .yes");
  if (await confirm.isVisible().catch(() => false)) await confirm.click();
  await expect(page.locator("main.game")).toBeVisible();
}

export function version(page: Page): Promise<number> {
  return page.locator("main.game").getAttribute("data-v").then(Number);
}

/** Drags the card (and all on it) onto column `to` with the mouse. */
export async function drag(page: Page, card: string, to: number): Promise<void> {
  const source = page.locator(`.card.up[data-card="${card}"]`);
  const box = await source.boundingBox();
  const target = await page.locator(`.column[data-column="${to}"]`).boundingBox();
  if (!box || !target) throw new Error(`cannot see ${card} or column ${to}`);
  await page.mouse.move(box.x + box.width / 2, box.y + 6);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 + 10, box.y + 20, { steps: 2 });
  await page.mouse.move(target.x + target.width / 2, target.y + target.height - 8, { steps: 6 });
  await page.mouse.up();
}

/** Waits until the board shows version `v`. */
export async function atVersion(page: Page, v: number): Promise<void> {
  await expect(page.locator("main.game")).toHaveAttribute("data-v", String(v));
}

/** Taps a card where it shows even when others lie on it (its top edge). */
export async function tap(page: Page, card: string): Promise<void> {
  await page.locator(`.card.up[data-card="${card}"]`).click({ position: { x: 12, y: 6 } });
}
