// Keyboard only: the page is drawn anew after every change, and the focus (and
// what was typed) stays where it was; a question holds the focus until it is
// answered, then gives it back.
import { decode } from "@msgpack/msgpack";
import type { Page } from "@playwright/test";
import { STRINGS } from "../src/i18n";
import { knownDeal } from "./server";
import { atVersion, drag, expect, heard, listen, redraw, register, startGame, tap, test, uniqueName } from "./fixtures";

/** The focused element, as tag and the attribute that names it. */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const node = document.activeElement as HTMLElement | null;
    if (!node || node === document.body) return "body";
    const name = ["id", "data-action", "data-level", "data-deal-kind", "data-card"].find((key) => node.hasAttribute(key));
    return name ? `${node.localName}[${name}=${node.getAttribute(name)}]` : node.localName;
  });
}

test("the language menu, the levels and the deal kinds keep the focus, and a typed name stays", async ({ page, server }) => {
  await page.goto(server.url);
  await page.locator("#name").fill("typed so far");
  await page.locator("select.language").focus();
  await page.keyboard.press("ArrowDown"); // Suomi: the page is drawn in Finnish
  await expect(page.locator("html")).toHaveAttribute("lang", "fi");
  expect(await focused(page)).toBe("select[id=language]");
  await page.keyboard.press("ArrowDown");
  await expect(page.locator("html")).toHaveAttribute("lang", "ru");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("ArrowUp");
  await expect(page.locator("html")).toHaveAttribute("lang", "en");
  await expect(page.locator("#name")).toHaveValue("typed so far");

  await page.locator("#name").fill(uniqueName("keys"));
  await page.keyboard.press("Enter");
  await expect(page.locator("main.lobby")).toBeVisible();

  await page.locator('button.level[data-level="hard"]').focus();
  await page.keyboard.press("Enter");
  await expect(page.locator('button.level[data-level="hard"]')).toHaveAttribute("aria-checked", "true");
  expect(await focused(page)).toBe("button[data-level=hard]");
  // a radio group, as its role tells a screen reader: the arrows choose, Tab leaves it
  await page.keyboard.press("ArrowRight");
  await expect(page.locator('button.level[data-level="classic"]')).toHaveAttribute("aria-checked", "true");
  expect(await focused(page)).toBe("button[data-level=classic]");
  await page.keyboard.press("ArrowUp");
  expect(await focused(page)).toBe("button[data-level=hard]");
  await page.keyboard.press("End");
  expect(await focused(page)).toBe("button[data-level=three-blind-mice]");
  await page.keyboard.press("ArrowDown"); // round to the first
  await expect(page.locator('button.level[data-level="easy"]')).toHaveAttribute("aria-checked", "true");
  expect(await focused(page)).toBe("button[data-level=easy]");
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowRight");
  expect(await focused(page)).toBe("button[data-level=medium]");
  expect(await page.locator('button.level[tabindex="0"]').count()).toBe(1);
  await page.keyboard.press("Tab");
  expect(await focused(page)).not.toMatch(/data-level/);
  await page.locator('[data-deal-kind="winnable"]').focus();
  await page.keyboard.press("Space");
  await expect(page.locator('[data-deal-kind="winnable"]')).toHaveAttribute("aria-checked", "true");
  expect(await focused(page)).toBe("button[data-deal-kind=winnable]");
  await page.keyboard.press("ArrowLeft");
  await expect(page.locator('[data-deal-kind="random"]')).toHaveAttribute("aria-checked", "true");
  expect(await focused(page)).toBe("button[data-deal-kind=random]");
  await page.keyboard.press("Shift+Tab"); // out of the group, to the level chosen
  expect(await focused(page)).toBe("button[data-level=medium]");
});

