// The name rule the sign-in page checks before sending `register` (src/names.ts),
// clause by clause as PROTOCOL.md states it: each case's expectation follows from
// the clause it is listed under (the same cases run against the server's own
// checks give the same verdicts: a name sent is one the server keeps as sent).
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { setLocale, STRINGS } from "../src/i18n";
import { checkName, type CheckedName, hasInvisible } from "../src/names";
import { nameText } from "../src/words";

(globalThis as { document?: unknown }).document = { documentElement: { lang: "" }, title: "" };
afterEach(() => setLocale("en"));

const PROTOCOL = readFileSync(new URL("../../../protocol/PROTOCOL.md", import.meta.url), "utf8").replace(/\s+/g, " ");

const sent = (name: string): CheckedName => ({ name });
const EMPTY: CheckedName = { problem: "empty" };
const CHARS: CheckedName = { problem: "chars" };
const long = (chars: number): CheckedName => ({ problem: "long", chars });

/** [what PROTOCOL.md says, [what was typed, what the page does]...] */
const CLAUSES: [string, [string, CheckedName][]][] = [
  [
    "| `name` | printable string of 1..32 chars | yes |",
    [
      ["a", sent("a")],
      ["x".repeat(32), sent("x".repeat(32))],
      ["x".repeat(33), long(33)],
      ["", EMPTY],
      // chars are code points, as Python counts them: a scorpion is two UTF-16 units
      ["🦂".repeat(32), sent("🦂".repeat(32))],
      ["🦂".repeat(33), long(33)],
    ],
  ],
  [
    "It is stored trimmed of leading and trailing space",
    [
      ["  ada  ", sent("ada")],
      ["   ", EMPTY],
      [" " + "x".repeat(32) + " ", sent("x".repeat(32))],
      ["ada lovelace", sent("ada lovelace")], // a space inside is printable
      ["\tada\n", sent("ada")], // what the page trims is not sent at all
    ],
  ],
  [
    "and in Unicode NFC",
    [
      ["e\u0301", sent("\u00e9")],
      ["e\u0301".repeat(32), sent("\u00e9".repeat(32))], // sent composed: 32 characters, not 64
      ["\u0958".repeat(17), long(34)], // a composition exclusion: NFC is two characters each
    ],
  ],
  [
    "Its length bound holds as sent and again for that stored form, which NFC may make longer: U+0958 DEVANAGARI LETTER QA is two code points in NFC, so a name of 20 of them counts 40 and is `bad_request`.",
    [
      ["\u0958".repeat(20), long(40)],
      ["\u0958".repeat(16), sent("\u0915\u093c".repeat(16))],
    ],
  ],
  [
    "Two names that differ only in case or Unicode compatibility form (`EVE`, `eve`, `ｅｖｅ`) are the same name (`duplicate_name`)",
    [
      ["ｅｖｅ", sent("ｅｖｅ")], // a name, kept as typed (the server compares, the page does not)
      ["Strauß", sent("Strauß")],
      ["Ада", sent("Ада")],
      ["名前", sent("名前")],
      ["O'Brien-Smith", sent("O'Brien-Smith")],
    ],
  ],
  [
    "(`str.isprintable()`: no control, format or separator characters but the space)",
    [
      // control (Cc)
      ["tab\there", CHARS],
      ["bell\u0007x", CHARS],
      ["del\u007f", CHARS],
      ["nel\u0085x", CHARS],
      ["line\nbreak", CHARS],
      // format (Cf)
      ["zw\u200bsp", CHARS],
      ["rtl\u202eevil", CHARS],
      ["soft\u00adhyphen", CHARS],
      ["a\ufeffb", CHARS],
      ["a\u200db", CHARS],
      // separators (Zs, Zl, Zp) but the space
      ["a\u3000b", CHARS],
      ["\u3000\u3000", EMPTY], // ideographic spaces only: trimmed to nothing
      ["a\u00a0b", CHARS],
      ["a\u2003b", CHARS],
      ["a\u2028b", CHARS],
      ["a\u2029b", CHARS],
      // the rest of Python's "Other": a lone surrogate, private use, unassigned
      ["a\ud800b", CHARS],
      ["a\ue000b", CHARS],
      ["a\u0378b", CHARS],
      // marks, symbols and punctuation are printable
      ["a\u0301", sent("\u00e1")],
      ["♠♥♦♣!", sent("♠♥♦♣!")],
    ],
  ],
  [
    "No character of a name may show as nothing: none of Unicode's Default_Ignorable_Code_Point",
    [
      ["ad\u034fmin", CHARS], // looks like "admin"
      ["ad\ufe0fmin", CHARS],
      ["ad\u180fmin", CHARS],
      ["admin\u{e0100}", CHARS],
      ["\u3164\u3164\u3164", CHARS], // looks like no name at all
      ["\u2800\u2800\u115f", CHARS],
      ["a\uffa0b", CHARS],
      ["a\u1160b", CHARS],
      ["\u2801", sent("\u2801")], // a braille pattern with a dot shows
      ["ㄱ", sent("ㄱ")],
      // but a variation selector that changes the visible character before it
      ["Anna \u2764\ufe0f", sent("Anna \u2764\ufe0f")], // the heart an emoji keyboard types
      ["1\ufe0f\u20e3", sent("1\ufe0f\u20e3")], // a keycap
      ["\u845b\u{e0100}", sent("\u845b\u{e0100}")], // a kanji's glyph
      ["\u1820\u180b", sent("\u1820\u180b")], // a Mongolian letter's form
      ["admin\ufe0f", CHARS], // after a Latin, Greek or Cyrillic letter it changes nothing
      ["Renée\ufe0f", CHARS],
      ["\u2764\ufe0f\ufe0f", CHARS],
    ],
  ],
];

