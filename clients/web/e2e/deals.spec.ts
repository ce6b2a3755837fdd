// A winnable deal chosen on the level screen, its statistics kept apart, a typed
// deal number kept, and a deal proved lost said before the first move.
import { TestServer } from "./server";
import { atVersion, expect, register, shot, startGame, test, uniqueName } from "./fixtures";

test("a winnable deal from the level screen, with statistics of its own", async ({ page, server }) => {
  await register(page, server.url, uniqueName("win"));
  await page.locator('button.level[data-level="medium"]').click();
  await expect(page.locator("#deal")).toBeVisible();
  await page.locator('[data-deal-kind="winnable"]').click();
  await expect(page.locator('[data-deal-kind="winnable"]')).toHaveAttribute("aria-checked", "true");
  await expect(page.locator("#deal")).toHaveCount(0); // a winnable deal is not chosen by number
  await expect(page.locator(".deal-choice .note")).toHaveText("A deal the solver has won: it can be won.");
  await shot(page, "lobby-winnable");
  await page.locator('[data-action="play"]').click();
  await expect(page.locator("main.game")).toBeVisible();
  await expect(page.locator(".status .level-name")).toHaveText("Medium"); // its number is withheld until it ends

  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  const results = page.locator("main.results.lost");
  await expect(results.locator("h3")).toHaveText("Medium, winnable deals: your statistics");
  await expect(results.locator('[data-stat="losses"] dd')).toHaveText("1");

  // the level screen shows both rows: the random one untouched
  await results.locator('[data-action="levels"]').click();
  const random = page.locator("section.level-stats:not(.winnable)");
  const winnable = page.locator("section.level-stats.winnable");
  await expect(winnable.locator("h3")).toHaveText("Medium, winnable deals: your statistics");
  await expect(winnable.locator('[data-stat="losses"] dd')).toHaveText("1");
  await expect(random.locator('[data-stat="losses"] dd')).toHaveText("0");
  // the choice is remembered
  await expect(page.locator('[data-deal-kind="winnable"]')).toHaveAttribute("aria-checked", "true");

  await page.locator("nav button", { hasText: "Statistics" }).click();
  const row = page.locator('tr[data-level="medium"][data-winnable="true"]');
  await expect(row.locator("th")).toHaveText("Medium (winnable)");
  await expect(page.locator('tr[data-level="medium"][data-winnable="false"] th')).toHaveText("Medium");
  await expect(page.locator('tr[data-winnable="true"]')).toHaveCount(1);

  // a random deal is still one click away, with its number
  await page.locator("nav button", { hasText: "Levels" }).click();
  await page.locator('[data-deal-kind="random"]').click();
  await page.locator("#deal").fill("637");
  // the screen is drawn again (a choice, stats arriving) without losing what was typed
  await page.locator('button.level[data-level="hard"]').click();
  await expect(page.locator("#deal")).toHaveValue("637");
  await page.locator('[data-action="play"]').click();
  await expect(page.locator(".status .level-name")).toHaveText("Hard #637");
});

