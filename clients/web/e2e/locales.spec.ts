// Every locale renders its own strings: no English left on a Finnish or Russian page.
import type { Page } from "@playwright/test";
import { join } from "node:path";
import { STRINGS, type Locale } from "../src/i18n";
import { knownDeal } from "./server";
import { boxOf, drag, expect, register, shot, SHOTS, SIZES, startGame, test, uniqueName, watch, type Watch } from "./fixtures";

/** 2D dragged where it does not fit: the server's reason, its card as the table shows it. */
const REFUSED: Record<Locale, RegExp> = {
  en: /^2♦ must go onto a card/,
  fi: /^2♦ on siirrettävä/,
  ru: /^Карту 2♦ можно положить только/,
};

/** English strings of ours on the page (header, screen and notices, not the language menu). */
async function english(page: Page, locale: Locale): Promise<string[]> {
  const text = await page.evaluate(() =>
    [...document.querySelectorAll("header h1, header nav, main, .notices, .dialog")].map((n) => (n as HTMLElement).innerText).join("\n"),
  );
  const ours = Object.entries(STRINGS.en)
    .filter(([key, value]) => !value.includes("{") && value !== STRINGS[locale][key as keyof typeof STRINGS.en])
    .map(([, value]) => value);
  return ours.filter((value) => value.length > 2 && text.includes(value));
}

for (const locale of ["fi", "ru"] as const) {
  test(`the ${locale} pages have no English left`, async ({ page, server }) => {
    await page.goto(server.url);
    await page.locator("select.language").selectOption("en");
    expect(await english(page, locale)).not.toEqual([]); // the check sees English where there is some
    await page.locator("select.language").selectOption(locale);
    await expect(page.locator("html")).toHaveAttribute("lang", locale);
    await expect(page.locator("form.register button")).toHaveText(STRINGS[locale].register);
    expect(await english(page, locale)).toEqual([]);

    await page.locator("#name").fill(uniqueName(locale));
    await page.locator("form.register button").click();
    await expect(page.locator("main.lobby")).toBeVisible();
    await expect(page.locator("main.lobby h2")).toHaveText(STRINGS[locale].chooseLevel);
    expect(await english(page, locale)).toEqual([]);

    await startGame(page, "medium", knownDeal());
    await expect(page.locator('.tools [data-action="undo"]')).toHaveText(STRINGS[locale].undo);
    expect(await english(page, locale)).toEqual([]);
    await drag(page, "2D", 5); // 2D does not fit column 5 on this deal
    await expect(page.locator(".toast.error")).toHaveText(REFUSED[locale]);
    expect(await english(page, locale)).toEqual([]);
    await shot(page, `game-${locale}`);

    await page.locator('.tools [data-action="resign"]').click();
    expect(await english(page, locale)).toEqual([]);
    await page.locator(".dialog .yes").click();
    await expect(page.locator("main.results")).toBeVisible();
    await expect(page.locator('main.results [data-stat="losses"] dt')).toHaveText(STRINGS[locale].losses);
    expect(await english(page, locale)).toEqual([]);
    for (const nav of ["statistics", "history"] as const) {
      await page.locator("header nav button", { hasText: STRINGS[locale][nav] }).click();
      await expect(page.locator("main h2")).toHaveText(STRINGS[locale][nav]);
      await page.waitForTimeout(200);
      expect(await english(page, locale)).toEqual([]);
    }
    await page.locator('ul.games li [data-action="replay"]').first().click();
    await expect(page.locator(".replay-board")).toHaveAttribute("data-step", "0");
    await expect(page.locator(".replay .step")).toContainText(STRINGS[locale].replayStart);
    await page.keyboard.press("End");
    await expect(page.locator(".replay-board")).toHaveAttribute("data-step", "1"); // the resignation: the refused drag made no version
    await expect(page.locator(".replay .step")).toContainText(STRINGS[locale].resigned);
    expect(await english(page, locale)).toEqual([]);
    for (const [width, height] of SIZES) {
      await page.setViewportSize({ width, height });
      const spilled = await page.locator(".replay dl.results-table dd").evaluateAll((values) =>
        values.filter((value) => value.scrollWidth > value.clientWidth).map((value) => value.textContent),
      );
      expect(spilled, `${locale} at ${width} px: the replay's results run out of their tiles`).toEqual([]);
    }
  });
}

