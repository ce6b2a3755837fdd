// Tap and drag moves, a refused move, undo, hint, deal, restart and pause on a real page.
import type { Page } from "@playwright/test";
import { knownDeal } from "./server";
import { join } from "node:path";
import { atVersion, boxOf, drag, expect, expectColumnsFit, fingers, type Finger, register, settled, shot, SHOTS, startGame, still, tap, test, touchDrag, uniqueName, version, watch, wideName, type Watch } from "./fixtures";

async function columns(page: Page): Promise<string[][]> {
  return page.locator(".columns .column").evaluateAll((nodes) =>
    nodes.map((node) => [...node.querySelectorAll(".card")].map((card) => (card as HTMLElement).dataset.card ?? "down")),
  );
}

async function columnOf(page: Page, card: string): Promise<number> {
  return Number(await page.locator(`.card.up[data-card="${card}"]`).locator("xpath=..").getAttribute("data-column"));
}

test("tap, drag, a refused move, undo, hint, deal, restart and pause", async ({ page, server }) => {
  await register(page, server.url, uniqueName("play"));
  await startGame(page, "medium", knownDeal());
  const dealt = await columns(page);

  // a tap moves the card where it fits (the server's auto-move): QD onto KD in column 7
  await tap(page, "QD");
  await atVersion(page, 1);
  expect(await columnOf(page, "QD")).toBe(7);
  await expect(page.locator(".status .moves")).toHaveText("1");

  // a drag carries the card with everything on it
  const from = await columnOf(page, "9D");
  await drag(page, "9D", 1);
  await atVersion(page, 2);
  expect(await columnOf(page, "9D")).toBe(1);
  expect(await page.locator(`.column[data-column="${from}"] .card.up[data-card="9D"]`).count()).toBe(0);

  // a refused drag springs back with the server's reason
  const twoFrom = await columnOf(page, "2D");
  const board = await columns(page);
  const wrong = board.findIndex((cards, i) => i + 1 !== twoFrom && cards.length > 0 && cards.at(-1) !== "3D") + 1;
  await drag(page, "2D", wrong);
  await expect(page.locator(".toast.error")).toContainText("2♦ must go onto a card"); // the card as the table shows it
  // and by name for a screen reader, as a hint's card is
  expect(await page.locator(".toast.error").ariaSnapshot()).toContain("2 of diamonds must go onto a card");
  expect(await page.locator(".toast.error").ariaSnapshot()).not.toContain("2♦");
  expect(await version(page)).toBe(2);
  expect(await columnOf(page, "2D")).toBe(twoFrom);
  await expect(page.locator('.card.up[data-card="2D"]')).not.toHaveClass(/dragging/);
  await expect.poll(() => page.locator('.card.up[data-card="2D"]').evaluate((n) => (n as HTMLElement).style.transform)).toBe("");

  // undo takes the drag back
  await page.locator('.tools [data-action="undo"]').click();
  await atVersion(page, 3);
  expect(await columnOf(page, "9D")).toBe(from);

  // the hint is shown on the board
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 4);
  await expect(page.locator(".banner.hint")).toContainText("Hint:");
  await expect(page.locator(".card.hinted, .stock.hinted")).toHaveCount(1);
  await shot(page, "game-hint");

  // the keyboard: a focused card and a column number
  await page.locator('.card.up[data-card="9D"]').focus();
  await page.keyboard.press("1");
  await atVersion(page, 5);
  expect(await columnOf(page, "9D")).toBe(1);

  // deal the stock, once
  await expect(page.locator(".stock")).toBeEnabled();
  await page.locator(".stock").click();
  await atVersion(page, 6);
  await expect(page.locator(".stock")).toBeDisabled();
  const afterDeal = await columns(page);
  expect(afterDeal.slice(0, 3).map((cards, i) => cards.length - dealt[i].length)).not.toEqual([0, 0, 0]);

  // restart, behind a confirmation: the deal's layout again
  await page.locator('.tools [data-action="restart"]').click();
  await expect(page.locator(".dialog")).toBeVisible();
  await page.locator(".dialog .no").click();
  await expect(page.locator(".dialog")).toHaveCount(0);
  expect(await version(page)).toBe(6);
  await page.locator('.tools [data-action="restart"]').click();
  await page.locator(".dialog .yes").click();
  await atVersion(page, 7);
  expect(await columns(page)).toEqual(dealt);
  await expect(page.locator(".stock")).toBeEnabled();

  // the clock ticks between events; pause hides the board and stops it; continue shows it again
  const running = await page.locator(".clock").textContent();
  await expect(page.locator(".clock")).not.toHaveText(running ?? "", { timeout: 3000 });
  await page.locator('.tools [data-action="pause"]').click();
  await expect(page.locator(".paused")).toBeVisible();
  await expect(page.locator(".table")).toHaveCount(0);
  const stopped = await page.locator(".clock").textContent();
  await shot(page, "paused");
  // keys still reach the server, which refuses them with `paused`: the pause screen stays, no error
  const pausedAt = await version(page);
  await expect(page.locator(".toast.error")).toHaveCount(0, { timeout: 6000 }); // earlier ones gone
  await page.keyboard.press("h");
  await page.keyboard.press("u");
  await page.waitForTimeout(1500);
  expect(await page.locator(".toast.error").count()).toBe(0); // now, not after the toast's 4 s
  await expect(page.locator(".paused")).toBeVisible();
  expect(await version(page)).toBe(pausedAt);
  await expect(page.locator(".clock")).toHaveText(stopped ?? "");
  await page.locator('[data-action="resume-big"]').click();
  await expect(page.locator(".table")).toBeVisible();
  expect(await columns(page)).toEqual(dealt);

  // Enter on a focused card is a tap
  await page.locator('.card.up[data-card="QD"]').focus();
  await page.keyboard.press("Enter");
  await atVersion(page, 8);
  expect(await columnOf(page, "QD")).toBe(7);
  await page.keyboard.press("u");
  await atVersion(page, 9);
  expect(await columns(page)).toEqual(dealt);
});

