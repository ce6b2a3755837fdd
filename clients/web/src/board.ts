/**
 * The board, kept from the server's events alone (protocol/PROTOCOL.md,
 * "Keeping the view"): a snapshot (`game` reply, `snapshot` event) replaces it,
 * every other event changes it as the table there says. There is no rules
 * engine here: nothing is inferred that the server did not say.
 *
 * `GameBoard` adds what a client keeps beside the view: the game id, the last
 * version seen, and the local moment the view's `time_ms` was true (`clockAt`),
 * so the clock and the timed score can tick between events (section 6).
 * `receive` decides what a push means for the version (section 5): the next
 * version or the same one is applied, an older one was already applied, and a
 * jump means events were missed and the caller must resync.
 */
import type { CatchUpReply, Column, Event, EventsPush, View } from "./wire";

export interface GameBoard {
  game: number;
  v: number;
  view: View;
  /** performance.now() (or any monotonic ms) when view.time_ms was current. */
  clockAt: number;
  /**
   * The clock was stopped here, not by the server: the connection was lost,
   * and the server stops a game's clock when no connection has it open
   * (section 6). It stays still until the server's time comes again (a
   * resync, or a `clock` or `snapshot` event).
   */
  held?: boolean;
}

function cloneColumns(columns: Column[]): Column[] {
  return columns.map((column) => ({ down: column.down, cards: [...column.cards] }));
}

/** A copy of `view` whose columns, reserve and foundations can be changed freely. */
export function cloneView(view: View): View {
  return {
    ...view,
    columns: cloneColumns(view.columns),
    reserve: [...view.reserve],
    foundations: [...view.foundations],
  };
}

/** Column `number` (1-based) of `view`; throws when there is none. */
export function column(view: View, number: number): Column {
  const found = view.columns[number - 1];
  if (found === undefined) throw new Error(`the view has no column ${number}`);
  return found;
}