test("a deal proved lost is said at the deal, not blamed on a move", async ({ page, watch }) => {
  watch.allow.push(/WebSocket connection to .* failed/); // the page outlives this test's own server
  // hard deal 1 is proved lost at once (the engine's `solve` says lost with 0 nodes); no
  // background search for winnable deals, which the optional check would give way to
  const server = new TestServer({ lostBudgetMs: 2000, winnablePool: 0 });
  await server.start();
  try {
    await register(page, server.url, uniqueName("lost"));
    await startGame(page, "hard", 1);
    const notice = page.locator(".banner.dead-end");
    await expect(notice.locator("[data-lost]")).toHaveAttribute("data-lost", "deal");
    await expect(notice).toContainText("This deal cannot be won, whatever is played: none of your moves spoiled it.");
    await expect(notice).not.toContainText("no longer");
    await expect(notice.locator('[data-action="new"]')).toBeEnabled();
    await expect(notice.locator('[data-action="resign"]')).toBeEnabled();
    // undo and restart lead back to this deal: not offered as ways out
    await expect(notice).toContainText("Resign, or start a new game.");
    await expect(notice.locator('[data-action="restart"], [data-action="undo"]')).toHaveCount(0);
    await expect(page.locator(".tools [data-action='undo']")).toBeDisabled();
    // a hint still names a move while there is one (R20), beside the notice that none can win
    await page.locator('.tools [data-action="hint"]').click();
    await expect(page.locator(".banner.hint")).toContainText("Hint: move");
    await expect(page.locator(".banner.hint.none")).toHaveCount(0);
    await expect(notice.locator("[data-lost]")).toHaveAttribute("data-lost", "deal"); // still said
    await shot(page, "game-lost-deal");
    // a small phone, the banner taking its height: the deal's short columns were folded,
    // every rank but the top one's out of sight, and did not fit even so; the page scrolls
    // (480 px high with the hint's banner above the table, which now goes over the header)
    await page.setViewportSize({ width: 320, height: 400 });
    await expect(page.locator(".columns .card.up").first()).toBeVisible();
    await expect.poll(() => page.locator(".card.folded").count()).toBe(0);
  } finally {
    await server.dispose();
  }
});

test("a position lost by the moves says so, and undo and restart are the ways out", async ({ page, watch }) => {
  watch.allow.push(/WebSocket connection to .* failed/); // the page outlives this test's own server
  // hard deal 5 is won by the solver, but dealing the stock at once loses it (the server's own
  // test of `lost_position` uses the same deal and move: tests/server/test_lost_at_deal.py)
  const server = new TestServer({ lostBudgetMs: 5000, winnablePool: 0 });
  await server.start();
  try {
    await register(page, server.url, uniqueName("spoilt"));
    await startGame(page, "hard", 5);
    await page.locator('.tools [data-action="deal"]').click();
    await atVersion(page, 1);
    const notice = page.locator(".banner.dead-end");
    await expect(notice.locator("[data-lost]")).toHaveAttribute("data-lost", "position");
    await expect(notice).toContainText("This position can no longer be won.");
    await expect(notice).toContainText("Undo, restart, resign or start a new game.");
    await expect(notice).not.toContainText("whatever is played"); // not blamed on the deal
    for (const way of ["undo", "restart", "resign", "new"]) await expect(notice.locator(`[data-action="${way}"]`)).toBeEnabled();
    await shot(page, "game-lost-position");

    // undo: the position before the deal is not proved lost, and the notice goes
    await notice.locator('[data-action="undo"]').click();
    await atVersion(page, 2);
    await expect(page.locator(".banner.dead-end")).toHaveCount(0);
    await expect(page.locator(".stock")).toBeEnabled();

    // lost again, then restart from the notice, behind its confirmation
    await page.locator(".stock").click();
    await atVersion(page, 3);
    await expect(notice.locator("[data-lost]")).toHaveAttribute("data-lost", "position");
    await notice.locator('[data-action="restart"]').click();
    await expect(page.locator(".dialog")).toContainText("Restart this deal from the beginning?");
    await page.locator(".dialog .yes").click();
    await atVersion(page, 4);
    await expect(page.locator(".banner.dead-end")).toHaveCount(0);
    await expect(page.locator(".stock")).toBeEnabled();

    // and once more: a new game and resigning ask first, and cancelling leaves the game as it was
    await page.locator(".stock").click();
    await atVersion(page, 5);
    await expect(notice.locator("[data-lost]")).toHaveAttribute("data-lost", "position");
    await notice.locator('[data-action="new"]').click();
    await expect(page.locator(".dialog")).toContainText("Start a new game? The unfinished one counts as a loss.");
    await page.locator(".dialog .no").click();
    await notice.locator('[data-action="resign"]').click();
    await expect(page.locator(".dialog")).toContainText("Give up this game? It counts as a loss.");
    await page.locator(".dialog .yes").click();
    await expect(page.locator("main.results.lost")).toContainText("You resigned.");
  } finally {
    await server.dispose();
  }
});
