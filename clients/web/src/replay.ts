/**
 * A finished game played back as a board, step by step, from what the server
 * sends (PROTOCOL.md sections 5 and 14): `open_game` gives the final view, and
 * `open_game` with `since: 0` its whole history, one batch of events per
 * version (a finished game's history names every card: its replay reveals them
 * anyway). Each step is the view after one more batch, by the same reducer the
 * live board uses (`applyEvent`); step 0 is the deal.
 *
 * The deal itself is not sent as a view. A history with a restart carries it:
 * `restarted` puts the deal's columns, stock and reserve back. Otherwise it is
 * the final view with every event taken back, last first (`rewind`), which
 * each event's table row allows: a move goes back whence it came, a flip turns
 * face down again, a suit comes back from its foundation. The two events that
 * drop what they take back, `unflipped` and `undealt`, undo an earlier `flipped`
 * or `dealt`, whose cards the history names. So does a card's place in the
 * reserve, except for a reserve card played and never taken back by an undo:
 * where it lay is said nowhere, so it goes back at the reserve's end.
 *
 * The steps are checked: played forward from the deal they must end on the
 * final view. A history that does not (or none: the server answers a snapshot
 * instead of a history too long to keep or to send) gives no steps, and the
 * caller shows the list of actions alone.
 */
import { applyEvent, cloneView, column } from "./board";
import type { Column, Event, EventBatch, View } from "./wire";

const SUIT_RANKS = ["K", "Q", "J", "T", "9", "8", "7", "6", "5", "4", "3", "2", "A"];

/** The top `count` cards of a column, which must begin with `first`: the history agrees with the view. */
function take(from: Column, count: number, first: string): string[] {
  const cards = from.cards.splice(from.cards.length - count, count);
  if (count > cards.length || cards[0] !== first) throw new Error("the history does not lead to this view");
  return cards;
}

/**
 * What the later events of the history say about the earlier ones, found by
 * playing undo's stack forward: the card an `unflipped` turns down, the cards
 * an `undealt` takes back, the reserve place of a card played from it.
 */
interface Recalled {
  unflipped: Map<Event, string>;
  undealt: Map<Event, string[]>;
  reservePlace: Map<Event, number>;
}

function recall(events: Event[]): Recalled {
  const recalled: Recalled = { unflipped: new Map(), undealt: new Map(), reservePlace: new Map() };
  const flips = new Map<number, string[]>();
  const deals: string[][] = [];
  const fromReserve: Event[] = [];
  for (const event of events) {
    if (event.type === "flipped") {
      flips.set(event.column, [...(flips.get(event.column) ?? []), event.card]);
    } else if (event.type === "unflipped") {
      const card = flips.get(event.column)?.pop();
      if (card !== undefined) recalled.unflipped.set(event, card);
    } else if (event.type === "dealt") {
      deals.push(event.cards);
    } else if (event.type === "undealt") {
      const cards = deals.pop();
      if (cards !== undefined) recalled.undealt.set(event, cards);
    } else if (event.type === "moved" && event.from === "reserve") {
      fromReserve.push(event);
    } else if (event.type === "moved" && event.to === "reserve") {
      const played = fromReserve.pop();
      if (played !== undefined && event.index !== undefined) recalled.reservePlace.set(played, event.index);
    }
  }
  return recalled;
}

