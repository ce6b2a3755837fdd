// A whole game won in the browser by clicking, then the results and the statistics.
import type { Page } from "@playwright/test";
import { knownDeal, winningLine } from "./server";
import { atVersion, drag, expect, expectColumnsFit, register, shot, SIZES, startGame, tap, test, uniqueName, version } from "./fixtures";

/** Each column's cards inside `scope` ("down" for a face-down one). */
function columns(page: Page, scope: string): Promise<string[][]> {
  return page.locator(`${scope} .columns .column`).evaluateAll((nodes) =>
    nodes.map((node) => [...node.querySelectorAll(".card")].map((card) => (card as HTMLElement).dataset.card ?? "down")),
  );
}

test("a whole game won by clicking, then the results screen and the statistics", async ({ page, server, watch }) => {
  const deal = knownDeal();
  const line = await winningLine("medium", deal);
  await page.goto(server.url);
  await expect(page.locator("form.register")).toBeVisible();
  await shot(page, "signin");
  await register(page, server.url, uniqueName("win"));
  await page.locator('button.level[data-level="medium"]').click();
  await expect(page.locator('[data-stat="wins"] dd')).toHaveText("0");
  await shot(page, "lobby");
  await startGame(page, "medium", deal);
  await expect(page.locator(".level-name")).toContainText(String(deal));
  await shot(page, "game-start");
  const dealt = await columns(page, "main.game");

  let taps = 0;
  for (const [index, action] of line.entries()) {
    const v = await version(page);
    if (action.type === "deal") {
      await page.locator(".stock").click();
      await atVersion(page, v + 1);
      continue;
    }
    const card = action.card ?? "";
    await tap(page, card); // tap: the server picks where it fits
    await atVersion(page, v + 1);
    // said to a screen reader too, the card by name ("queen of spades to column 5")
    if (index === 0) await expect(page.locator(".said")).toHaveText(/^(ace|jack|queen|king|\d+) of \w+ to column \d+/);
    const landed = page.locator(`.card.up[data-card="${card}"]`);
    const column = (await landed.count()) ? await landed.locator("xpath=..").getAttribute("data-column") : null;
    if (column === null || Number(column) === action.to) {
      taps += 1;
    } else {
      // auto-move chose another place than the solver's line: take it back and drag it there
      await page.locator('[data-action="undo"]').first().click();
      await atVersion(page, v + 2);
      await drag(page, card, action.to ?? 0);
      await atVersion(page, v + 3);
    }
    if (index === 20) {
      // a long column here (20 cards in column 7): drawn whole, inside the table, on both screens
      for (const [width, height] of SIZES) {
        await page.setViewportSize({ width, height });
        expect(await expectColumnsFit(page, "main.game"), `${width}x${height}`).toBeGreaterThanOrEqual(19);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
      await shot(page, "game-midway");
    }
  }
  expect(taps).toBeGreaterThan(line.length / 2);

  const results = page.locator("main.results.won");
  await expect(results).toBeVisible();
  await expect(results.locator("h2")).toHaveText("You won!");
  await expect(page.locator(".said")).toHaveText(/Suit complete: \w+\. You won!$/);
  await expect(results.locator('[data-result="suits"] dd')).toHaveText("4");
  const moves = Number(await results.locator('[data-result="moves"] dd').textContent());
  expect(moves).toBeGreaterThanOrEqual(line.length);
  const undos = Number(await results.locator('[data-result="undos"] dd').textContent());
  const score = await results.locator('[data-result="score"] dd').textContent();
  await expect(results.locator('[data-stat="wins"] dd')).toHaveText("1");
  await expect(results.locator('[data-stat="losses"] dd')).toHaveText("0");
  await expect(results.locator('[data-stat="winRate"] dd')).toHaveText("100%");
  await expect(results.locator('[data-stat="currentStreak"] dd')).toHaveText("1");
  await expect(results.locator('[data-stat="bestStreak"] dd')).toHaveText("1");
  await shot(page, "results");

  await page.locator("header nav button", { hasText: "Statistics" }).click();
  const row = page.locator('tr[data-level="medium"] td');
  await expect(row.nth(0)).toHaveText("1"); // games
  await expect(row.nth(1)).toHaveText("1"); // wins
  await expect(row.nth(5)).toHaveText("1"); // best streak
  await expect(row.nth(8)).toHaveText(String(moves)); // fewest moves
  await shot(page, "statistics");

  await page.locator("header nav button", { hasText: "Past games" }).click();
  const game = page.locator("ul.games li").first();
  await expect(game.locator(".status")).toHaveText("Won");
  await shot(page, "history");
  await game.locator('[data-action="replay"]').click();
  await expect(page.locator("ol.replay-actions li")).toHaveCount(moves + undos);
  await expect(page.locator(".replay .step")).toContainText(`Step 0 of ${moves + undos}`);
  await page.locator('[data-action="next"]').click();
  await expect(page.locator(".replay .step")).toContainText("Step 1 of");
  await shot(page, "replay");
  // the board from the deal to the win: every suit taken back to its column, then off again
  await page.keyboard.press("Home");
  await expect(page.locator(".replay-board")).toHaveAttribute("data-step", "0");
  expect(await columns(page, ".replay-board")).toEqual(dealt);
  await expect(page.locator(".replay-board .foundation.full")).toHaveCount(0);
  await page.keyboard.press("End");
  await expect(page.locator(".replay-board")).toHaveAttribute("data-step", String(moves + undos));
  await expect(page.locator(".replay-board .foundation.full")).toHaveCount(4);
  // a screen reader names each suit, as it names cards, not its symbols ("♥ K♥")
  for (const slot of await page.locator(".replay-board .foundation.full").all()) {
    await expect(slot).toHaveAccessibleName(/^Completed suit: (spades|hearts|diamonds|clubs)$/);
  }
  await expect(page.locator(".replay-board .card")).toHaveCount(0);
  await expect(page.locator(".replay-board .score")).toHaveText(score ?? "");
  expect(watch.problems).toEqual([]);
});