test("resign asks first, then shows the results with the level's statistics", async ({ page, server }) => {
  await register(page, server.url, uniqueName("quit"));
  await startGame(page, "hard", 1);
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  const results = page.locator("main.results.lost");
  await expect(results).toBeVisible();
  await expect(results).toContainText("You resigned.");
  await expect(results.locator('[data-stat="losses"] dd')).toHaveText("1");
  await expect(results.locator('[data-stat="winRate"] dd')).toHaveText("0%");
});

test("a level with no games played shows no win rate, as it shows no best score", async ({ page, server }) => {
  await register(page, server.url, uniqueName("none"));
  await page.locator('button.level[data-level="hard"]').click();
  const lobby = page.locator("main.lobby .level-stats");
  await expect(lobby.locator('[data-stat="wins"] dd')).toHaveText("0");
  await expect(lobby.locator('[data-stat="winRate"] dd')).toHaveText("—");
  await page.locator("header nav button", { hasText: "Statistics" }).click();
  const row = page.locator('.stats-page tr[data-level="hard"][data-winnable="false"]');
  await expect(row.locator("td").nth(0)).toHaveText("0"); // games
  await expect(row.locator("td").nth(3)).toHaveText("—"); // win rate
  await expect(row.locator("td").nth(6)).toHaveText("—"); // best score
});

test("the columns are fitted to the room under the status after a redraw at 360 px", async ({ page, server }) => {
  // The status was drawn with its clock and score empty, a line shorter at 360 px: a
  // redraw (a hint here) fitted the columns to 30 px more room than there was (3 of 3).
  await register(page, server.url, uniqueName("room"));
  await startGame(page, "three-blind-mice", 1);
  await page.setViewportSize({ width: 360, height: 740 });
  await settled(page);
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  await still(page);
  const room = await page.$eval(".columns", (columns) => ({
    given: columns.style.getPropertyValue("--room"),
    left: `${Math.floor(window.innerHeight - columns.getBoundingClientRect().top - window.scrollY - 10)}px`,
  }));
  expect(room.given).toBe(room.left);
});

test("three blind mice shows its ten columns and the reserve", async ({ page, server }) => {
  await register(page, server.url, uniqueName("mice"));
  await startGame(page, "three-blind-mice", 1);
  await expect(page.locator(".columns .column")).toHaveCount(10);
  await expect(page.locator(".reserve .card.up")).not.toHaveCount(0);
  await expect(page.locator(".stock")).toHaveCount(0); // no stock on this level (R5)
  await expect(page.locator('.tools [data-action="deal"]')).toBeDisabled();
  const reserve = await boxOf(page, ".reserve");
  const first = await boxOf(page, ".columns");
  expect(reserve.y + reserve.height).toBeLessThanOrEqual(first.y); // above the columns
  await shot(page, "game-three-blind-mice");

  // a phone on its side: ten columns of cards narrower than the window's width suggests, each pip inside its card
  await page.setViewportSize({ width: 844, height: 390 });
  await settled(page);
  const overflows = await page.locator(".columns .column .card.up:last-child").evaluateAll((cards) =>
    cards.flatMap((card) => {
      const pip = document.createRange();
      pip.selectNodeContents(card.querySelector(".center") as Node);
      const glyph = pip.getBoundingClientRect();
      const box = card.getBoundingClientRect();
      const inside = glyph.left >= box.left && glyph.right <= box.right && glyph.bottom <= box.bottom;
      return inside ? [] : [`${(card as HTMLElement).dataset.card}: pip ${glyph.width.toFixed(0)} px wide on a ${box.width.toFixed(0)} px card`];
    }),
  );
  expect(overflows).toEqual([]);
  await page.screenshot({ path: join(SHOTS, "game-three-blind-mice-844x390.png") });
  await page.setViewportSize({ width: 1280, height: 800 });
});

test("a hint naming a reserve card outlines it, as it does a column's card", async ({ page, server }) => {
  // three blind mice deal 29: the deal's hint is 4D from the reserve to column 6
  await register(page, server.url, uniqueName("reserve"));
  await startGame(page, "three-blind-mice", 29);
  const tableTop = () => page.locator(".table").evaluate((table) => table.getBoundingClientRect().top);
  const before = await tableTop();
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  await expect(page.locator(".banner.hint")).toContainText("4♦");
  // shown over the header: the table under a pointer aimed at a card does not move (it went 43 px down)
  expect(await tableTop()).toBe(before);
  const hinted = page.locator(".card.hinted");
  await expect(hinted).toHaveCount(1);
  await expect(hinted).toHaveAttribute("data-card", "4D");
  await expect(page.locator('.reserve .card[data-card="4D"]')).toHaveClass(/hinted/);
  expect(await page.$eval(".card.hinted", (card) => getComputedStyle(card).boxShadow)).not.toBe("none");
  await expect(page.locator(".column.hint-target")).toHaveAttribute("data-column", "6");
  // the words go after a while (they cover the status line), the card stays marked
  await expect(page.locator(".banner.hint")).toHaveCount(0, { timeout: 15_000 });
  await expect(page.locator(".card.hinted")).toHaveAttribute("data-card", "4D");
});

