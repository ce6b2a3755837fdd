import { describe, expect, it } from "vitest";
import { cardFace, cardLabel, cardsInText, clock, percent, spokenText } from "../src/format";
import { preferredLocale, setLocale, STRINGS } from "../src/i18n";

// setLocale also sets the page's lang and title; these tests run without a page.
(globalThis as { document?: unknown }).document = { documentElement: { lang: "" }, title: "" };

describe("format", () => {
  it("reads the server's two-character cards", () => {
    expect(cardFace("TH")).toEqual({ rank: "10", suit: "H", red: true });
    expect(cardFace("AS")).toEqual({ rank: "A", suit: "S", red: false });
    expect(cardLabel("QD")).toBe("Q♦");
    expect(cardLabel("4C")).toBe("4♣");
    expect(() => cardFace("1X")).toThrow();
  });

  it("shows the cards a server message names as the table does, and nothing else", () => {
    expect(cardsInText("7C has nowhere to go.")).toBe("7♣ has nowhere to go.");
    expect(cardsInText("Карту QH можно положить только на карту ровно на ранг старше.")).toBe(
      "Карту Q♥ можно положить только на карту ровно на ранг старше.",
    );
    expect(cardsInText("KS, TD and 2H")).toBe("K♠, 10♦ and 2♥");
    expect(cardsInText("There is no column 12. ABS 1S 7CS")).toBe("There is no column 12. ABS 1S 7CS");
  });

  it("shows play time as m:ss and h:mm:ss", () => {
    expect(clock(0)).toBe("0:00");
    expect(clock(5_999)).toBe("0:05");
    expect(clock(402_000)).toBe("6:42");
    expect(clock(3_723_000)).toBe("1:02:03");
  });

  it("names the cards a text shows by their symbols, as a screen reader says cards", () => {
    expect(spokenText("5♥ must go onto a card exactly one rank higher.")).toBe("5 of hearts must go onto a card exactly one rank higher.");
    expect(spokenText("K♠, 10♦ and A♣")).toBe("king of spades, 10 of diamonds and ace of clubs");
    expect(spokenText("Column 12♥ stays")).toBe("Column 12♥ stays"); // no card: 12 is no rank
    setLocale("ru");
    expect(spokenText("Карту Q♥ можно положить")).toBe("Карту дама червей можно положить");
    setLocale("en");
  });

  it("shows a win rate as a whole percentage", () => {
    expect(percent(0)).toBe("0%");
    expect(percent(0.4166)).toBe("42%");
    expect(percent(1)).toBe("100%");
    // 199 wins of 200 showed "100%", 1 of 201 "0%"
    expect(percent(199 / 200)).toBe("99%");
    expect(percent(999 / 1000)).toBe("99%");
    expect(percent(1 / 201)).toBe("1%");
  });

  it("writes a percentage as the page's language does: a space before the sign in Finnish and Russian", () => {
    for (const locale of ["fi", "ru"] as const) {
      setLocale(locale);
      expect(percent(0.4166), locale).toBe("42 %");
    }
    setLocale("en");
  });
});

describe("strings", () => {
  it("has every key in every language, with the same placeholders", () => {
    const keys = Object.keys(STRINGS.en).sort();
    for (const strings of [STRINGS.fi, STRINGS.ru]) {
      expect(Object.keys(strings).sort()).toEqual(keys);
      for (const key of keys) {
        const holes = (text: string) => (text.match(/\{\w+\}/g) ?? []).sort();
        expect(holes(strings[key as keyof typeof strings]), key).toEqual(holes(STRINGS.en[key as keyof typeof STRINGS.en]));
      }
    }
  });

  it("picks the browser's language when it is one of ours", () => {
    expect(preferredLocale(["fi-FI", "en"])).toBe("fi");
    expect(preferredLocale(["de", "ru-RU"])).toBe("ru");
    expect(preferredLocale(["de"])).toBe("en");
  });
});