describe("a name, as PROTOCOL.md says the server takes it", () => {
  for (const [clause, cases] of CLAUSES) {
    it(clause, () => {
      expect(PROTOCOL, "the clause is still PROTOCOL.md's").toContain(clause);
      for (const [typed, expected] of cases) expect(checkName(typed), JSON.stringify(typed)).toEqual(expected);
    });
  }

  it("refuses what the server's table refuses, which is Unicode's Default_Ignorable_Code_Point", () => {
    const table = readFileSync(new URL("../../../protocol/names.py", import.meta.url), "utf8");
    const ranges = [...table.matchAll(/\(0x([0-9A-F]+), 0x([0-9A-F]+)\)/g)].map(([, a, b]) => [parseInt(a, 16), parseInt(b, 16)]);
    expect(ranges.length).toBeGreaterThan(10);
    const blank = [0x115f, 0x1160, 0x3164, 0xffa0, 0x2800];
    const ignorable = /\p{Default_Ignorable_Code_Point}/u;
    const unlike: string[] = []; // code points where the page, the server or Unicode differ
    for (let code = 0; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue; // a lone surrogate is not printable anyway
      const char = String.fromCodePoint(code);
      const listed = ranges.some(([a, b]) => a <= code && code <= b) || blank.includes(code);
      const unicode = ignorable.test(char) || blank.includes(code);
      if (hasInvisible(`a${char}`) !== listed || unicode !== listed) unlike.push(code.toString(16));
    }
    expect(unlike).toEqual([]);
  });

  it("section 13's limit is the same", () => {
    expect(PROTOCOL).toContain("| player name | 1..32 printable characters, as sent and as stored (trimmed, in NFC: `register`) |");
  });

  it("compared in NFKC case fold of at most 128 characters (the server's check_name)", () => {
    // U+FDFA is 18 letters in NFKC: seven are 126, eight 144
    expect(checkName("\ufdfa".repeat(7))).toEqual(sent("\ufdfa".repeat(7)));
    expect(checkName("\ufdfa".repeat(8))).toEqual({ problem: "spelled" });
  });
});

describe("why a name is not sent", () => {
  it("is said in the page's language", () => {
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      expect(nameText({ problem: "empty" })).toBe(STRINGS[locale].nameEmpty);
      expect(nameText({ problem: "chars" })).toBe(STRINGS[locale].nameChars);
      expect(nameText({ problem: "spelled" })).toBe(STRINGS[locale].nameSpelled);
      expect(nameText({ problem: "long", chars: 40 })).toBe(STRINGS[locale].nameLong.replace("{n}", "40"));
    }
  });
});