test("a reserve card is dragged alone, not with the reserve card beside it", async ({ page, server }) => {
  // three blind mice deal 11: the reserve is 6S 5C, and 6S goes onto 7S in column 5
  await register(page, server.url, uniqueName("carry"));
  await startGame(page, "three-blind-mice", 11);
  await still(page);
  const reserve = await page.locator(".reserve .card.up").evaluateAll((cards) => cards.map((card) => (card as HTMLElement).dataset.card));
  expect(reserve).toEqual(["6S", "5C"]); // the first dragged: the other one lies after it
  // the cards in the hand
  const held = () =>
    page.$$eval(".card.up", (cards) =>
      cards.filter((each) => each.classList.contains("dragging") || (each as HTMLElement).style.transform !== "").map((each) => (each as HTMLElement).dataset.card),
    );
  const card = await boxOf(page, '.card.up[data-card="6S"]');
  const target = await boxOf(page, '.column[data-column="5"]');
  await page.mouse.move(card.x + card.width / 2, card.y + 6);
  await page.mouse.down();
  await page.mouse.move(card.x + card.width / 2 + 10, card.y + 40, { steps: 4 });
  expect(await held()).toEqual(["6S"]);
  await page.mouse.move(target.x + target.width / 2, target.y + target.height - 8, { steps: 6 });
  expect(await held()).toEqual(["6S"]);
  await page.mouse.up();
  await atVersion(page, 1);
  expect(await columnOf(page, "6S")).toBe(5);
  await expect(page.locator(".reserve .card.up")).toHaveCount(1);
  await expect(page.locator('.reserve .card.up[data-card="5C"]')).toBeVisible();
});

test("a dead end says so and offers the ways out", async ({ page, server }) => {
  // hard deal 637: dealing the stock at once leaves no useful move (found with the engine's is_stuck)
  await register(page, server.url, uniqueName("stuck"));
  await startGame(page, "hard", 637);
  await expect(page.locator(".banner.dead-end")).toHaveCount(0);
  await page.locator('.tools [data-action="deal"]').click();
  await atVersion(page, 1);
  const notice = page.locator(".banner.dead-end");
  await expect(notice).toContainText("No useful move is left.");
  await expect(notice.locator('[data-action="restart"]')).toBeEnabled();
  await expect(notice.locator('[data-action="resign"]')).toBeEnabled();
  await expect(notice.locator('[data-action="new"]')).toBeEnabled();
  await shot(page, "game-stuck");
  // a hint here has no move to give, and says why
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 2);
  const hint = page.locator(".banner.hint.none");
  await expect(hint).toHaveAttribute("data-reason", "stuck");
  await expect(hint).toHaveText("No move is left and the stock is dealt.");
  await expect(page.locator(".card.hinted, .stock.hinted")).toHaveCount(0);
  await notice.locator('[data-action="undo"]').click();
  await atVersion(page, 3);
  await expect(page.locator(".banner.dead-end")).toHaveCount(0);
});