test("a language chosen while the connection says hello is the one the server speaks", async ({ page, server }) => {
  // the first connection's replies are held back: the page's hello is on its way, unanswered
  let release: () => void = () => {};
  let first = true;
  await page.routeWebSocket(/.*/, (ws) => {
    const upstream = ws.connectToServer();
    const held: (string | Buffer)[] = [];
    let holding = first;
    first = false;
    ws.onMessage((message) => upstream.send(message));
    upstream.onMessage((message) => (holding ? held.push(message) : ws.send(message)));
    release = () => {
      holding = false;
      for (const message of held.splice(0)) ws.send(message);
    };
  });
  await page.addInitScript(() => localStorage.setItem("scorpion.locale", "en"));
  await page.goto(server.url);
  await expect(page.locator("main.center")).toHaveText(STRINGS.en.connecting);
  await page.locator("select.language").selectOption("ru");
  release();
  await page.locator("#name").fill(uniqueName("late"));
  await page.locator("form.register button").click();
  await expect(page.locator("main.lobby h2")).toHaveText(STRINGS.ru.chooseLevel);
  await startGame(page, "medium", knownDeal());
  await drag(page, "2D", 5);
  await expect(page.locator(".toast.error")).toHaveText(REFUSED.ru);
});

test("a refusal that is no rule's is said in the page's language, never in the server's words", async ({ page, server }) => {
  const name = uniqueName("taken");
  await register(page, server.url, name);
  await page.addInitScript(() => {
    if (sessionStorage.getItem("seeded")) return;
    sessionStorage.setItem("seeded", "1");
    localStorage.setItem("scorpion.locale", "fi");
    localStorage.setItem("scorpion.token", "an-unknown-token"); // read, but the server has no such token
  });
  await page.goto(server.url);
  await expect(page.locator("p.error")).toHaveText(STRINGS.fi.badToken);
  expect(await english(page, "fi")).toEqual([]);
  await page.locator("#name").fill("   "); // only spaces: no name, said by the page without asking
  await page.locator("form.register button").click();
  await expect(page.locator("p.error")).toHaveText(STRINGS.fi.nameEmpty);
  await page.locator("select.language").selectOption("ru");
  await page.locator("#name").fill(name); // another player's
  await page.locator("form.register button").click();
  await expect(page.locator("p.error")).toHaveText(STRINGS.ru.error_duplicate_name);
  expect(await english(page, "ru")).toEqual([]);
  await shot(page, "refused-name-ru");
});

test("a notice shown when the language changes is said in the new one, or goes", async ({ page, server }) => {
  await register(page, server.url, uniqueName("switch"));
  // the page's own words: said again in the new language
  await page.locator('button.level[data-level="hard"]').click();
  await page.locator("#deal").fill("0");
  await page.locator('[data-action="play"]').click();
  await expect(page.locator(".toast.error")).toHaveText(STRINGS.en.badDeal);
  await page.locator("select.language").selectOption("fi");
  await expect(page.locator(".toast.error")).toHaveText(STRINGS.fi.badDeal);
  await page.locator("select.language").selectOption("en");
  await expect(page.locator(".toast.error")).toHaveText(STRINGS.en.badDeal);
  // the server's reason for a refused move is in the language it was asked in: it goes
  await page.locator("#deal").fill(String(knownDeal()));
  await page.locator('[data-action="play"]').click();
  await expect(page.locator("main.game")).toBeVisible();
  await drag(page, "2D", 5);
  await expect(page.locator(".toast.error")).toHaveText(REFUSED.en);
  await page.locator("select.language").selectOption("ru");
  await expect(page.locator(".toast.error")).toHaveCount(0);
});

test("a column's label says how many of its cards are face down and face up, in each language", async ({ page, server }) => {
  await register(page, server.url, uniqueName("labels"));
  await startGame(page, "medium", knownDeal());
  const label = page.locator('.column[data-column="1"]');
  await expect(label).toHaveAttribute("aria-label", "Column 1: 3 face down, 4 face up");
  await page.locator("select.language").selectOption("fi");
  await expect(label).toHaveAttribute("aria-label", "Sarake 1: 3 korttia kuvapuoli alaspäin, 4 korttia kuvapuoli ylöspäin");
  await page.locator("select.language").selectOption("ru");
  await expect(label).toHaveAttribute("aria-label", "Столбец 1: 3 карты рубашкой вверх, 4 карты лицом вверх");
});

test("the language menu names each language in itself, marked with its language", async ({ page, server }) => {
  await page.goto(server.url);
  await expect(page.locator("main.signin")).toBeVisible();
  const options = await page.locator("select.language option").evaluateAll((nodes) =>
    nodes.map((node) => [node.textContent, node.getAttribute("lang")]),
  );
  expect(options).toEqual([["English", "en"], ["Suomi", "fi"], ["Русский", "ru"]]);
});

test("a past game's date is written as the browser's own variant of the page's language writes it", async ({ browser, server }) => {
  // "en" alone wrote the US 12/7/2026 for the 7th of December, to a British browser too
  const context = await browser.newContext({ locale: "en-GB" });
  const page = await context.newPage();
  const found: Watch = { problems: [], allow: [] };
  watch(page, found);
  await register(page, server.url, uniqueName("gb"));
  await startGame(page, "medium", knownDeal());
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results")).toBeVisible();
  await page.locator("header nav button", { hasText: STRINGS.en.history }).click();
  const date = page.locator("ul.games li time").first();
  await expect(date).toBeVisible();
  const written = await date.evaluate((node) => [node.textContent, new Date(node.getAttribute("datetime") ?? "").toLocaleString("en-GB")]);
  expect(written[0]).toBe(written[1]);
  expect(found.problems).toEqual([]);
  await context.close();
});

