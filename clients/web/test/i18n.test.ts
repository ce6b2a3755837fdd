import { afterEach, describe, expect, it } from "vitest";
import { spokenCard, spokenFoundation } from "../src/format";
import { COUNTS, LOCALES, regionalLocale, setLocale, STRINGS, tn } from "../src/i18n";

// setLocale also sets the page's lang and title; these tests run without a page.
const page = { documentElement: { lang: "" }, title: "" };
(globalThis as { document?: unknown }).document = page;
afterEach(() => setLocale("en"));

const holes = (text: string) => (text.match(/\{\w+\}/g) ?? []).sort();

describe("counts", () => {
  it("have a form for every plural category of every language, with the same placeholders", () => {
    for (const locale of LOCALES) {
      const categories = new Intl.PluralRules(locale).resolvedOptions().pluralCategories;
      expect(Object.keys(COUNTS[locale]).sort(), locale).toEqual(Object.keys(COUNTS.en).sort());
      for (const [key, forms] of Object.entries(COUNTS[locale])) {
        expect(Object.keys(forms).sort(), `${locale} ${key}`).toEqual([...categories].sort());
        for (const form of Object.values(forms)) {
          expect(form, `${locale} ${key}`).not.toBe("");
          expect(holes(form ?? ""), `${locale} ${key}`).toEqual(["{n}"]);
        }
      }
    }
  });

  it("take the Russian form of each number", () => {
    setLocale("ru");
    const cards: Record<number, string> = { 1: "карта", 2: "карты", 5: "карт", 11: "карт", 21: "карта", 22: "карты", 25: "карт", 111: "карт" };
    for (const [n, word] of Object.entries(cards)) {
      expect(tn("faceDown", Number(n))).toBe(`${n} ${word} рубашкой вверх`);
      expect(tn("faceUp", Number(n))).toBe(`${n} ${word} лицом вверх`);
    }
  });

  it("take the Finnish and English form of each number", () => {
    setLocale("fi");
    expect(tn("faceDown", 1)).toBe("1 kortti kuvapuoli alaspäin");
    expect(tn("faceDown", 2)).toBe("2 korttia kuvapuoli alaspäin");
    expect(tn("faceUp", 21)).toBe("21 korttia kuvapuoli ylöspäin");
    setLocale("en");
    expect(tn("faceUp", 1)).toBe("1 face up");
    expect(tn("faceUp", 4)).toBe("4 face up");
  });
});

describe("the page's title", () => {
  it("is said in the page's language", () => {
    for (const locale of LOCALES) {
      setLocale(locale);
      expect(page.title).toBe(STRINGS[locale].title);
      expect(page.documentElement.lang).toBe(locale);
    }
    expect(STRINGS.ru.title).toContain("Скорпион");
  });
});

describe("cards said", () => {
  it("name a card by its rank and suit, in each language's order and case", () => {
    expect(spokenCard("QS")).toBe("queen of spades");
    expect(spokenCard("TH")).toBe("10 of hearts");
    setLocale("fi");
    expect(spokenCard("AC")).toBe("ristiässä");
    expect(spokenCard("QS")).toBe("patakuningatar");
    expect(spokenCard("7D")).toBe("ruutu 7");
    setLocale("ru");
    expect(spokenCard("QS")).toBe("дама пик");
    expect(spokenCard("KH")).toBe("король червей");
    expect(spokenCard("2D")).toBe("2 бубен");
  });

  it("name a card as a verb's object in the case its language asks there", () => {
    expect(spokenCard("QS", true)).toBe("queen of spades");
    setLocale("fi");
    expect(spokenCard("QS", true)).toBe("patakuningatar");
    // Russian: the accusative, the named ranks being animate
    setLocale("ru");
    expect(["AS", "JH", "QS", "KC", "TD"].map((card) => spokenCard(card, true))).toEqual(["туза пик", "валета червей", "даму пик", "короля треф", "10 бубен"]);
  });

  it("name a completed suit on the foundations by its suit, not its symbols", () => {
    expect(spokenFoundation("H")).toBe("Completed suit: hearts");
    setLocale("fi");
    expect(spokenFoundation("C")).toBe("Valmis maa: risti");
    setLocale("ru");
    expect(spokenFoundation("S")).toBe("Собранная масть пик");
  });
});

describe("dates", () => {
  it("are written in the browser's own variant of the page's language, else in the page's", () => {
    expect(regionalLocale("en", ["en-GB", "en"])).toBe("en-GB");
    expect(regionalLocale("en", ["fi-FI", "en-gb"])).toBe("en-GB");
    expect(regionalLocale("en", ["fi-FI", "ru"])).toBe("en"); // a language chosen on the page
    expect(regionalLocale("fi", ["en-GB", "fi"])).toBe("fi");
    expect(regionalLocale("en", ["en-", "en-AU"])).toBe("en-AU"); // no language tag: the next
    const july = new Date(2026, 6, 12);
    expect(july.toLocaleDateString(regionalLocale("en", ["en-GB"]))).toBe("12/07/2026");
  });
});

describe("words", () => {
  it("name one thing by one word in Russian: a deal is «расклад», never «раскладка»", () => {
    expect(Object.entries(STRINGS.ru).filter(([, text]) => /раскладк/i.test(text))).toEqual([]);
  });
});