test("another screen gone to from the header's menu or by Back takes the focus to its heading, and the title names it", async ({ page, server }) => {
  // the focus stayed on the menu's button: a screen reader heard nothing of the screen changing
  await register(page, server.url, uniqueName("screens"));
  await expect(page).toHaveTitle(`${STRINGS.en.chooseLevel} — ${STRINGS.en.title}`);
  const heading = page.locator("main h2");
  for (const [nav, key] of [["nav-statistics", "statistics"], ["nav-history", "history"]] as const) {
    await page.locator(`header [data-action="${nav}"]`).focus();
    await page.keyboard.press("Enter");
    await expect(heading).toHaveText(STRINGS.en[key]);
    await expect(heading).toBeFocused();
    await expect(page).toHaveTitle(`${STRINGS.en[key]} — ${STRINGS.en.title}`);
  }
  await page.waitForTimeout(500); // the list's reply drawn: the focus stays on the heading
  await expect(heading).toBeFocused();
  await page.goBack();
  await expect(heading).toHaveText(STRINGS.en.statistics);
  await expect(heading).toBeFocused();
  await expect(page).toHaveTitle(`${STRINGS.en.statistics} — ${STRINGS.en.title}`);
  await page.locator("select.language").selectOption("fi");
  await expect(page).toHaveTitle(`${STRINGS.fi.statistics} — ${STRINGS.fi.title}`);
});

test("Forward onto Statistics or Past games with the focus on a control of the page takes it to the new screen's heading, not the header", async ({ page, server }) => {
  await register(page, server.url, uniqueName("forward"));
  const heading = page.locator("main h2");
  for (const [nav, key] of [["nav-statistics", "statistics"], ["nav-history", "history"]] as const) {
    await page.locator(`header [data-action="${nav}"]`).press("Enter");
    await expect(heading).toHaveText(STRINGS.en[key]);
    await page.goBack();
    // Back is taken in turn after the last one's reads (the lobby's statistics and games)
    await expect(page.locator("main.lobby")).toBeVisible({ timeout: 30_000 });
    await page.locator('[data-action="play"]').focus(); // on the page, not in the header
    await page.goForward();
    await expect(heading).toHaveText(STRINGS.en[key]);
    await expect(heading).toBeFocused(); // the screen has no button: its heading, not "Levels"
    await page.waitForTimeout(500); // the list's reply drawn: the focus stays on the heading
    await expect(heading).toBeFocused();
    await page.goBack();
    // Back is taken in turn after the last one's reads (the lobby's statistics and games)
    await expect(page.locator("main.lobby")).toBeVisible({ timeout: 30_000 });
  }
});

test("a refused name stays typed in its field", async ({ page, server }) => {
  const name = uniqueName("taken");
  await register(page, server.url, name);
  const other = await page.context().browser()?.newContext();
  if (!other) throw new Error("no browser");
  const second = await other.newPage();
  await second.goto(server.url);
  await second.locator("#name").fill(name);
  await second.locator("#name").press("Enter");
  await expect(second.locator("p.error")).toBeVisible(); // duplicate_name
  await expect(second.locator("#name")).toHaveValue(name);
  await expect(second.locator("#name")).toBeFocused();
  // the same from the button, reached by Tab: it keeps the focus
  await second.keyboard.press("Tab");
  await expect(second.locator('[data-action="register"]')).toBeFocused();
  await second.keyboard.press("Enter");
  await expect(second.locator("p.error")).toBeVisible();
  await second.waitForTimeout(300);
  await expect(second.locator('[data-action="register"]')).toBeFocused();
  await expect(second.locator("#name")).toHaveValue(name);
  await other.close();
});