test("the statistics on a narrow screen say they scroll sideways, and keep each row's level in sight", async ({ page, server }) => {
  await page.setViewportSize({ width: 360, height: 740 });
  await register(page, server.url, uniqueName("narrow"));
  await page.locator("header nav button", { hasText: "Statistics" }).click();
  const box = page.locator(".stats-page .scroll");
  await expect(page.locator(".stats-page tbody tr").first()).toBeVisible();
  await expect(page.locator(".scroll-note")).toBeVisible();
  await expect(page.locator(".scroll-note")).toHaveText(STRINGS.en.scrollSideways);
  await expect(box).toHaveClass(/more-right/);
  // a named region in the Tab order, whatever the browser does with a scroll box
  await expect(box).toHaveAttribute("tabindex", "0");
  await expect(page.getByRole("region", { name: STRINGS.en.statsTable })).toHaveCount(1);
  // reached from the keyboard: its focus ring is
  // not hidden by the fade that says more is on the right
  await box.focus();
  await page.keyboard.press("Shift+Tab");
  await page.keyboard.press("Tab");
  await expect(box).toBeFocused();
  expect(await box.evaluate((node) => getComputedStyle(node).maskImage)).toBe("none");
  expect(await box.evaluate((node) => getComputedStyle(node).outlineStyle)).toBe("solid");
  await box.blur();
  // scrolled to its end: no more to show on the right, and the level still at the left edge
  // (again if the statistics' own read, answered meanwhile, drew the page anew under it)
  await expect(async () => {
    await box.evaluate((node) => node.scrollTo({ left: node.scrollWidth }));
    await expect(box).not.toHaveClass(/more-right/, { timeout: 1000 });
  }).toPass();
  const level = await boxOf(page, ".stats-page tbody tr th >> nth=0");
  const scroller = await boxOf(page, ".stats-page .scroll");
  expect(Math.abs(level.x - scroller.x)).toBeLessThan(1);
  // drawn again (here for a change of language): the table stays where it was scrolled
  await page.locator("select.language").selectOption("fi");
  await expect(page.locator(".scroll-note")).toHaveText(STRINGS.fi.scrollSideways);
  expect(await page.$eval(".stats-page .scroll", (node) => node.scrollLeft)).toBeGreaterThan(0);
  await expect(page.getByRole("region", { name: STRINGS.fi.statsTable })).toHaveCount(1);
  await page.locator("select.language").selectOption("en");
  await page.screenshot({ path: join(SHOTS, "stats-scrolled-360x740.png") });
  // wide enough: nothing to say
  await page.setViewportSize({ width: 1280, height: 800 });
  await expect(page.locator(".scroll-note")).toBeHidden();
  await expect(box).not.toHaveClass(/scrolls/);
});

test("the statistics fit a 1280 px screen in every language, a winnable row among them", async ({ page, server }) => {
  await register(page, server.url, uniqueName("wide"));
  await page.locator('button.level[data-level="medium"]').click();
  await page.locator('[data-deal-kind="winnable"]').click();
  await page.locator('[data-action="play"]').click();
  await expect(page.locator("main.game")).toBeVisible();
  await page.locator('.tools [data-action="resign"]').click();
  await page.locator(".dialog .yes").click();
  await expect(page.locator("main.results")).toBeVisible();
  await page.locator("header nav button", { hasText: STRINGS.en.statistics }).click();
  await expect(page.locator('.stats-page tr[data-winnable="true"]')).toHaveCount(1);
  for (const locale of ["en", "fi", "ru"] as const) {
    await page.locator("select.language").selectOption(locale);
    await expect(page).toHaveTitle(`${STRINGS[locale].statistics} — ${STRINGS[locale].title}`); // the screen, then the page
    await expect(page.locator(".stats-page thead th").nth(4)).toHaveText(STRINGS[locale].winRate);
    const { scrollWidth, clientWidth } = await page.$eval(".stats-page .scroll", (node) => ({ scrollWidth: node.scrollWidth, clientWidth: node.clientWidth }));
    expect(scrollWidth, `${locale}: the table is ${scrollWidth} px in a box of ${clientWidth} px`).toBeLessThanOrEqual(clientWidth);
    await expect(page.locator(".scroll-note")).toBeHidden();
    await page.screenshot({ path: join(SHOTS, `stats-${locale}-1280x800.png`) });
  }
  await page.locator("select.language").selectOption("en");
});
