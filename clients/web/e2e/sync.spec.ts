// Two tabs of one player, a reload that continues the game, and a server restart mid-game.
import { knownDeal, TestServer } from "./server";
import { atVersion, drag, expect, register, startGame, tap, test, uniqueName, watch, type Watch } from "./fixtures";

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
