/** Formatting for people: cards, play time, rates. No game knowledge beyond the card spelling (R2). */

import { t } from "./i18n";

export type Suit = "S" | "H" | "D" | "C";

export const SUIT_SYMBOL: Record<Suit, string> = { S: "♠", H: "♥", D: "♦", C: "♣" };

export interface CardFace {
  rank: string;
  suit: Suit;
  red: boolean;
}

/** "TH" → {rank "10", suit "H", red}. The server always sends the two-character form. */
export function cardFace(card: string): CardFace {
  const rank = card.slice(0, -1);
  const suit = card.slice(-1) as Suit;
  if (!(suit in SUIT_SYMBOL) || rank.length !== 1) throw new Error(`not a card: ${card}`);
  return { rank: rank === "T" ? "10" : rank, suit, red: suit === "H" || suit === "D" };
}

/**
 * A card as a screen reader should say it, in the page's language: "queen of spades", "10 of hearts", "patakuningatar".
 * `object`: the card is the object of a verb ("move the queen of spades"), in the case its language asks
 * there: Russian «переложите даму пик», not «дама пик» (a number card's words stay: «7 пик»).
 */
export function spokenCard(card: string, object = false): string {
  const face = cardFace(card);
  const suit = t(`suit_${face.suit}`);
  if (face.rank === "A" || face.rank === "J" || face.rank === "Q" || face.rank === "K") {
    const rank = object ? t(`rankObject_${face.rank}`) : t(`rank_${face.rank}`);
    return t("cardSpokenNamed", { rank, suit }); // Finnish: one word, "patakuningatar"
  }
  return t("cardSpoken", { rank: face.rank, suit });
}

/** A completed suit on the foundations as a screen reader should say it, in the page's language: "Completed suit: hearts". */
export function spokenFoundation(suit: Suit): string {
  return t("foundationSpoken", { suit: t(`suit_${suit}`) });
}

/** "10♥" */
export function cardLabel(card: string): string {
  const face = cardFace(card);
  return face.rank + SUIT_SYMBOL[face.suit];
}

/** A card as the server spells it in its messages' text ("7C"): a rank and a suit, standing alone. */
const WIRE_CARD = /\b[2-9TJQKA][SHDC]\b/g;

/**
 * A server message with the cards it names as the page shows cards:
 * "7C has nowhere to go." → "7♣ has nowhere to go." (the server words a rule's
 * refusal in the player's language, but names cards in the wire's spelling).
 */
export function cardsInText(text: string): string {
  return text.replace(WIRE_CARD, (card) => cardLabel(card));
}

/** A card as the page shows it in a text ("5♥", "10♠"), standing alone. */
const SHOWN_CARD = /(?<![\p{L}\p{N}])(10|[2-9JQKA])([♠♥♦♣])/gu;
const SUIT_OF_SYMBOL: Record<string, Suit> = { "♠": "S", "♥": "H", "♦": "D", "♣": "C" };

/**
 * A text with the cards it shows by their symbols ("5♥ must go onto a card…",
 * `cardsInText`) as a screen reader should say it: each card by name ("5 of
 * hearts must go onto a card…"), as `spokenCard` names it.
 */
export function spokenText(text: string): string {
  return text.replace(SHOWN_CARD, (_, rank: string, suit: string) => spokenCard(`${rank === "10" ? "T" : rank}${SUIT_OF_SYMBOL[suit]}`));
}

/** Play time as m:ss, or h:mm:ss from an hour on. */
export function clock(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  if (hours > 0) return `${hours}:${String(minutes).padStart(2, "0")}:${seconds}`;
  return `${minutes}:${seconds}`;
}

/**
 * A win rate in 0..1 as a whole percentage, written as the page's language writes one ("42%",
 * "42 %"); never 100 % with a loss nor 0 % with a win (199 of 200 is "99%").
 */
export function percent(rate: number): string {
  const shown = Math.round(rate * 100);
  return t("percent", { n: rate > 0 && rate < 1 ? Math.min(Math.max(shown, 1), 99) : shown });
}