test("a question keeps the focus until answered, then gives it back", async ({ page, server }) => {
  await register(page, server.url, uniqueName("ask"));
  await startGame(page, "medium", knownDeal());
  const resign = page.locator('.tools [data-action="resign"]');
  await resign.focus();
  await page.keyboard.press("Enter");
  await expect(page.locator(".dialog")).toBeVisible();
  expect(await focused(page)).toBe("button[data-action=confirm-no]"); // the answer that loses nothing
  for (let i = 0; i < 4; i++) {
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest(".dialog")) || document.activeElement === document.body)).toBe(true);
  }
  await expect(page.locator("header.top")).toHaveAttribute("inert", "");
  await page.keyboard.press("Escape");
  await expect(page.locator(".dialog")).toHaveCount(0);
  expect(await focused(page)).toBe("button[data-action=resign]");
  await expect(page.locator("main.game")).toHaveAttribute("data-v", "0");
});

test("Enter pressed twice answers no to a question that cannot be taken back, and Tab reaches Yes", async ({ page, server }) => {
  const name = uniqueName("twice");
  await register(page, server.url, name);
  const token = await page.evaluate(() => localStorage.getItem("scorpion.token"));
  await page.locator("details.token-box summary").click();
  for (const action of ["sign-out-everywhere", "sign-out", "new-token"]) {
    await page.locator(`[data-action="${action}"]`).focus();
    await page.keyboard.press("Enter");
    await expect(page.locator(".dialog")).toBeVisible();
    expect(await focused(page)).toBe("button[data-action=confirm-no]");
    await page.keyboard.press("Enter");
    await expect(page.locator(".dialog")).toHaveCount(0);
    expect(await focused(page)).toBe(`button[data-action=${action}]`);
  }
  await page.waitForTimeout(500); // time for anything sent to be answered
  await expect(page.locator("main.lobby")).toBeVisible();
  await expect(page.locator("header .who")).toHaveText(name);
  expect(await page.evaluate(() => localStorage.getItem("scorpion.token"))).toBe(token);

  await startGame(page, "medium", knownDeal());
  for (const action of ["resign", "restart"]) {
    const tool = page.locator(`.tools [data-action="${action}"]`);
    if (action === "restart") {
      await tap(page, "QD"); // something to restart
      await atVersion(page, 1);
    }
    await tool.focus();
    await page.keyboard.press("Enter");
    await expect(page.locator(".dialog")).toBeVisible();
    await page.keyboard.press("Enter");
    await expect(page.locator(".dialog")).toHaveCount(0);
  }
  await page.waitForTimeout(500);
  await expect(page.locator("main.game")).toHaveAttribute("data-v", "1"); // neither resigned nor restarted
  // a new game that would abandon this one: asked, Enter twice keeps it
  await page.locator('.tools [data-action="menu"]').click();
  await page.locator('[data-action="play"]').focus();
  await page.keyboard.press("Enter");
  await expect(page.locator(".dialog")).toBeVisible();
  await page.keyboard.press("Enter");
  await expect(page.locator(".dialog")).toHaveCount(0);
  await page.locator('[data-action="continue"]').click();
  await atVersion(page, 1);

  // Yes is a Tab away, either way round, and the focus stays in the question
  const resign = page.locator('.tools [data-action="resign"]');
  await resign.focus();
  await page.keyboard.press("Enter");
  await page.keyboard.press("Tab");
  expect(await focused(page)).toBe("button[data-action=confirm-yes]");
  await page.keyboard.press("Tab");
  expect(await focused(page)).toBe("button[data-action=confirm-no]");
  await page.keyboard.press("Shift+Tab");
  expect(await focused(page)).toBe("button[data-action=confirm-yes]");
  await page.keyboard.press("Enter");
  await expect(page.locator("main.results.lost")).toBeVisible();
});

/** A key pressed on a keyboard whose layout types `key` there: the physical key is `code` (KeyD). */
async function pressOnLayout(page: Page, key: string, code: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  const keyCode = code.charCodeAt(3); // KeyD: the D key's virtual key code, 68
  await cdp.send("Input.dispatchKeyEvent", { type: "keyDown", key, code, text: key, windowsVirtualKeyCode: keyCode });
  await cdp.send("Input.dispatchKeyEvent", { type: "keyUp", key, code, windowsVirtualKeyCode: keyCode });
  await cdp.detach();
}