test("a dead end is said once, not at every redraw, and the notices stay one live region", async ({ page, server }) => {
  // hard deal 637, dealt at once: a dead end (above)
  await register(page, server.url, uniqueName("alert"));
  await startGame(page, "hard", 637);
  await page.locator('.tools [data-action="deal"]').click();
  await atVersion(page, 1);
  await expect(page.locator(".banner.dead-end")).toContainText("No useful move is left.");
  await expect(page.locator(".alerted")).toHaveText(/^No useful move is left\./);
  // from here on: every alert put in the page, every change of what the alert region says, every notices region
  await page.evaluate(() => {
    const seen = { alerts: [] as string[], alerted: 0, notices: new Set<Element>() };
    (window as unknown as { seen: typeof seen }).seen = seen;
    const notices = () => document.querySelectorAll(".notices").forEach((node) => seen.notices.add(node));
    notices();
    new MutationObserver((changes) => {
      for (const change of changes) {
        if ((change.target as Element).closest?.(".alerted")) seen.alerted++;
        for (const node of change.addedNodes) {
          if (!(node instanceof HTMLElement)) continue;
          for (const alert of [node, ...node.querySelectorAll("[role=alert]")]) {
            if (alert.getAttribute("role") === "alert") seen.alerts.push(alert.textContent ?? "");
          }
        }
      }
      notices();
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
  // ordinary redraws: a hint (its words come and go), a pause and the game resumed
  await page.keyboard.press("h");
  await atVersion(page, 2);
  await expect(page.locator(".notices .banner.hint")).toHaveCount(1);
  await page.keyboard.press("p");
  await expect(page.locator(".paused")).toBeVisible();
  await page.locator('[data-action="resume-big"]').click();
  await expect(page.locator(".paused")).toHaveCount(0);
  await expect(page.locator(".banner.dead-end")).toBeVisible();
  expect(await page.locator(".notices .banner.hint").count()).toBe(0); // said before the pause, not again
  const seen = await page.evaluate(() => {
    const { alerts, alerted, notices } = (window as unknown as { seen: { alerts: string[]; alerted: number; notices: Set<Element> } }).seen;
    return { alerts, alerted, notices: notices.size };
  });
  expect(seen).toEqual({ alerts: [], alerted: 0, notices: 1 });
  // a way out: the alert region says nothing any more, and says the next dead end again
  await page.locator('.banner.dead-end [data-action="undo"]').click();
  await expect(page.locator(".banner.dead-end")).toHaveCount(0);
  await expect(page.locator(".alerted")).toHaveText("");
  await page.locator('.tools [data-action="deal"]').click();
  await expect(page.locator(".alerted")).toHaveText(/^No useful move is left\./);
});

test("a phone on its side keeps every column's cards inside the window, the dead-end banner open too", async ({ page, server }) => {
  // hard deal 637: dealing the stock at once leaves no useful move, so the banner opens
  await register(page, server.url, uniqueName("side"));
  await startGame(page, "hard", 637);
  const lowest = () =>
    page.evaluate(() => {
      const cards = [...document.querySelectorAll(".table .card, .table .stock, .table .foundation")];
      return {
        bottom: Math.max(...cards.map((card) => card.getBoundingClientRect().bottom)),
        right: Math.max(...cards.map((card) => card.getBoundingClientRect().right)),
        height: window.innerHeight,
        width: window.innerWidth,
        scroll: document.documentElement.scrollHeight,
      };
    });
  for (const banner of [false, true]) {
    if (banner) {
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.locator('.tools [data-action="deal"]').click();
      await atVersion(page, 1);
      await expect(page.locator(".banner.dead-end")).toBeVisible();
    }
    for (const [width, height] of [[667, 375], [740, 360], [844, 390], [915, 412]]) {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => window.scrollTo(0, 0));
      await settled(page);
      const found = await lowest();
      const at = `${width}x${height}${banner ? " with the banner" : ""}`;
      expect(found.bottom, `lowest card's bottom at ${at}`).toBeLessThanOrEqual(found.height);
      expect(found.right, `rightmost card at ${at}`).toBeLessThanOrEqual(found.width);
      expect(found.scroll, `the page's height at ${at}`).toBeLessThanOrEqual(found.height);
      await expect(page.locator(".tools [data-action='hint']")).toBeInViewport();
      if (banner) await expect(page.locator(".banner.dead-end [data-action='new']")).toBeInViewport();
      await page.screenshot({ path: join(SHOTS, `game-side-${width}x${height}${banner ? "-banner" : ""}.png`) });
    }
  }
  // a hint's words here go beside the table, after the banner, not over it: over the
  // header's place (beside the table at the bottom), they hid the banner's ways out
  await page.setViewportSize({ width: 640, height: 360 });
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 2);
  await expect(page.locator("main.game .banner.hint")).toBeVisible();
  await expect(page.locator(".notices .banner.hint")).toHaveCount(0);
  for (const action of ["undo", "restart", "resign", "new"]) {
    const shown = await page.locator(`.banner.dead-end [data-action='${action}']`).evaluate((button) => {
      const box = button.getBoundingClientRect();
      return button.contains(document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2));
    });
    expect(shown, `${action} in sight, under nothing`).toBe(true);
    await expect(page.locator(`.banner.dead-end [data-action='${action}']`)).toBeInViewport();
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await expect(page.locator(".notices .banner.hint")).toHaveCount(1); // the layout changed: over the header
});

// Relaxed deal 7289269503483556, played until column 2 holds 34 face-up cards: a move with
// no column is a tap (the server picks where it goes), "deal" deals the stock.
const LONG_COLUMN: (string | [string, number])[] = [
  ["2C", 4], ["7H", 1], "TD", ["5S", 2], ["7S", 1], "6C", ["2D", 1], ["AD", 4], "QS", ["TH", 4], ["4S", 2], "9C",
  ["QD", 2], ["TH", 5], "TC", ["3D", 2], ["6S", 1], "3C", ["9S", 5], ["6H", 1], "JS", "deal", ["4H", 1], "3S",
  ["KD", 3], ["4H", 2], "4D", ["5H", 3], ["9H", 1], "AS", ["8D", 4], ["8H", 4], "QC", ["2H", 3], ["2H", 2], "JC",
];

test("a column too long to fit at 11 px strips: smaller cards, every card inside the window; on a phone on its side, its top card in sight", async ({ page, server }) => {
  await register(page, server.url, uniqueName("long"));
  await startGame(page, "relaxed", 7289269503483556);
  for (const action of LONG_COLUMN) {
    const v = await version(page);
    if (action === "deal") {
      await page.keyboard.press("d");
    } else if (typeof action === "string") {
      await tap(page, action);
    } else {
      await page.locator(`.card.up[data-card="${action[0]}"]`).focus();
      await page.keyboard.press(String(action[1] % 10));
    }
    await atVersion(page, v + 1);
  }
  await expect(page.locator('.column[data-column="2"] .card.up')).toHaveCount(34);
  const where = () =>
    page.evaluate(() => {
      const column = document.querySelector('.column[data-column="2"]') as HTMLElement;
      const cards = [...column.querySelectorAll<HTMLElement>(".card.up")].map((card) => card.getBoundingClientRect());
      return {
        window: { width: window.innerWidth, height: window.innerHeight },
        column: column.getBoundingClientRect().toJSON() as DOMRect,
        cards: cards.map((box) => ({ top: box.top, bottom: box.bottom, left: box.left, right: box.right })),
        strips: cards.slice(1).map((box, i) => box.top - cards[i].top),
        folded: column.querySelectorAll(".card.folded").length,
      };
    });
  for (const [width, height] of [[1280, 800], [360, 740]]) {
    await page.setViewportSize({ width, height });
    expect(await expectColumnsFit(page, "main.game"), `${width}x${height}`).toBe(34); // strips of one height, at least 11 px
    const found = await where();
    const at = `${width}x${height}`;
    expect(found.folded, at).toBe(0);
    for (const [index, card] of found.cards.entries()) {
      expect(card.top, `${at}: card ${index + 1}'s top`).toBeGreaterThanOrEqual(0);
      expect(card.bottom, `${at}: card ${index + 1}'s bottom`).toBeLessThanOrEqual(found.window.height);
      expect(card.right, `${at}: card ${index + 1}'s right`).toBeLessThanOrEqual(found.window.width);
    }
    expect(found.column.bottom, `${at}: the column, where a card is dropped`).toBeLessThanOrEqual(found.window.height);
    await page.screenshot({ path: join(SHOTS, `game-long-column-${width}x${height}.png`) });
  }
  // a phone on its side: no card size fits 34 strips of 11 px; the deepest cards fold, the rest keep their strips
  await page.setViewportSize({ width: 844, height: 390 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await settled(page);
  const side = await where();
  expect(side.folded).toBeGreaterThan(0);
  expect(side.strips.slice(0, side.folded).every((strip) => Math.abs(strip - 3) < 0.5), `folded: ${side.strips.join(" ")}`).toBe(true);
  expect(side.strips.slice(side.folded).every((strip) => strip >= 10.5), `the rest: ${side.strips.join(" ")}`).toBe(true);
  expect(side.cards[side.cards.length - 1].bottom, "the top card's bottom").toBeLessThanOrEqual(side.window.height);
  await expect(page.locator('.column[data-column="2"] .card.up >> nth=-1')).toBeInViewport({ ratio: 1 });
  // a folded card's 3 px edge shows no slivers of its rank
  await expect(page.locator(".card.folded .corner").first()).toHaveCSS("visibility", "hidden");
  await page.screenshot({ path: join(SHOTS, "game-long-column-844x390.png") });
  await page.setViewportSize({ width: 1280, height: 800 });
});

test("a drag survives the board being drawn again under it", async ({ page, server }) => {
  // the page's timers run only when the test says so: the redraw comes in the middle of the drag
  await page.clock.install();
  await register(page, server.url, uniqueName("hold"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD"); // uncovers 9D
  await atVersion(page, 1);
  await page.clock.runFor(100);
  const v = await version(page);
  // a refused drop shows its reason for 4 s, then the page is drawn again to take it away
  await drag(page, "2D", 5);
  await expect(page.locator(".toast.error")).toBeVisible();
  await page.clock.runFor(500); // the spring back's own timer

  const card = await boxOf(page, '.card.up[data-card="9D"]');
  const target = await boxOf(page, '.column[data-column="1"]');
  await page.mouse.move(card.x + card.width / 2, card.y + 6);
  await page.mouse.down();
  await page.mouse.move(card.x + card.width / 2 + 10, card.y + 20, { steps: 2 });
  await page.clock.runFor(5000); // the notice's time is up: a redraw is asked for, mid-drag
  await expect(page.locator('.card.up[data-card="9D"]')).toHaveClass(/dragging/); // still in hand
  await page.mouse.move(target.x + target.width / 2, target.y + target.height - 8, { steps: 6 });
  await page.mouse.up();
  await page.clock.runFor(100);
  await atVersion(page, v + 1);
  expect(await columnOf(page, "9D")).toBe(1);
  await expect(page.locator(".toast.error")).toHaveCount(0); // the redraw it waited for came after
});

test("a card pressed when the window loses the focus does not hold the page's drawing for good", async ({ page, server }) => {
  await register(page, server.url, uniqueName("blur"));
  await startGame(page, "medium", knownDeal());
  await still(page);
  const card = await boxOf(page, '.card.up[data-card="QD"]');
  await page.mouse.move(card.x + card.width / 2, card.y + 6);
  await page.mouse.down();
  await page.evaluate(() => window.dispatchEvent(new Event("blur"))); // its release is never seen
  await page.keyboard.press("h");
  await atVersion(page, 1);
  await expect(page.locator(".banner.hint")).toBeVisible();
  await page.mouse.up();
});

test("a second finger on another card while one drags leaves no card out of place", async ({ browser, server }) => {
  const phone = await browser.newContext({ hasTouch: true, viewport: { width: 400, height: 800 } });
  const page = await phone.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(page, found);
  await register(page, server.url, uniqueName("fingers"));
  await startGame(page, "medium", knownDeal());
  await still(page);
  const first = await boxOf(page, '.column[data-column="5"] .card.up >> nth=-1');
  const second = await boxOf(page, '.column[data-column="6"] .card.up >> nth=-1');
  const a = { x: first.x + first.width / 2, y: first.y + 10, id: 1 };
  const b = { x: second.x + second.width / 2, y: second.y + 10, id: 2 };
  const cdp = await phone.newCDPSession(page);
  const touch = (type: string, touchPoints: { x: number; y: number; id: number }[]) =>
    cdp.send("Input.dispatchTouchEvent", { type: type as "touchStart", touchPoints });
  await touch("touchStart", [a]);
  for (let i = 1; i <= 5; i++) await touch("touchMove", [{ ...a, y: a.y + i * 10 }]);
  await touch("touchStart", [{ ...a, y: a.y + 50 }, b]);
  await touch("touchMove", [{ ...a, y: a.y + 60 }, { ...b, y: b.y + 20 }]);
  await touch("touchEnd", []);
  await expect
    .poll(() => page.$$eval(".card.up", (cards) => cards.filter((card) => (card as HTMLElement).style.transform !== "").length))
    .toBe(0);
  await expect(page.locator(".card.up.dragging")).toHaveCount(0);
  expect(found.problems).toEqual([]);
  await phone.close();
});

test("a finger that wobbles as it taps a card taps it, and one that goes further drags", async ({ browser, server }) => {
  const phone = await browser.newContext({ hasTouch: true, viewport: { width: 400, height: 800 } });
  const page = await phone.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(page, found);
  await register(page, server.url, uniqueName("wobble"));
  await startGame(page, "medium", knownDeal());
  await still(page);
  // QD tapped, its finger 12 px off where it landed as it lifts: the browser clicks (a tap),
  // and the card moves where it fits, onto KD in column 7
  const card = await boxOf(page, '.card.up[data-card="QD"]');
  const at = { x: card.x + card.width / 2, y: card.y + 6, id: 1 };
  const touch = await fingers(page);
  await touch("touchStart", [at]);
  await touch("touchMove", [{ ...at, x: at.x + 6, y: at.y + 1 }]);
  await touch("touchMove", [{ ...at, x: at.x + 12 }]);
  await touch("touchEnd", []);
  await atVersion(page, 1);
  expect(await columnOf(page, "QD")).toBe(7);
  // a finger that goes on drags: 9D onto column 1
  await touchDrag(page, "9D", 1);
  await atVersion(page, 2);
  expect(await columnOf(page, "9D")).toBe(1);
  expect(found.problems).toEqual([]);
  await phone.close();
});

test("on a phone, a finger on the table's felt scrolls the page, and two pinch it", async ({ browser, server }) => {
  const phone = await browser.newContext({ hasTouch: true, isMobile: true, deviceScaleFactor: 2, viewport: { width: 320, height: 360 } });
  const page = await phone.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(page, found);
  await register(page, server.url, uniqueName("felt"));
  await startGame(page, "three-blind-mice", 11);
  await settled(page);
  // ten columns in a short window: the page is taller than it
  expect(await page.evaluate(() => document.documentElement.scrollHeight - window.innerHeight)).toBeGreaterThan(60);
  // a point of the table low in the window 20 px from any card, slot or button (a finger's
  // touch is taken for what lies near it, not only under it)
  const felt = await page.evaluate(() => {
    const table = document.querySelector("main.game .table")!.getBoundingClientRect();
    const things = [...document.querySelectorAll("main.game .table :is(.card, .slot, button)")].map((each) => each.getBoundingClientRect());
    const away = (x: number, y: number) => things.every((box) => Math.max(box.left - x, x - box.right, box.top - y, y - box.bottom) >= 20);
    for (let y = Math.min(table.bottom, window.innerHeight) - 4; y > table.top; y -= 2) {
      // with bare felt 40 px to its right too, for a second finger
      for (let x = table.left + 4; x < table.right - 44; x += 2) if (away(x, y) && away(x + 40, y)) return { x, y };
    }
    return null;
  });
  expect(felt, "bare felt in the window").not.toBeNull();
  const at = { x: felt!.x, y: felt!.y, id: 1 };
  const touch = await fingers(page);
  await touch("touchStart", [at]);
  for (let i = 1; i <= 10; i++) await touch("touchMove", [{ ...at, y: at.y - i * 12 }]);
  await touch("touchEnd", []);
  await expect.poll(() => page.evaluate(() => window.scrollY)).toBeGreaterThan(30);
  await page.evaluate(() => window.scrollTo(0, 0));
  await expect.poll(() => page.evaluate(() => window.scrollY)).toBe(0);

  // two fingers moving apart over the felt zoom in
  const right = { ...at, x: at.x + 40, id: 2 };
  await touch("touchStart", [at, right]);
  for (let i = 1; i <= 10; i++) await touch("touchMove", [at, { ...right, x: right.x + i * 10 }]);
  await touch("touchEnd", []);
  await expect.poll(() => page.evaluate(() => window.visualViewport?.scale ?? 1)).toBeGreaterThan(1.1);
  expect(found.problems).toEqual([]);
  await phone.close();
});

test("on a phone, a finger dragging a card down the table moves it and scrolls nothing", async ({ browser, server }) => {
  const phone = await browser.newContext({ hasTouch: true, isMobile: true, deviceScaleFactor: 2, viewport: { width: 320, height: 360 } });
  const page = await phone.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(page, found);
  await register(page, server.url, uniqueName("hold"));
  await startGame(page, "three-blind-mice", 11);
  await settled(page);
  // scrolled down to the reserve and the columns: the page could scroll back up
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const scrolled = await page.evaluate(() => window.scrollY);
  expect(scrolled).toBeGreaterThan(60);
  // 6S from the reserve down onto 7S in column 5: the card follows the finger, the page stays
  const card = await boxOf(page, '.card.up[data-card="6S"]');
  const target = await boxOf(page, '.column[data-column="5"]');
  const from = { x: card.x + card.width / 2, y: card.y + 6, id: 1 };
  const to = { x: target.x + target.width / 2, y: Math.min(target.y + target.height, 360) - 8 };
  const touch = await fingers(page);
  await touch("touchStart", [from]);
  for (let i = 1; i <= 8; i++) await touch("touchMove", [{ x: from.x + ((to.x - from.x) * i) / 8, y: from.y + ((to.y - from.y) * i) / 8, id: 1 }]);
  expect(await page.evaluate(() => window.scrollY)).toBe(scrolled);
  await expect(page.locator('.card.up[data-card="6S"]')).toHaveClass(/dragging/);
  await touch("touchEnd", []);
  await atVersion(page, 1);
  expect(await columnOf(page, "6S")).toBe(5);
  expect(found.problems).toEqual([]);
  await phone.close();
});

test("the hint's outline leaves the cards on the hinted card on top", async ({ page, server }) => {
  await register(page, server.url, uniqueName("above"));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  const hinted = page.locator(".card.hinted");
  await expect(hinted).toHaveAttribute("data-card", "QD"); // the deal's hint: QD with three cards on it
  expect(await page.$eval(".card.hinted", (card) => getComputedStyle(card).boxShadow)).not.toBe("none");
  await still(page);
  // a point on each card lying on QD, in the strip it shows and over QD, finds that card
  const found = await page.$eval(".card.hinted", (card) => {
    const below = card.getBoundingClientRect();
    const above = [...card.parentElement!.querySelectorAll<HTMLElement>(".card.hinted ~ .card")];
    return above.map((each) => {
      const box = each.getBoundingClientRect();
      const y = box.top + 3;
      if (y >= below.bottom) return [each.dataset.card, "not over QD"];
      const hit = document.elementFromPoint(box.left + box.width / 2, y)?.closest<HTMLElement>(".card");
      return [each.dataset.card, hit?.dataset.card];
    });
  });
  expect(found).toEqual([["7S", "7S"], ["JS", "JS"], ["4C", "4C"]]);
});

test("in forced colours the chosen level and deal kind, and the hint's card and column, keep a mark", async ({ page, server }) => {
  // a high-contrast theme drops backgrounds and shadows, which alone marked them
  await page.emulateMedia({ forcedColors: "active" });
  await register(page, server.url, uniqueName("forced"));
  await page.locator('button.level[data-level="medium"]').click();
  await page.locator("#deal").focus(); // the mark is the chosen one's, not the focus ring's
  /** What forced colours leave of a box's look: its colours, border and outline. */
  const look = (selector: string) =>
    page.$eval(selector, (node) => {
      const style = getComputedStyle(node);
      return [style.backgroundColor, style.color, style.borderTopColor, style.borderTopWidth, style.outlineStyle].join(" ");
    });
  expect(await look('button.level[aria-checked="true"]')).not.toBe(await look('button.level[aria-checked="false"]'));
  expect(await look('[data-deal-kind][aria-checked="true"]')).not.toBe(await look('[data-deal-kind][aria-checked="false"]'));
  await page.locator("#deal").fill(String(knownDeal()));
  await page.locator('[data-action="play"]').click();
  await expect(page.locator("main.game")).toBeVisible();
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  await expect(page.locator(".card.hinted")).toHaveAttribute("data-card", "QD");
  expect(await look(".card.hinted")).not.toBe(await look('.card.up[data-card="7S"]'));
  const target = await page.locator(".column.hint-target").getAttribute("data-column");
  expect(await look(".column.hint-target")).not.toBe(await look(`.column:not([data-column="${target}"])`));
});

test("with less motion asked for, a refused card does not shake nor a completed suit fly in", async ({ page, server }) => {
  await page.emulateMedia({ reducedMotion: "reduce" });
  await register(page, server.url, uniqueName("still"));
  await startGame(page, "medium", knownDeal());
  // the classes a refused tap (`shake` in table.ts) and a completed suit are drawn with
  const moving = await page.evaluate(() => {
    const card = document.querySelector<HTMLElement>(".card.up")!;
    card.classList.add("rejected");
    const suit = document.createElement("div");
    suit.className = "foundation full";
    document.querySelector(".foundations")!.append(suit);
    return [card, suit].map((node) => getComputedStyle(node).animationName);
  });
  expect(moving).toEqual(["none", "none"]);
});

test("zoomed in to 300 and 400 %, the cards stay 37 px wide or more, the page scrolling down, never sideways", async ({ page, server }) => {
  // 1280x800 at 300 and 400 %, and a wider screen's 400 %: short, wide windows, whose cards were
  // drawn as small as the height asked (19 px wide at 320x200), gaining nothing from the zoom
  await register(page, server.url, uniqueName("zoom"));
  await startGame(page, "medium", knownDeal());
  for (const [width, height] of [[427, 267], [320, 200], [480, 200]]) {
    await page.setViewportSize({ width, height });
    await settled(page);
    const found = await page.evaluate(() => ({
      narrowest: Math.min(...[...document.querySelectorAll(".columns .card")].map((card) => card.getBoundingClientRect().width)),
      sideways: document.documentElement.scrollWidth - window.innerWidth,
    }));
    expect(found.narrowest, `${width}x${height}: the narrowest card`).toBeGreaterThanOrEqual(36.5);
    expect(found.sideways, `${width}x${height}: scrolled sideways`).toBeLessThanOrEqual(0);
  }
});

test("a long name is cut in the header, a long deal number wraps: the page never scrolls sideways", async ({ page, server }) => {
  const name = wideName();
  const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await page.setViewportSize({ width: 360, height: 740 });
  await register(page, server.url, name);
  await expect(page.locator("header .who")).toHaveAttribute("title", name); // the whole name, on hovering
  expect(await sideways()).toBe(0);
  const cut = () =>
    page.$eval("header .who", (node) =>
      node.scrollWidth > node.clientWidth ? "cut" : `whole: ${node.scrollWidth} px in ${node.clientWidth} px, the window ${window.innerWidth} px`,
    );
  await expect.poll(cut).toBe("cut");
  await shot(page, "lobby-long-name");
  await page.setViewportSize({ width: 360, height: 740 });
  await startGame(page, "medium", knownDeal());
  expect(await sideways()).toBe(0);
  await shot(page, "game-long-name");
  // a phone on its side, the status beside the table, and a deal number of 16 digits
  await page.locator('.tools [data-action="menu"]').click();
  await startGame(page, "relaxed", 7289269503483556);
  await page.setViewportSize({ width: 480, height: 320 });
  await expect(page.locator(".status .level-name")).toContainText("7289269503483556");
  await expect.poll(sideways).toBe(0);
});

test("a notice over the columns lets a drop through, and is not drawn over the table", async ({ page, server }) => {
  await page.setViewportSize({ width: 360, height: 560 }); // the columns reach down to the window's bottom
  await register(page, server.url, uniqueName("toast"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD"); // uncovers 9D
  await atVersion(page, 1);
  await drag(page, "2D", 5); // refused: its reason is a notice
  await expect(page.locator(".toast.error")).toBeVisible();
  // the notice is kept off the columns' cards
  const overlap = await page.evaluate(() => {
    const notice = document.querySelector(".notices .toast")?.getBoundingClientRect();
    if (!notice) return "no notice";
    const hidden = [...document.querySelectorAll<HTMLElement>(".columns .card")].filter((card) => {
      const box = card.getBoundingClientRect();
      return box.left < notice.right && box.right > notice.left && box.top < notice.bottom && box.bottom > notice.top;
    });
    return hidden.map((card) => card.dataset.card ?? "down").join(" ");
  });
  expect(overlap, "cards under the notice").toBe("");
  // wherever it is, a drop under it lands on the column below
  const column = await boxOf(page, '.column[data-column="1"]');
  // a style sheet made by script (the server's Content-Security-Policy refuses a <style>)
  await page.evaluate((css) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }, `.notices { left: ${column.x}px !important; top: ${column.y + column.height - 40}px !important; bottom: auto !important; transform: none !important; width: 300px !important; }`);
  await expect(page.locator(".toast.error")).toBeVisible();
  await drag(page, "9D", 1);
  await atVersion(page, 2);
  expect(await columnOf(page, "9D")).toBe(1);
});

test("Escape during a drag puts the cards back, and the release moves nothing", async ({ page, server }) => {
  await register(page, server.url, uniqueName("escape"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD"); // uncovers 9D, which could go on column 1
  await atVersion(page, 1);
  await still(page);
  const card = await boxOf(page, '.card.up[data-card="9D"]');
  const target = await boxOf(page, '.column[data-column="1"]');
  await page.mouse.move(card.x + card.width / 2, card.y + 6);
  await page.mouse.down();
  await page.mouse.move(target.x + target.width / 2, target.y + target.height - 8, { steps: 6 });
  await expect(page.locator('.card.up[data-card="9D"]')).toHaveClass(/dragging/);
  await page.keyboard.press("Escape");
  await expect
    .poll(() => page.$eval('.card.up[data-card="9D"]', (node) => (node as HTMLElement).style.transform))
    .toBe("");
  await page.mouse.up();
  await page.waitForTimeout(300);
  await atVersion(page, 1);
  expect(await columnOf(page, "9D")).not.toBe(1);
  // and the next drag goes as ever
  await drag(page, "9D", 1);
  await atVersion(page, 2);
  expect(await columnOf(page, "9D")).toBe(1);
});

test("Back and Forward go between the app's screens, not off the page", async ({ page, server }) => {
  await register(page, server.url, uniqueName("back"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD");
  await atVersion(page, 1);
  await page.goBack(); // the game is closed, kept unfinished
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(page.locator('[data-action="continue"]')).toBeVisible();
  await page.goForward(); // and opened again where it was
  await expect(page.locator("main.game")).toBeVisible();
  await atVersion(page, 1);
  await expect(page.locator('.column[data-column="7"] .card.up[data-card="QD"]')).toBeVisible();
  await page.locator('.tools [data-action="menu"]').click();
  await page.locator("nav button", { hasText: "Statistics" }).click();
  await expect(page.locator("main.stats-page")).toBeVisible();
  await page.goBack();
  await expect(page.locator("main.lobby")).toBeVisible();
  await page.goBack();
  await expect(page.locator("main.game")).toBeVisible();
  await atVersion(page, 1);
  await page.goBack(); // the first screen after signing in
  await expect(page.locator("main.lobby")).toBeVisible();
});

test("Back then Forward pressed before the server answers end on the screen of the entry the browser is on", async ({ page, server }) => {
  // every server frame 150 ms late, in order: Back's close of the game is still unanswered when Forward comes
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    let order = Promise.resolve();
    real.onMessage((frame) => {
      order = order.then(async () => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        ws.send(frame);
      });
    });
  });
  await register(page, server.url, uniqueName("race"));
  await startGame(page, "medium", knownDeal());
  await tap(page, "QD");
  await atVersion(page, 1);
  const before = await page.evaluate(() => history.length);
  await page.evaluate(() => {
    history.back();
    setTimeout(() => history.forward(), 60);
  });
  await page.waitForTimeout(2000);
  await expect(page.locator("main.game")).toBeVisible();
  await atVersion(page, 1);
  expect(await page.evaluate(() => [(history.state as { screen?: string } | null)?.screen, history.length])).toEqual(["game", before]);
  await page.evaluate(() => {
    history.forward(); // nothing ahead: stays
    history.back();
    setTimeout(() => history.forward(), 60);
    setTimeout(() => history.back(), 120);
  });
  await page.waitForTimeout(2500);
  await expect(page.locator("main.lobby")).toBeVisible();
  expect(await page.evaluate(() => (history.state as { screen?: string } | null)?.screen)).toBe("lobby");
});
