import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { setLocale, STRINGS } from "../src/i18n";
import type { StatsRow } from "../src/wire";
import { errorText, hintText, levelRows, lostText } from "../src/words";

function row(level: StatsRow["level"], winnable: boolean, games: number): StatsRow {
  return {
    level,
    winnable,
    games,
    wins: 0,
    losses: games,
    win_rate: 0,
    current_streak: 0,
    best_streak: 0,
    best_score: null,
    fastest_win_ms: null,
    fewest_moves: null,
  } as StatsRow;
}

// setLocale also sets the page's lang; these tests run without a page.
(globalThis as { document?: unknown }).document = { documentElement: { lang: "" } };
afterEach(() => setLocale("en"));

describe("hint wording", () => {
  it("names a move or the deal", () => {
    setLocale("en");
    expect(hintText({ action: "move", card: "KS", to: 3 })).toBe("Hint: move K♠ to column 3.");
    expect(hintText({ action: "move", card: "KS", to: 3 }, false, true)).toBe("Hint: move king of spades to column 3.");
    setLocale("ru");
    expect(hintText({ action: "move", card: "QS", to: 1 }, false, true)).toBe("Подсказка: переложите даму пик в столбец 1.");
    setLocale("en");
    expect(hintText({ action: "deal" })).toBe(STRINGS.en.hintDeal);
  });

  it("says why there is no move, by the reply's reason, in every language", () => {
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      const strings = STRINGS[locale];
      expect(hintText({ action: "none", reason: "lost" })).toBe(strings.hintLost);
      expect(hintText({ action: "none", reason: "seen" })).toBe(strings.hintSeen);
      expect(hintText({ action: "none", reason: "stuck" })).toBe(strings.hintStuck);
      expect(hintText({ action: "none" })).toBe(strings.hintNone);
    }
    const en = STRINGS.en;
    expect(new Set([en.hintLost, en.hintSeen, en.hintStuck, en.hintMove, en.hintDeal]).size).toBe(5);
  });

  it("blames no move at the deal: a lost deal is said as such, with a new game as the way on", () => {
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      const strings = STRINGS[locale];
      expect(hintText({ action: "none", reason: "lost" }, true)).toBe(strings.hintLostDeal);
      expect(strings.hintLostDeal).not.toBe(strings.hintLost);
      expect(hintText({ action: "none", reason: "seen" }, true)).toBe(strings.hintSeenDeal);
      expect(strings.hintSeenDeal).not.toBe(strings.hintSeen);
      // the other reasons are worded alike anywhere
      expect(hintText({ action: "none", reason: "stuck" }, true)).toBe(strings.hintStuck);
    }
    setLocale("en");
    const atDeal = hintText({ action: "none", reason: "lost" }, true);
    expect(atDeal).toBe("No move can win this deal, whatever is played: start a new game to try another deal.");
    expect(atDeal).not.toMatch(/undo|restart|any more/i);
    const seenAtDeal = hintText({ action: "none", reason: "seen" }, true);
    expect(seenAtDeal).toBe(
      "Every move left leads back to a position this game has already been in: start a new game to try another deal.",
    );
    expect(seenAtDeal).not.toMatch(/undo|restart/i);
    setLocale("fi");
    expect(hintText({ action: "none", reason: "seen" }, true)).not.toMatch(/kumoa|alusta/i);
    setLocale("ru");
    expect(hintText({ action: "none", reason: "seen" }, true)).not.toMatch(/отмените|заново/i);
    setLocale("en");
  });
});

describe("lost wording", () => {
  it("tells a deal lost from the start from a position lost by the moves since", () => {
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      expect(lostText(true)).toBe(STRINGS[locale].lostDeal);
      expect(lostText(false)).toBe(STRINGS[locale].lostPosition);
      expect(lostText(true)).not.toBe(lostText(false));
    }
    setLocale("en");
    expect(lostText(true)).toBe("This deal cannot be won, whatever is played: none of your moves spoiled it.");
    expect(lostText(false)).toBe("This position can no longer be won.");
  });
});

