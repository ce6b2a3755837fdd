// A finished game stepped through as a board, from the deal to its end, with the buttons and the keys.
import { decode, encode } from "@msgpack/msgpack";
import type { Page } from "@playwright/test";
import { spokenCard } from "../src/format";
import { knownDeal, winningLine } from "./server";
import { atVersion, boxOf, expect, heard, listen, redraw, register, shot, startGame, test, uniqueName, version } from "./fixtures";

interface Board {
  columns: string[][];
  stock: string;
  foundations: string[];
}

/** The table inside `scope`: each column's cards ("down" for a face-down one), the stock, the foundations. */
async function board(page: Page, scope: string): Promise<Board> {
  return page.$eval(scope, (root) => ({
    columns: [...root.querySelectorAll(".columns .column")].map((column) =>
      [...column.querySelectorAll(".card")].map((card) => (card as HTMLElement).dataset.card ?? "down"),
    ),
    stock: root.querySelector(".stock")?.textContent ?? "",
    foundations: [...root.querySelectorAll(".foundation.full")].map((slot) => (slot as HTMLElement).dataset.suit ?? ""),
  }));
}

/** Whether the replay list's line of the current step is inside the list's box (not scrolled away). */
async function currentStepInSight(page: Page): Promise<boolean> {
  return page.$eval("ol.replay-actions", (list) => {
    const box = list.getBoundingClientRect();
    const line = list.querySelector("li.current")?.getBoundingClientRect();
    return line !== undefined && line.top >= box.top && line.bottom <= box.bottom;
  });
}

async function atStep(page: Page, step: number): Promise<void> {
  await expect(page.locator(".replay-board")).toHaveAttribute("data-step", String(step));
}

test("a finished game's replay shows its board at every step, from the deal to the end", async ({ page, server }) => {
  const deal = knownDeal();
  const line = (await winningLine("medium", deal)).filter((action) => action.type === "move").slice(0, 8);
  await register(page, server.url, uniqueName("replay"));
  await startGame(page, "medium", deal);

  // play, keeping the board the live page shows after every version
  const boards: Board[] = [await board(page, "main.game")];
  const play = async (act: () => Promise<void>) => {
    const v = await version(page);
    await act();
    await atVersion(page, v + 1);
    boards.push(await board(page, "main.game"));
  };
  for (const action of line) {
    await play(async () => {
      await page.locator(`.card.up[data-card="${action.card}"]`).focus();
      await page.keyboard.press(String(action.to));
    });
  }
  await play(() => page.locator('.tools [data-action="undo"]').click());
  await play(() => page.locator('.tools [data-action="deal"]').click());
  await play(() => page.locator('.tools [data-action="undo"]').click());
  await play(() => page.locator('.tools [data-action="hint"]').click());
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results.lost")).toBeVisible();
  boards.push(boards[boards.length - 1]); // resigning moves nothing
  const total = boards.length - 1;
  expect(boards[line.length + 2].stock).toBe(""); // the deal was dealt, then taken back
  expect(boards[line.length + 3].stock).toBe(boards[0].stock);

  // from the past games page
  await page.locator("header nav button", { hasText: "Past games" }).click();
  await page.locator("ul.games li").first().locator('[data-action="replay"]').click();
  await atStep(page, 0);
  await expect(page.locator(".replay .step")).toHaveText(`Step 0 of ${total} — The deal`);
  expect(await board(page, ".replay-board")).toEqual(boards[0]);
  await expect(page.locator('.replay [data-action="prev"]')).toBeDisabled();
  await expect(page.locator('.replay [data-action="first"]')).toBeDisabled();

  // step 1: the first move's card is in the column it went to, pointed at
  await page.locator('.replay [data-action="next"]').click();
  await atStep(page, 1);
  const first = line[0];
  await expect(page.locator(".replay .step")).toContainText(`Step 1 of ${total} — Move ${first.card?.[0]}`);
  // its card by name for a screen reader, in the step line and the list of actions
  const named = `Move ${spokenCard(first.card ?? "", true)} to column ${first.to}`;
  expect(await page.locator(".replay .step").ariaSnapshot()).toContain(named);
  expect(await page.locator('ol.replay-actions button[data-step="1"]').ariaSnapshot()).toContain(named);
  const moved = page.locator(".replay-board .card.moved"); // the card and those on it
  await expect(moved.first()).toHaveAttribute("data-card", first.card ?? "");
  await expect(moved.first()).toHaveAttribute("data-column", String(first.to));
  const group = await page.locator(`.replay-board .column[data-column="${first.to}"] .card.up`).evaluateAll((cards) =>
    cards.map((card) => (card as HTMLElement).dataset.card ?? ""),
  );
  await expect(moved).toHaveCount(group.length - group.indexOf(first.card ?? ""));
  expect(await board(page, ".replay-board")).toEqual(boards[1]);
  await shot(page, "replay-board");

  // every later step with the arrow key, each board the one the game showed at that version
  for (let step = 2; step <= total; step++) {
    await page.keyboard.press("ArrowRight");
    await atStep(page, step);
    expect(await board(page, ".replay-board"), `step ${step}`).toEqual(boards[step]);
  }
  await expect(page.locator(".replay .step")).toContainText("You resigned.");
  await expect(page.locator('.replay [data-action="next"]')).toBeDisabled();
  await page.keyboard.press("ArrowRight"); // nothing after the end
  await atStep(page, total);

  // back, to the deal, to the end: buttons and keys; in a short window, whose list of
  // actions scrolls, the current step's line kept in sight (the list was drawn back at its top)
  await page.setViewportSize({ width: 1280, height: 360 });
  await expect.poll(() => page.$eval("ol.replay-actions", (list) => list.scrollHeight > list.clientHeight)).toBe(true);
  await page.keyboard.press("ArrowLeft");
  await atStep(page, total - 1);
  await page.keyboard.press("Home");
  await atStep(page, 0);
  expect(await board(page, ".replay-board")).toEqual(boards[0]);
  // the deal has no line of its own: the list back at its top
  expect(await page.$eval("ol.replay-actions", (list) => list.scrollTop)).toBe(0);
  await page.keyboard.press("End");
  await atStep(page, total);
  expect(await board(page, ".replay-board")).toEqual(boards[total]);
  expect(await currentStepInSight(page)).toBe(true);
  await page.locator('.replay [data-action="first"]').click();
  await atStep(page, 0);
  await page.locator('.replay [data-action="last"]').click();
  await atStep(page, total);
  await page.locator('.replay [data-action="prev"]').click();
  await atStep(page, total - 1);
  // a line of the list jumps to its step
  expect(await currentStepInSight(page)).toBe(true);
  await page.locator('ol.replay-actions button[data-step="3"]').click();
  await atStep(page, 3);
  expect(await board(page, ".replay-board")).toEqual(boards[3]);
  expect(await currentStepInSight(page)).toBe(true);
  await expect(page.locator("ol.replay-actions li.current button")).toHaveAttribute("data-step", "3");

  // nothing on a replay's board moves (its cards say they are disabled: the click is forced)
  await page.locator(`.replay-board .card.up[data-card="${first.card}"]`).click({ position: { x: 12, y: 6 }, force: true });
  await atStep(page, 3);
  expect(await board(page, ".replay-board")).toEqual(boards[3]);
});

