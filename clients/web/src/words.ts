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
import { cardLabel, cardsInText } from "./format";
import { t } from "./i18n";
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

/**
 * A refusal as the page says it. A rule's refusal is the server's message,
 * already in the player's language, with its cards shown as the table shows
 * them ("7♣", not "7C").
 */
export function errorText(reply: Pick<ErrorReply, "code" | "message">): string {
  if (isRuleCode(reply.code)) return cardsInText(reply.message);
  return reply.message;
}

/** The hint as a sentence: a move, the deal, or why there is no move to give. */
export function hintText(hint: Pick<HintEvent, "action" | "card" | "to" | "reason">): string {
  if (hint.action === "move" && hint.card) return t("hintMove", { card: cardLabel(hint.card), to: hint.to ?? "" });
  if (hint.action === "deal") return t("hintDeal");
  switch (hint.reason) {
    case "lost":
      return t("hintLost");
    case "seen":
      return t("hintSeen");
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