/** The view before `event`, given the view after it. */
function takeBack(view: View, event: Event, recalled: Recalled): void {
  switch (event.type) {
    case "moved":
      if (event.to === "reserve") {
        if (!view.reserve.includes(event.card)) throw new Error("the history does not lead to this view");
        view.reserve = view.reserve.filter((card) => card !== event.card);
        if (event.from !== "reserve") column(view, event.from).cards.push(event.card);
      } else {
        const cards = take(column(view, event.to), event.count, event.card);
        if (event.from === "reserve") {
          const place = recalled.reservePlace.get(event) ?? view.reserve.length + 1;
          view.reserve.splice(Math.min(place - 1, view.reserve.length), 0, ...cards);
        } else {
          column(view, event.from).cards.push(...cards);
        }
      }
      break;
    case "flipped": {
      const target = column(view, event.column);
      if (target.cards.length !== 1 || target.cards[0] !== event.card) throw new Error("the history does not lead to this view");
      target.cards = [];
      target.down += 1;
      break;
    }
    case "unflipped": {
      const card = recalled.unflipped.get(event);
      const target = column(view, event.column);
      if (card === undefined || target.cards.length > 0) throw new Error("the history turns down a card it never turned up");
      target.down -= 1;
      target.cards = [card];
      break;
    }
    case "dealt":
      event.cards.forEach((card, i) => take(column(view, i + 1), 1, card));
      view.stock = event.cards.length;
      break;
    case "undealt": {
      const cards = recalled.undealt.get(event);
      if (cards === undefined) throw new Error("the history takes back a deal it never dealt");
      cards.forEach((card, i) => column(view, i + 1).cards.push(card));
      view.stock = 0;
      break;
    }
    case "suit_removed":
      if (view.foundations.pop() !== event.suit) throw new Error("the history does not lead to this view");
      column(view, event.column).cards.push(...SUIT_RANKS.map((rank) => rank + event.suit));
      break;
    case "suit_restored":
      take(column(view, event.column), 13, "K" + event.suit);
      view.foundations.push(event.suit);
      break;
    case "restarted":
    case "snapshot":
      throw new Error("a restart or a snapshot cannot be taken back");
    default:
      // score, won, game_lost, hint, undone, stuck, clock, lost_position: the deal's record is set below
      break;
  }
}

/** The record every game starts with: nothing played, nothing counted. */
function atTheDeal(view: View): View {
  return {
    ...view,
    foundations: [],
    score: 0,
    moves: 0,
    undos: 0,
    hints: 0,
    earned: 0,
    time_ms: 0,
    running: false,
    undo_depth: 0,
    won: false,
    stuck: false,
    status: "active",
  };
}

/** The deal: from the first `restarted` of the history, else the final view with every event taken back. */
export function rewind(final: View, batches: readonly EventBatch[]): View {
  const events = batches.flatMap((batch) => batch.events);
  const restart = events.find((event) => event.type === "restarted");
  if (restart?.type === "restarted") {
    const columns = restart.columns.map((each) => ({ down: each.down, cards: [...each.cards] }));
    return atTheDeal({ ...cloneView(final), columns, stock: restart.stock, reserve: [...restart.reserve] });
  }
  const recalled = recall(events);
  const view = cloneView(final);
  for (let i = events.length - 1; i >= 0; i--) takeBack(view, events[i], recalled);
  return atTheDeal(view);
}

/** Where the cards are: what two views must share to show the same board. */
function sameTable(a: View, b: View): boolean {
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  return (
    same(a.columns, b.columns) &&
    a.stock === b.stock &&
    same([...a.reserve].sort(), [...b.reserve].sort()) &&
    same(a.foundations, b.foundations) &&
    a.status === b.status
  );
}

/**
 * The view at every step of a finished game: step 0 the deal, step i the view
 * after version i. Null when the history does not lead to the final view.
 */
export function replaySteps(final: View, batches: readonly EventBatch[]): View[] | null {
  if (final.status === "active" || batches.some((batch, i) => batch.v !== i + 1)) return null;
  let steps: View[];
  try {
    steps = [rewind(final, batches)];
    for (const batch of batches) {
      steps.push(batch.events.reduce(applyEvent, steps[steps.length - 1]));
    }
  } catch {
    return null;
  }
  return sameTable(steps[steps.length - 1], final) ? steps : null;
}

/** The card a step moved (the last one, when it moved more), to point at on the board. */
export function movedCard(batch: EventBatch | undefined): string | undefined {
  let card: string | undefined;
  for (const event of batch?.events ?? []) {
    if (event.type === "moved") card = event.card;
  }
  return card;
}