describe("a level's stats rows", () => {
  it("keeps the winnable row apart from the random one", () => {
    const stats = [row("easy", false, 1), row("hard", false, 4), row("hard", true, 2), row("classic", false, 0)];
    expect(levelRows(stats, "hard").random?.games).toBe(4);
    expect(levelRows(stats, "hard").winnable?.games).toBe(2);
    expect(levelRows(stats, "classic").random?.games).toBe(0);
    expect(levelRows(stats, "classic").winnable).toBeUndefined();
    expect(levelRows(stats, "relaxed")).toEqual({ random: undefined, winnable: undefined });
  });
});

describe("a rule's refusal", () => {
  it("names its card as the table shows cards, in every language", () => {
    // the server's words for no_destination in en, fi and ru (engine/errors.py)
    expect(errorText({ code: "no_destination", message: "7C has nowhere to go." })).toBe("7♣ has nowhere to go.");
    expect(errorText({ code: "no_destination", message: "Kortille 7S ei ole paikkaa." })).toBe("Kortille 7♠ ei ole paikkaa.");
    expect(errorText({ code: "no_destination", message: "Карту 5S некуда переложить." })).toBe("Карту 5♠ некуда переложить.");
    expect(errorText({ code: "same_column", message: "TH is already in column 3." })).toBe("10♥ is already in column 3.");
    expect(errorText({ code: "not_one_lower", message: "AD must go onto a card exactly one rank higher." })).toBe(
      "A♦ must go onto a card exactly one rank higher.",
    );
    expect(errorText({ code: "nothing_to_undo", message: "There is nothing left to undo." })).toBe("There is nothing left to undo.");
  });
});

/** Every error code the protocol has (protocol/schema.json, the error reply's `code`). */
const SCHEMA = JSON.parse(readFileSync(new URL("../../../protocol/schema.json", import.meta.url), "utf8"));
const CODES: string[] = SCHEMA.$defs["reply-error"].properties.code.oneOf.map((each: { const: string }) => each.const);
const RULES = ["not_face_up", "bad_column", "same_column", "empty_column_kings_only", "not_one_lower", "same_suit_required",
  "no_destination", "stock_empty", "stock_not_allowed", "nothing_to_undo", "game_over"];

describe("any other refusal", () => {
  it("is said in the page's language by its code, never in the server's words", () => {
    expect(CODES).toContain("duplicate_name");
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      const said = new Set<string>();
      for (const code of CODES.filter((each) => !RULES.includes(each))) {
        const text = errorText({ code, message: "English words of the server's" } as never);
        expect(text, code).not.toContain("server's");
        expect(text, code).toBe(STRINGS[locale][`error_${code}` as keyof typeof STRINGS.en]);
        said.add(text);
      }
      expect(said.size).toBe(CODES.length - RULES.length); // each code its own words
    }
  });

  it("words a refused name, a refused stored token and a code it does not know", () => {
    for (const locale of ["en", "fi", "ru"] as const) {
      setLocale(locale);
      const strings = STRINGS[locale];
      // a name of only spaces, as the server words its refusal
      const name = { code: "bad_request", message: "register.name must be printable string of 1..32 chars, got ''" } as const;
      expect(errorText(name, "register")).toBe(strings.badName);
      expect(errorText({ code: "duplicate_name", message: "Another player already has that name." }, "register")).toBe(
        strings.error_duplicate_name,
      );
      expect(errorText({ code: "unauthenticated", message: "Unknown, revoked or expired token." }, "hello")).toBe(strings.badToken);
      expect(errorText({ code: "bad_request", message: "hello.token must be string of 1..128 chars" }, "hello")).toBe(strings.badToken);
      expect(errorText({ code: "unauthenticated", message: "Unknown, revoked or expired token." })).toBe(strings.error_unauthenticated);
      expect(errorText({ code: "teapot", message: "I'm a teapot" } as never)).toBe(strings.error_internal);
    }
    setLocale("fi");
    expect(errorText({ code: "duplicate_name", message: "Another player already has that name." })).toBe(
      "Nimi on jo toisella pelaajalla: valitse toinen.",
    );
  });
});