test("the D, U, H and P keys work on a Russian keyboard layout", async ({ page, server }) => {
  await register(page, server.url, uniqueName("йцукен"));
  await startGame(page, "medium", knownDeal());
  await pressOnLayout(page, "р", "KeyH"); // the key marked H types р
  await atVersion(page, 1);
  await expect(page.locator(".banner.hint")).toBeVisible();
  await tap(page, "QD");
  await atVersion(page, 2);
  await pressOnLayout(page, "г", "KeyU"); // U
  await atVersion(page, 3);
  await pressOnLayout(page, "в", "KeyD"); // D: the stock is dealt
  await atVersion(page, 4);
  await expect(page.locator(".stock")).toBeDisabled();
  await pressOnLayout(page, "з", "KeyP"); // P: paused, and P again goes on
  await expect(page.locator(".paused")).toBeVisible();
  await pressOnLayout(page, "з", "KeyP");
  await expect(page.locator(".table")).toBeVisible();
});

/** A key held down: its first press, then `repeats` presses the keyboard repeats on its own (`event.repeat`). */
async function holdKey(page: Page, key: string, repeats: number): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  const enter = key === "Enter";
  const code = enter ? "Enter" : `Key${key.toUpperCase()}`;
  const keyCode = enter ? 13 : key.toUpperCase().charCodeAt(0);
  const text = enter ? "\r" : key;
  await cdp.send("Input.dispatchKeyEvent", { type: "keyDown", key, code, text, windowsVirtualKeyCode: keyCode });
  for (let i = 0; i < repeats; i++) {
    await page.waitForTimeout(40);
    await cdp.send("Input.dispatchKeyEvent", { type: "keyDown", key, code, text, windowsVirtualKeyCode: keyCode, autoRepeat: true });
  }
  await cdp.send("Input.dispatchKeyEvent", { type: "keyUp", key, code, windowsVirtualKeyCode: keyCode });
  await cdp.detach();
}

test("a key held down acts once: H and Enter on Hint ask one hint, U undoes one move", async ({ page, server }) => {
  await register(page, server.url, uniqueName("held"));
  await startGame(page, "medium", knownDeal());
  await holdKey(page, "h", 25);
  await atVersion(page, 1);
  await page.waitForTimeout(500);
  await atVersion(page, 1); // one hint, not one per repeat
  await tap(page, "QD");
  await atVersion(page, 2);
  await drag(page, "9D", 1);
  await atVersion(page, 3);
  await holdKey(page, "u", 25);
  await atVersion(page, 4);
  await page.waitForTimeout(500);
  await atVersion(page, 4); // one undo
  await expect(page.locator(".tools [data-action=undo]")).toBeEnabled();
  // Enter held on the focused Hint button: one hint
  await page.locator(".tools [data-action=hint]").focus();
  await holdKey(page, "Enter", 25);
  await atVersion(page, 5);
  await page.waitForTimeout(500);
  await atVersion(page, 5);
});

test("the focus never falls to the page: registering, Play, Pause, Continue and an Undo that can undo no more move it on", async ({ page, server }) => {
  await page.goto(server.url);
  await page.locator("#name").fill(uniqueName("focus"));
  await page.locator("#name").press("Enter");
  await expect(page.locator("main.lobby")).toBeVisible();
  expect(await focused(page)).toBe("button[data-action=play]");
  await page.locator('button.level[data-level="medium"]').click();
  await page.locator("#deal").fill(String(knownDeal()));
  await page.locator('[data-action="play"]').focus();
  await page.keyboard.press("Enter");
  await expect(page.locator("main.game")).toBeVisible();
  await expect.poll(() => focused(page)).toBe("button[data-action=deal]"); // the first of the game's tools

  // the pause screen is a dialog: its button takes the focus, and gives it back to Pause
  await page.locator('.tools [data-action="pause"]').focus();
  await page.keyboard.press("Enter");
  await expect(page.locator(".paused")).toBeVisible();
  await expect.poll(() => focused(page)).toBe("button[data-action=resume-big]");
  await page.keyboard.press("Enter");
  await expect(page.locator(".table")).toBeVisible();
  await expect.poll(() => focused(page)).toBe("button[data-action=pause]");

  // Undo disabled once nothing is left to undo: the focus goes to the next tool
  await tap(page, "QD");
  await atVersion(page, 1);
  await page.locator('.tools [data-action="undo"]').focus();
  await page.keyboard.press("Enter");
  await atVersion(page, 2);
  await expect(page.locator('.tools [data-action="undo"]')).toBeDisabled();
  await expect.poll(() => focused(page)).toBe("button[data-action=hint]");
});