test("a replay sent in pages is read whole", async ({ page, server }) => {
  // the test relays the page's socket and cuts every replay reply to one action a page
  const asked = new Map<unknown, number>();
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      if (message.type === "replay") asked.set(message.id, Number(message.from ?? 0));
      real.send(frame);
    });
    real.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      const replay = message.replay as { actions: unknown[] } | null;
      if (message.type !== "replay" || !replay || replay.actions.length <= 1) return ws.send(frame);
      const from = asked.get(message.re) ?? 0;
      ws.send(Buffer.from(encode({ ...message, replay: { ...replay, actions: replay.actions.slice(0, 1) }, next: from + 1 })));
    });
  });
  const deal = knownDeal();
  const line = (await winningLine("medium", deal)).filter((action) => action.type === "move").slice(0, 4);
  await register(page, server.url, uniqueName("pages"));
  await startGame(page, "medium", deal);
  for (const [i, action] of line.entries()) {
    await page.locator(`.card.up[data-card="${action.card}"]`).focus();
    await page.keyboard.press(String(action.to));
    await atVersion(page, i + 1);
  }
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results.lost")).toBeVisible();
  await page.locator('.results [data-action="replay"]').click();
  await atStep(page, 0);
  const labels = page.locator("ol.replay-actions li");
  await expect(labels).toHaveCount(line.length + 1);
  for (const [i, action] of line.entries()) {
    const rank = action.card?.[0] === "T" ? "10" : action.card?.[0];
    await expect(labels.nth(i)).toContainText(`Move ${rank}`);
  }
  await expect(labels.nth(line.length)).toHaveText("You resigned.");
  expect([...asked.values()]).toEqual([0, 1, 2, 3]);
});

test("a replay action of a type this page does not know is named as sent", async ({ page, server }) => {
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => real.send(frame));
    real.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      const replay = message.replay as { actions: Record<string, unknown>[] } | null;
      if (message.type !== "replay" || !replay) return ws.send(frame);
      const actions = replay.actions.map((action, i) => (i === 0 ? { type: "teleport", t: action.t } : action));
      ws.send(Buffer.from(encode({ ...message, replay: { ...replay, actions } })));
    });
  });
  await replayOfAHintResigned(page, server.url, "unknown");
  await expect(page.locator("ol.replay-actions li").first()).toHaveText("teleport");
  await page.keyboard.press("ArrowRight");
  await expect(page.locator(".replay .step")).toHaveText(/^Step 1 of 2 — teleport \(/);
  await expect(page.locator("main.replay")).not.toContainText("undefined");
});