/** Throws unless an event fits the board it is applied to (the caller resyncs). */
function fits(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

const SUIT_RANKS = ["K", "Q", "J", "T", "9", "8", "7", "6", "5", "4", "3", "2", "A"];

function applyMoved(view: View, event: Extract<Event, { type: "moved" }>): void {
  let cards: string[];
  if (event.from === "reserve") {
    fits(view.reserve.includes(event.card), `${event.card} is not in the reserve`);
    view.reserve = view.reserve.filter((card) => card !== event.card);
    cards = [event.card];
  } else {
    const source = column(view, event.from);
    const first = source.cards.length - event.count;
    fits(event.count >= 1 && first >= 0 && source.cards[first] === event.card,
      `column ${event.from} has no group of ${event.count} from ${event.card}`);
    cards = source.cards.splice(first, event.count);
  }
  if (event.to === "reserve") {
    const at = Math.min(Math.max((event.index ?? view.reserve.length + 1) - 1, 0), view.reserve.length);
    view.reserve.splice(at, 0, ...cards);
  } else {
    column(view, event.to).cards.push(...cards);
  }
}

/** The view after one event; `view` itself is left unchanged. `now` stamps clock events. */
export function applyEvent(view: View, event: Event): View {
  if (event.type === "snapshot") return cloneView(event.view);
  const next = cloneView(view);
  switch (event.type) {
    case "moved":
      applyMoved(next, event);
      break;
    case "flipped": {
      const target = column(next, event.column);
      fits(target.down > 0 && target.cards.length === 0, `column ${event.column} has no card to flip`);
      target.down -= 1;
      target.cards = [event.card];
      break;
    }
    case "unflipped": {
      const target = column(next, event.column);
      fits(target.cards.length === 1, `column ${event.column} has not one card to turn down`);
      target.cards = [];
      target.down += 1;
      break;
    }
    case "dealt":
      event.cards.forEach((card, i) => column(next, i + 1).cards.push(card));
      next.stock = 0;
      break;
    case "undealt":
      for (let i = 1; i <= event.count; i++) {
        fits(column(next, i).cards.pop() !== undefined, `column ${i} has no card to take back`);
      }
      next.stock = event.count;
      break;
    case "suit_removed": {
      const source = column(next, event.column);
      fits(source.cards.length >= 13, `column ${event.column} has no suit to remove`);
      source.cards.splice(source.cards.length - 13, 13);
      next.foundations.push(event.suit);
      break;
    }
    case "suit_restored":
      fits(next.foundations.pop() !== undefined, "no suit to restore");
      column(next, event.column).cards.push(...SUIT_RANKS.map((rank) => rank + event.suit));
      break;
    case "restarted":
      next.columns = cloneColumns(event.columns);
      next.stock = event.stock;
      next.reserve = [...event.reserve];
      next.foundations = [];
      break;
    case "score":
      next.score = event.score;
      next.moves = event.moves;
      next.undos = event.undos;
      next.hints = event.hints;
      next.earned = event.earned;
      next.undo_depth = event.undo_depth;
      next.stuck = event.stuck;
      break;
    case "won":
      next.won = true;
      next.status = "won";
      next.deal = event.deal;
      next.score = event.score;
      next.time_ms = event.time_ms;
      if (next.paused !== undefined) next.paused = false;
      break;
    case "game_lost":
      next.status = "lost";
      next.deal = event.deal;
      if (next.paused !== undefined) next.paused = false; // over: no longer paused
      break;
    case "clock":
      next.time_ms = event.time_ms;
      next.running = event.running;
      if (event.paused !== undefined) next.paused = event.paused;
      break;
    default:
      // hint, undone, stuck, lost_position, and event types a later server adds
      break;
  }
  return next;
}

/** The board from a `game` reply (or any fresh view). */
export function boardFrom(game: number, v: number, view: View, now: number): GameBoard {
  return { game, v, view: cloneView(view), clockAt: now };
}

function applyAll(board: GameBoard, events: Event[], now: number): GameBoard {
  let view = board.view;
  let clockAt = board.clockAt;
  let held = board.held;
  for (const event of events) {
    if (event.type === "clock" || event.type === "snapshot" || event.type === "won") {
      clockAt = now;
      held = false;
    }
    view = applyEvent(view, event);
  }
  return { ...board, view, clockAt, held };
}

export type Received =
  | { kind: "applied"; board: GameBoard }
  | { kind: "old" }
  | { kind: "gap" };

/**
 * The events that make a version (section 5): a push at the version the board
 * already has reports only what is not one (a `clock`, a `lost_position`, an
 * event type a later server adds there), so one of these in it is a version
 * applied already, come again; applied twice, a deal would deal twice.
 */
const RECORDED = new Set<string>([
  "moved", "flipped", "unflipped", "dealt", "undealt", "suit_removed", "suit_restored",
  "restarted", "score", "won", "game_lost", "hint", "undone",
]);

/**
 * What an `events` push means for the board (section 5, "Noticing a gap").
 * Throws, like `applyEvent`, on a push that does not fit (the caller resyncs).
 */
export function receive(board: GameBoard, push: EventsPush, now: number): Received {
  if (push.game !== board.game) return { kind: "old" };
  const hasSnapshot = push.events.some((event) => event.type === "snapshot");
  if (!hasSnapshot && push.v === board.v) {
    fits(!push.events.some((event) => RECORDED.has(event.type)), `version ${push.v}'s events came again`);
  }
  if (hasSnapshot || push.v === board.v + 1 || push.v === board.v) {
    return { kind: "applied", board: { ...applyAll(board, push.events, now), v: push.v } };
  }
  if (push.v < board.v) return { kind: "old" };
  return { kind: "gap" };
}

/**
 * The board after a `catch_up` reply: its batches in order (those it has
 * already skipped), then its clock. Throws when the batches skip a version or
 * stop short of the reply's: the board would claim events it never saw.
 */
export function catchUp(board: GameBoard, reply: CatchUpReply, now: number): GameBoard {
  let next = board;
  for (const batch of reply.events) {
    if (batch.v <= next.v) continue;
    fits(batch.v === next.v + 1, `the catch-up skips from version ${next.v} to ${batch.v}`);
    next = { ...applyAll(next, batch.events, now), v: batch.v };
  }
  fits(next.v >= reply.v, `the catch-up stops at version ${next.v}, short of ${reply.v}`);
  const view = { ...next.view, time_ms: reply.time_ms, running: reply.running };
  if (reply.paused !== undefined) view.paused = reply.paused;
  return { ...next, v: reply.v, view, clockAt: now, held: false };
}

/**
 * The board with its clock held still at `now`: the connection is lost, and
 * the server has stopped the game's clock (section 6), so the page shows the
 * time reached rather than count on; the server's time comes back with the
 * resync after reconnecting.
 */
export function holdClock(board: GameBoard, now: number): GameBoard {
  if (!board.view.running) return board;
  return { ...board, view: { ...board.view, running: false, time_ms: timeAt(board, now) }, clockAt: now, held: true };
}

/** Play time at `now` (section 6): the view's, plus the time since while running. */
export function timeAt(board: GameBoard, now: number): number {
  const { view } = board;
  if (!view.running) return view.time_ms;
  return view.time_ms + Math.max(0, Math.floor(now - board.clockAt));
}

/** The score at `now` (section 6): fixed once won, else earned less 30 per 30 s under timed. */
export function scoreAt(board: GameBoard, now: number): number {
  const { view } = board;
  if (view.status === "won") return view.score;
  if (view.scoring === "points") return view.earned;
  return Math.max(0, view.earned - 30 * Math.floor(timeAt(board, now) / 30000));
}