test("a key does nothing its button would not: U with nothing to undo, D, U and H while paused", async ({ page, server }) => {
  const sent: string[] = []; // the types of the requests the page sends
  await page.routeWebSocket(/.*/, (ws) => {
    const upstream = ws.connectToServer();
    ws.onMessage((frame) => {
      sent.push(String((decode(frame as Buffer) as Record<string, unknown>).type));
      upstream.send(frame);
    });
    upstream.onMessage((frame) => ws.send(frame));
  });
  await register(page, server.url, uniqueName("keys"));
  await startGame(page, "medium", knownDeal());
  const tool = (action: string) => page.locator(`.tools [data-action="${action}"]`);
  await expect(tool("undo")).toBeDisabled();
  const fresh = sent.length;
  await page.keyboard.press("u");
  await page.waitForTimeout(300);
  expect(sent.slice(fresh)).toEqual([]); // no undo sent, none refused
  await expect(page.locator(".toast.error")).toHaveCount(0);

  await page.keyboard.press("h");
  await atVersion(page, 1);
  await expect(page.locator(".banner.hint")).toBeVisible();
  await page.keyboard.press("p");
  await expect(page.locator(".paused")).toBeVisible();
  for (const action of ["deal", "undo", "hint", "restart"]) await expect(tool(action)).toBeDisabled();
  for (const action of ["resume", "resign"]) await expect(tool(action)).toBeEnabled();
  await expect(page.locator(".banner")).toHaveCount(0); // the hint names cards the pause screen hides
  const paused = sent.length;
  for (const key of ["d", "u", "h"]) await page.keyboard.press(key);
  await page.waitForTimeout(300);
  expect(sent.slice(paused)).toEqual([]);
  await page.keyboard.press("p");
  await expect(page.locator(".table")).toBeVisible();
  await page.keyboard.press("d");
  await atVersion(page, 2);
});

test("the sign-in page's error is said once for each refusal, not again at a redraw", async ({ page, server }) => {
  await page.goto(server.url);
  await page.locator("#name").fill("   ");
  await page.locator("form.register button[type=submit]").click();
  await expect(page.locator("p.error")).toHaveText(STRINGS.en.nameEmpty);
  await expect(page.locator(".alerted")).toHaveText(STRINGS.en.nameEmpty);
  await listen(page);
  await redraw(page);
  await expect(page.locator("p.error")).toHaveText(STRINGS.en.nameEmpty); // still shown
  expect(await heard(page)).toMatchObject({ live: [], alerted: 0 });
  // the same refusal again is said again; another one is said in its words
  await page.locator("form.register button[type=submit]").click();
  await expect.poll(async () => (await heard(page)).alerted).toBeGreaterThan(0);
  await expect(page.locator(".alerted")).toHaveText(STRINGS.en.nameEmpty);
  await page.locator("#name").fill("x".repeat(33));
  await page.locator("form.register button[type=submit]").click();
  await expect(page.locator(".alerted")).toHaveText(STRINGS.en.nameLong.replace("{n}", "33"));
  expect((await heard(page)).live).toEqual([]);
});