test("a replay whose next page would repeat its actions is said, not read for ever", async ({ page, server, watch }) => {
  watch.allow.push(/protocol error: /);
  let replays = 0;
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => {
      if ((decode(frame as Buffer) as Record<string, unknown>).type === "replay") replays++;
      real.send(frame);
    });
    real.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      // every page says the next one starts at 0 again
      ws.send(message.type === "replay" && message.replay ? Buffer.from(encode({ ...message, next: 0 })) : frame);
    });
  });
  await replayOfAHintResigned(page, server.url, "loop");
  await expect(page.locator(".toast.error")).toContainText("replay.next must be 1, the actions so far, got 0");
  await expect(page.locator("main.results")).toBeVisible();
  expect(replays).toBe(1);
});

test("a long replay's step numbers fit beside the list, the current one readable beside its highlight", async ({ page, server }) => {
  // the test relays the page's socket and makes the game's one hint 1200 hints (and its history
  // one the server cannot give, so the list is read from the replay alone)
  await page.routeWebSocket(/.*/, (ws) => {
    const real = ws.connectToServer();
    ws.onMessage((frame) => real.send(frame));
    real.onMessage((frame) => {
      const message = decode(frame as Buffer) as Record<string, unknown>;
      if (message.type === "catch_up") {
        return ws.send(Buffer.from(encode({ type: "error", re: message.re, code: "internal", message: "not now" })));
      }
      const replay = message.replay as { actions: Record<string, unknown>[] } | null;
      if (message.type !== "replay" || !replay) return ws.send(frame);
      const actions = Array.from({ length: 1200 }, () => replay.actions[0]);
      ws.send(Buffer.from(encode({ ...message, replay: { ...replay, actions } })));
    });
  });
  await replayOfAHintResigned(page, server.url, "long");
  await expect(page.locator("ol.replay-actions li")).toHaveCount(1200);
  await page.keyboard.press("End");
  await page.keyboard.press("ArrowLeft");
  // step 1199 drawn: the list is not drawn anew under the measure (a list read before
  // the redraw and measured after it was no longer in the page: every style empty)
  await expect(page.locator("ol.replay-actions li").nth(1198)).toHaveClass(/current/);
  const found = await page.locator("ol.replay-actions").evaluate((list) => {
    const current = list.querySelector("li.current") as HTMLElement;
    const marker = getComputedStyle(current, "::marker");
    const measure = document.createElement("canvas").getContext("2d") as CanvasRenderingContext2D;
    measure.font = `${marker.fontWeight} ${marker.fontSize} ${marker.fontFamily}`;
    const widest = Math.max(...["1000. ", "1200. ", "8888. "].map((text) => measure.measureText(text).width));
    return {
      room: parseFloat(getComputedStyle(list).paddingLeft),
      widest,
      marker: marker.color,
      list: getComputedStyle(list).color,
      highlightText: getComputedStyle(current).color,
    };
  });
  expect(found.room).toBeGreaterThanOrEqual(found.widest + 4);
  expect(found.marker).not.toBe(found.highlightText); // dark text, on the dark list beside the highlight
  expect(found.marker).toBe("rgb(245, 197, 66)"); // the highlight's own colour (--accent)
  await shot(page, "replay-long-list");
});

/** A new player's game of one hint, resigned, and its replay asked for from the results. */
async function replayOfAHintResigned(page: Page, url: string, name: string): Promise<void> {
  await register(page, url, uniqueName(name));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await page.locator('.results [data-action="replay"]').click();
}

test("a replay's step line is said when the step changes, not again at a redraw", async ({ page, server }) => {
  await replayOfAHintResigned(page, server.url, "spoken");
  await atStep(page, 0);
  await expect(page.locator(".said")).toHaveText(await page.locator("p.step").innerText());
  await listen(page);
  await redraw(page);
  expect(await heard(page)).toMatchObject({ live: [], said: 0 });
  await page.keyboard.press("ArrowRight");
  await atStep(page, 1);
  const line = await page.locator("p.step").innerText();
  expect(line).toMatch(/^Step 1 of 2/);
  await expect(page.locator(".said")).toHaveText(line);
});

test("each line of a replay's list, and the lobby's token box, is a target 24 px high or more, for a finger", async ({ page, server }) => {
  await page.setViewportSize({ width: 360, height: 740 });
  await register(page, server.url, uniqueName("targets"));
  await expect(page.locator('summary[data-action="show-token"]')).toBeVisible();
  const summary = await boxOf(page, 'summary[data-action="show-token"]');
  expect(summary.height).toBeGreaterThanOrEqual(24);
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="hint"]').click();
  await atVersion(page, 1);
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await page.locator('.results [data-action="replay"]').click();
  await atStep(page, 0);
  const lines = await page.locator("ol.replay-actions li button").evaluateAll((buttons) =>
    buttons.map((button) => {
      const box = button.getBoundingClientRect();
      return { text: button.textContent, width: box.width, height: box.height };
    }),
  );
  expect(lines.length).toBe(2); // the hint, then the resign
  for (const line of lines) {
    expect(line.height, line.text ?? "").toBeGreaterThanOrEqual(24);
    expect(line.width, line.text ?? "").toBeGreaterThanOrEqual(24);
  }
});
