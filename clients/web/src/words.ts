/**
 * What the game screen says about a hint and a proof of loss, and which of a
 * level's statistics rows is which. Kept apart from the DOM so the wording can
 * be tested on its own.
 *
 * A level has up to two stats rows (PROTOCOL.md, the `stats` reply): its
 * random and chosen deals (`winnable: false`) and, once the player finished a
 * game asked for as winnable, those games (`winnable: true`). The two are never
 * added up: a winnable streak is not the level's streak.
 */
import { cardLabel, cardsInText, spokenCard } from "./format";
import { t, type Key } from "./i18n";
import type { NameProblem } from "./names";
import type { ErrorReply, HintEvent, StatsRow, VerifyResultRejectedAction } from "./wire";

type Level = StatsRow["level"];
type RuleCode = VerifyResultRejectedAction["code"];

/** The rule codes (PROTOCOL.md section 9): the server words them in the hello's locale. */
const RULE_CODES: Record<RuleCode, true> = {
  not_face_up: true,
  bad_column: true,
  same_column: true,
  empty_column_kings_only: true,
  not_one_lower: true,
  same_suit_required: true,
  no_destination: true,
  stock_empty: true,
  stock_not_allowed: true,
  nothing_to_undo: true,
  game_over: true,
};

export function isRuleCode(code: string): code is RuleCode {
  return Object.hasOwn(RULE_CODES, code);
}

type ProtocolCode = Exclude<ErrorReply["code"], RuleCode>;

/** The page's own words for every other code (PROTOCOL.md section 9), in every language. */
const ERROR_KEYS: Record<ProtocolCode, Key> = {
  bad_request: "error_bad_request",
  hello_required: "error_hello_required",
  unsupported_version: "error_unsupported_version",
  already_signed_in: "error_already_signed_in",
  not_open: "error_not_open",
  id_reused: "error_id_reused",
  not_found: "error_not_found",
  forbidden: "error_forbidden",
  stale: "error_stale",
  paused: "error_paused",
  duplicate_name: "error_duplicate_name",
  unauthenticated: "error_unauthenticated",
  rate_limited: "error_rate_limited",
  game_too_long: "error_game_too_long",
  too_many_watchers: "error_too_many_watchers",
  unavailable: "error_unavailable",
  internal: "error_internal",
};

/**
 * A refusal as the page says it, in the page's language. A rule's refusal is
 * the server's message, already in the player's language, with its cards
 * shown as the table shows them ("7♣", not "7C"). Every other code is said in
 * the page's own words, never the server's (English, or meant for developers:
 * "register.name must be printable string of 1..32 chars"); a code this page
 * does not know is said like `internal` (section 9). `during` words a code
 * for what was asked: a name refused as `bad_request` is a name that is no
 * name, a stored token refused by the hello is one to forget.
 */
export function errorText(reply: Pick<ErrorReply, "code" | "message">, during?: "register" | "hello"): string {
  const code: string = reply.code;
  if (isRuleCode(code)) return cardsInText(reply.message);
  if (during === "register" && code === "bad_request") return t("badName");
  if (during === "hello" && (code === "unauthenticated" || code === "bad_request")) return t("badToken");
  return t(Object.hasOwn(ERROR_KEYS, code) ? ERROR_KEYS[code as ProtocolCode] : "error_internal");
}

/** Why a typed name is not sent (`checkName` in `src/names.ts`), in the page's language. */
export function nameText(found: NameProblem): string {
  if (found.problem === "long") return t("nameLong", { n: found.chars });
  if (found.problem === "spelled") return t("nameSpelled");
  return t(found.problem === "empty" ? "nameEmpty" : "nameChars");
}

/**
 * The hint as a sentence: a move, the deal, or why there is no move to give.
 * `atDeal`: the position hinted is the deal (nothing to undo), where no move
 * can be blamed for a loss, nor undone or restarted: a new game is the way on.
 * `said`: its card by name, as a screen reader says it, as the object of "move"
 * ("переложите даму пик"); else as the table shows it ("Q♠").
 */
export function hintText(hint: Pick<HintEvent, "action" | "card" | "to" | "reason">, atDeal = false, said = false): string {
  if (hint.action === "move" && hint.card) {
    return t("hintMove", { card: said ? spokenCard(hint.card, true) : cardLabel(hint.card), to: hint.to ?? "" });
  }
  if (hint.action === "deal") return t("hintDeal");
  switch (hint.reason) {
    case "lost":
      return atDeal ? t("hintLostDeal") : t("hintLost");
    case "seen":
      // nothing to undo: undo cannot help, nor a restart (the deal is where it would go back to)
      return atDeal ? t("hintSeenDeal") : t("hintSeen");
    case "stuck":
      return t("hintStuck");
    default:
      return t("hintNone");
  }
}

/** A proof of loss: the deal itself (no move spoiled it) or the moves since. */
export function lostText(fromDeal: boolean): string {
  return fromDeal ? t("lostDeal") : t("lostPosition");
}

/** A level's two rows, each only where the server sent it. */
export function levelRows(stats: readonly StatsRow[], level: Level): { random?: StatsRow; winnable?: StatsRow } {
  return {
    random: stats.find((row) => row.level === level && !row.winnable),
    winnable: stats.find((row) => row.level === level && row.winnable),
  };
}
