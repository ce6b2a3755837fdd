/**
 * The web client's controller: one connection, the player, the open game and
 * the screen on show. Everything on screen is drawn again from this state after
 * each change (`render`); the clock and score alone tick in place (`tick`).
 *
 * Signing in: the token lives in localStorage (`src/storage.ts`). Every (re)connection says hello
 * with it and, when a game is on screen, resyncs it with `open_game` since the
 * last version seen (PROTOCOL.md section 5); on a fresh page the unfinished
 * game from `welcome` is opened, so a reload continues it.
 *
 * Paused: the view, a catch-up and each clock event say whether the game is
 * paused (`paused`). From an older server, which says nothing, a game open on
 * this connection whose clock does not run is taken for paused (section 6: the
 * clock runs while a connection has it open and it is not paused); just after
 * opening, the clock's start may still be on its way, so that conclusion waits
 * `PAUSE_GRACE_MS`. A `pause` acknowledged, or an action refused with `paused`
 * (another device paused it), settles it at once: the board is hidden and the
 * refusal is not an error.
 */
import { boardFrom, catchUp, holdClock, receive, scoreAt, timeAt, type GameBoard } from "./board";
import { ProtocolError } from "./checks";
import { Connection, Disconnected, type Body } from "./conn";
import { h, placeChildren, type Child } from "./dom";
import { cardLabel, clock, percent, spokenCard, spokenText } from "./format";
import { columnKey, shortcutLetter } from "./keys";
import { LOCALES, locale, preferredLocale, regionalLocale, setLocale, t, type Key, type Locale } from "./i18n";
import { animateFrom, cardPlaces, fitColumns, shake, springBack, tableElement, whenReleased, type Highlight } from "./table";
import { movedCard, replaySteps } from "./replay";
import { forget, load, loadShared, mark, markedAt, save, unmark, watchKey } from "./storage";
import { checkName, MAX_NAME_CHARS } from "./names";
import { errorText, hintText, isRuleCode, levelRows, lostText, nameText } from "./words";
import type {
  ErrorReply,
  EventBatch,
  Event as WireEvent,
  GameLostEvent,
  GameSummary,
  HintEvent,
  Player,
  Replay,
  Result,
  ServerMessage,
  StatsRow,
  View,
  WelcomeReply,
  WonEvent,
} from "./wire";

type Level = StatsRow["level"];
const LEVELS: Level[] = ["easy", "medium", "hard", "classic", "relaxed", "three-blind-mice"];
const CLIENT = "scorpion-web/0.1";
const PAUSE_GRACE_MS = 600;
/**
 * How long the first connection may take before the page says it is still
 * connecting (or, once an attempt has failed, that the server cannot be
 * reached), and how long a request on an open connection may wait for its
 * reply before the page says the server has not answered yet.
 */
const UNREACHABLE_AFTER_MS = 3000;
/** How long an acknowledged action's events may come after its reply before they are taken for lost. */
const PUSH_GRACE_MS = 1500;
/** A resync refused `unavailable` is asked again after a second, then after twice as long each time up to 8 s. */
const RESYNC_WAIT_FIRST_MS = 1000;
const RESYNC_WAIT_MOST_MS = 8000;
/** A hint's words are shown this long over the header; its card and column stay marked until the next version. */
const HINT_WORDS_MS = 8000;
/**
 * style.css's short, wide window (a phone on its side): the status, tools and banners
 * go beside the table, where the hint's words push no column down, and stay there
 * until the next version; over the header they would hide the banners' ways out.
 */
const SHORT_AND_WIDE = window.matchMedia("(orientation: landscape) and (max-height: 500px) and (min-width: 480px)");
const TOKEN_KEY = "scorpion.token";
/** The Web Lock a tab holds while it replaces the token (`rotateAlone`); a tab whose token is refused waits for it. */
const ROTATION_LOCK = "scorpion.token";
/**
 * The new token of a rotation this page asked for and has no answer to yet, with the
 * token it replaces (JSON `{ from, next }`): made here and kept before the server is
 * asked, so that an answer lost on the way loses nothing (PROTOCOL.md, Tokens). When
 * that token is refused, this one is tried (`greet`); never for another token.
 */
const NEXT_TOKEN_KEY = "scorpion.token.next";
/** The longest token the wire carries (PROTOCOL.md, `hello`'s `token`). */
const MAX_TOKEN_CHARS = 128;
/** A token a client makes for itself, as `rotate_token` takes it: anything else kept is none. */
const OWN_TOKEN = /^[A-Za-z0-9_-]{43,128}$/;

/** How long a tab whose token is refused waits for another tab's rotation before it decides without it. */
const ROTATION_WAIT_MS = 5000;
/**
 * Marked (`mark`, IndexedDB) by a tab that has registered and kept the token, before
 * it lets the next tab register: that tab's copy of localStorage may not have the
 * token yet (`tokenOnItsWay`).
 */
const REGISTERED_MARK = "registered";
/** How long after another tab's registration a tab waits for its token to show in localStorage. */
const REGISTERED_WAIT_MS = 5000;

/** `run` while no other tab of the browser runs one under `name` (the Web Locks API; where there is none, at once). */
async function oneTabAtATime(name: string, run: () => Promise<void>): Promise<void> {
  const locks = typeof navigator === "undefined" ? undefined : navigator.locks;
  if (locks?.request) await locks.request(name, run);
  else await run();
}

/** A new token: 32 random bytes in URL-safe base64 (43 characters), as the server makes them. */
function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A token kept in storage, if it can be one: anything else is forgotten (and `tokenDropped`). */
function storedToken(value: string | null): string | null {
  if (value && value.length <= MAX_TOKEN_CHARS) return value;
  if (value !== null) {
    forget(TOKEN_KEY);
    tokenDropped = true;
  }
  return null;
}
let tokenDropped = false;

/**
 * The token another tab kept on registering a moment ago (`REGISTERED_MARK`), once
 * this tab's copy of localStorage shows it; null when no tab has registered within
 * REGISTERED_WAIT_MS, or its token did not show by then (signed out since).
 */
async function tokenOnItsWay(): Promise<string | null> {
  const at = await markedAt(REGISTERED_MARK);
  if (at === null) return null;
  const until = Math.min(at, Date.now()) + REGISTERED_WAIT_MS; // a clock set back waits no longer
  for (;;) {
    const kept = storedToken(loadShared(TOKEN_KEY));
    if (kept !== null || Date.now() >= until) return kept;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The new token of a rotation of `token` asked for and not answered (`NEXT_TOKEN_KEY`), if one is kept. */
function storedNext(token: string): string | null {
  let kept: unknown = null;
  try {
    kept = JSON.parse(loadShared(NEXT_TOKEN_KEY) ?? "null");
  } catch {
    return null; // not ours
  }
  if (typeof kept !== "object" || kept === null) return null;
  const { from, next } = kept as { from?: unknown; next?: unknown };
  return from === token && typeof next === "string" && next !== token && OWN_TOKEN.test(next) ? next : null;
}
const LOCALE_KEY = "scorpion.locale";
const LEVEL_KEY = "scorpion.level";
const WINNABLE_KEY = "scorpion.winnable";

type Screen = "loading" | "signin" | "lobby" | "game" | "results" | "stats" | "history" | "replay";

interface Ended {
  won: WonEvent | null;
  lost: GameLostEvent | null;
  stats: StatsRow | null;
}

interface ReplayState {
  game: number;
  replay: Replay;
  result: Result;
  step: number;
  /** The board at each step (0: the deal), or null when the server gave no history to play back. */
  steps: View[] | null;
  /** The history: batches[i] made step i + 1. */
  batches: EventBatch[];
}

interface Confirm {
  text: string;
  action: () => void;
  /** Where the focus was when it was asked, to return to once answered. */
  from: string | null;
  /** Withdrawn when the game is paused (on another device, say): the server would refuse it. */
  notWhilePaused: boolean;
  /**
   * The page's sign-in token shown with the question, to keep: the one held when drawn (another
   * tab may replace it meanwhile), and `copied`, the one the Copy button put on the clipboard.
   */
  showToken: boolean;
  copied: string | null;
}

/**
 * A text to show: the page's own words as a function, worded again in the
 * language on show at each drawing, or a string in a language fixed when it
 * came (a rule's refusal, which the server worded in the hello's locale).
 */
type Said = string | (() => string);

/** A history entry of the page's (`remember`): its screen, and an id no other entry has. */
interface Entry {
  screen?: Screen;
  n?: string;
}

/** The lobby's deal number refused: taken back as soon as the field changes. */
const BAD_DEAL: Said = () => t("badDeal");
/** A move refused because the last one is on its way: taken back when that one is answered (`act`). */
const PENDING: Said = () => t("actionPending");

function shown(said: Said): string {
  return typeof said === "string" ? said : said();
}

/**
 * Words as shown, and, where a screen reader should say them otherwise, as it
 * says them: the shown ones hidden from it (a card's symbols, "5♥"), the said
 * ones out of sight (the card's name, "5 of hearts"). `said` is the shown words
 * with their cards named (`spokenText`) unless given.
 */
function shownAndSaid(words: string, said = spokenText(words)): Child | Child[] {
  return said === words ? words : [h("span", { "aria-hidden": "true" }, words), h("span.sr-only", {}, said)];
}

/** What a screen reader reads of a line: its words but those hidden from it (`shownAndSaid`). */
function readText(line: Element): string {
  const copy = line.cloneNode(true) as Element;
  copy.querySelectorAll('[aria-hidden="true"]').forEach((hidden) => hidden.remove());
  return copy.textContent ?? "";
}

/** A refusal as the page says it (`errorText`): in the page's own words, it follows the language. */
function saidError(reply: ErrorReply, during?: "register" | "hello"): Said {
  return isRuleCode(reply.code) ? errorText(reply, during) : () => errorText(reply, during);
}

const RADIO_STEPS: Record<string, number> = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

/**
 * A radio group's keys, as its role promises a screen reader's user: the group is
 * one Tab stop (its chosen radio), and the arrows (Home, End) choose the next
 * radio (the first, the last), which keeps the focus.
 */
function radioKeys(event: Event): void {
  if (!(event instanceof KeyboardEvent) || event.ctrlKey || event.metaKey || event.altKey) return;
  const group = event.currentTarget as HTMLElement;
  const radios = [...group.querySelectorAll<HTMLElement>('[role="radio"]')];
  const at = radios.indexOf(event.target as HTMLElement);
  const step = RADIO_STEPS[event.key];
  const to = event.key === "Home" ? 0 : event.key === "End" ? radios.length - 1 : step === undefined ? -1 : (at + step + radios.length) % radios.length;
  if (at < 0 || to < 0) return;
  event.preventDefault();
  const label = group.getAttribute("aria-label");
  radios[to].click(); // the page is drawn again: the group's new chosen radio takes the focus
  const groups = [...document.querySelectorAll<HTMLElement>('[role="radiogroup"]')];
  groups.find((each) => each.getAttribute("aria-label") === label)?.querySelector<HTMLElement>('[aria-checked="true"]')?.focus();
}

/**
 * The replay's list of actions, drawn again at each step, where the player had
 * scrolled it (`top`), or scrolled just enough to show the current step's line.
 */
function keepStepInSight(list: HTMLElement, top: number): void {
  const current = list.querySelector<HTMLElement>("li.current");
  list.scrollTop = current ? top : 0; // none at the deal, before the first line
  if (!current) return;
  const inside = list.getBoundingClientRect().top + list.clientTop; // below its border
  const line = current.getBoundingClientRect();
  if (line.top < inside) list.scrollTop += line.top - inside;
  else if (line.bottom > inside + list.clientHeight) list.scrollTop += line.bottom - (inside + list.clientHeight);
}

/**
 * Marks a box that scrolls sideways (a wide table on a narrow screen):
 * `scrolls` when its content is wider than it, `more-right` while some of it
 * is still out of sight on the right (style.css draws the cues).
 */
function markScroll(box: HTMLElement): void {
  box.classList.toggle("scrolls", box.scrollWidth > box.clientWidth + 1);
  box.classList.toggle("more-right", box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
}

/** A hello refused for its token: not known (revoked, rotated), or not even one (`bad_request`). */
function refusedToken(reply: ServerMessage): reply is ErrorReply {
  return reply.type === "error" && (reply.code === "unauthenticated" || reply.code === "bad_request");
}

/** A row's win rate, or "—" before its first game, as its best score and fastest win are. */
function winRate(row: StatsRow): string {
  return row.games === 0 ? "—" : percent(row.win_rate);
}

/** The attributes that tell a focusable element of the page from the others, across drawings. */
const FOCUS_KEYS = ["id", "data-card", "data-action", "data-level", "data-deal-kind", "data-step"];

/**
 * A selector that finds `node` again in the page drawn anew (within its game,
 * or its row of the past games), or null when it has none.
 */
/**
 * A screen's heading: where the focus goes when the player goes to another
 * screen from the header's menu or by Back and Forward (`render`), so that a
 * screen reader says where they are; the window's title names it too.
 */
function screenHeading(words: string): HTMLElement {
  return h("h2", { id: "screen-heading", tabindex: -1 }, words);
}

function focusSelector(node: Element | null): string | null {
  if (!(node instanceof HTMLElement)) return null;
  const name = FOCUS_KEYS.find((key) => node.hasAttribute(key));
  if (name === undefined) return null;
  const own = `${node.localName}[${name}="${CSS.escape(node.getAttribute(name) ?? "")}"]`;
  const game = node.parentElement?.closest("[data-game]")?.getAttribute("data-game");
  return game ? `[data-game="${CSS.escape(game)}"] ${own}` : own;
}

export class App {
  private screen: Screen = "loading";
  private drawn: Screen = "loading"; // the screen the page shows now (render)
  private drawnBefore: Screen = "loading"; // the one it showed before this drawing (render)
  private drawnAt: string | null = null; // the game and version of the board it shows (render)
  /** When the page started connecting. */
  private startedAt = 0;
  private conn: Connection;
  // one the wire cannot carry (not 1..128 characters: garbage) is none: a hello
  // of 70 KB is over the server's frame limit, closed before any answer
  private token: string | null = storedToken(load(TOKEN_KEY));
  private player: Player | null = null;
  private unfinished: GameSummary[] = [];
  private board: GameBoard | null = null;
  private openedAt = 0;
  private level: Level = LEVELS.find((each) => each === load(LEVEL_KEY)) ?? "medium";
  private stats: StatsRow[] = [];
  private games: GameSummary[] = [];
  /** Whether `games` is the server's latest answer (else "no games" is not said). */
  private gamesLoaded = false;
  /**
   * Reads the server refused or a dropped connection cut off: said where their
   * answer would be, instead of an older answer or an empty panel, and asked again
   * when the connection opens again (or the panel is opened again).
   */
  private unread = new Map<"stats" | "games" | "endStats", Said>();
  private hint: { v: number; hint: HintEvent } | null = null;
  private hintWordsTimer = 0;
  private hintWordsShown = false;
  /**
   * What the game's pushes did, said to a screen reader (the page's other live
   * regions say refusals and notes): kept outside the page, which is drawn anew
   * after every change, so that it stays the same element its reader watches.
   */
  private readonly said = h("div.said.sr-only", { "aria-live": "polite", "aria-atomic": "true" });
  private sayTimer = 0;
  /** What `said` is about to say, after the moment it is left empty (`say`); empty when nothing waits. */
  private sayLater: string[] = [];
  /**
   * The page's alerts (its `[data-alert]` lines: the dead end's words, the
   * sign-in page's error), said once each time they change or their cause is
   * new (`speakChanges`): the page is drawn anew after every change, and an
   * alert put in the page anew is said anew. Kept outside the page, as `said` is.
   */
  private readonly alerted = h("div.alerted.sr-only", { role: "alert" });
  /** What `alerted` says (or is about to say), and the sign-in error it says. */
  private alerting: { words: string; cause: Said | null } = { words: "", cause: null };
  /**
   * The page's `[data-status]` lines (the replay's step, the connecting screen's, a
   * panel's unread note, the lobby's note of a game perhaps dealt) last said by `said`.
   */
  private statusSaid = "";
  /**
   * The notices (`noticeBar`), a live region: the same element at every
   * redraw, its readers watch it; a notice that has not changed stays in it.
   */
  private readonly notices = h("div.notices", { "aria-live": "polite" });
  private lost: { v: number; fromDeal: boolean } | null = null;
  /** The version the last reply said its game is at (`behindReply`). */
  private replied: { game: number; v: number } | null = null;
  private knownPaused = false;
  /** A resync refused `unavailable` or `rate_limited` is asked again after this long, growing. */
  private resyncWait = RESYNC_WAIT_FIRST_MS;
  private resyncTimer: ReturnType<typeof setTimeout> | undefined;
  /** Counts the pauses and resumes sent: only the latest one's ack says whether the game is paused. */
  private clockAsked = 0;
  /** The lobby's choice of deal on levels other than easy: random (or numbered), or winnable. */
  private wantWinnable = load(WINNABLE_KEY) === "1";
  /** Whether the game on screen was asked for as winnable: its stats row. */
  private gameWinnable = false;
  /** The lobby's deal number as typed. */
  private dealText = "";
  private ended: Ended | null = null;
  private replay: ReplayState | null = null;
  private notice: Said | null = null;
  private noticeKind: "error" | "done" | "note" = "error";
  private noticeTimer = 0;
  /** Notices said, counted: the same words said again are a new notice, said again (`noticeBar`). */
  private noticesSaid = 0;
  private confirm: Confirm | null = null;
  private online: "connecting" | "open" | "closed" = "connecting";
  /**
   * A connection attempt has failed since the last one that opened (a socket closed or
   * given up before its hello was through): only then is the server said to be
   * unreachable; a first attempt that is merely slow is said to be still connecting.
   */
  private attemptFailed = false;
  /** The notice that a request has waited UNREACHABLE_AFTER_MS for its reply is shown (`noticeBar`, `tick`). */
  private unanswered = false;
  // a kept token that cannot be one is forgotten (storedToken), and said on the sign-in page
  private signInError: Said | null = tokenDropped ? () => t("badToken") : null;
  /** How many rotations this tab has under way or waiting for their turn (`rotateToken`). */
  private rotations = 0;
  /**
   * The token this tab held before it followed the one another tab kept (`watchKey`): when
   * the server refuses that one (garbage written there), this one, if it still works, is
   * this tab's again, and the browser's (`greet`).
   */
  private fallback: string | null = null;
  /** Hellos said, counted: one decided late sees that the connection opened again meanwhile (`greet`). */
  private greetings = 0;
  /** Why the server refused the last hello (it is asked again as the connection reopens). */
  private refused: Said | null = null;
  /**
   * The attempt under way was refused (`refused` set since it began): one that fails
   * without a refusal (the server not reached at all) takes the last refusal back,
   * and the connection is said to be lost, not refused.
   */
  private refusedNow = false;
  /** The actions on their way (`act`): a game's version, or its hint. */
  private readonly sending = new Set<string>();
  /** A new_game on its way. */
  private starting = false;
  /**
   * The games known when a new_game's reply was lost with the connection: the server
   * may have dealt it. A game the lobby then lists beyond these is likely that one,
   * and the lobby says so beside "Continue the game" until the page shows another screen.
   */
  private dealtMaybe: Set<number> | null = null;
  /** The history entry Back or Forward went to, while its screen is being shown (`navigated`). */
  private navigating: string | null = null;
  /** Back and Forward presses, each taken in its turn (`navigated`). */
  private turns: Promise<void> = Promise.resolve();
  private entries = 0; // history entries made by this page (`remember`)
  /** The resync on its way, and whether it was asked for again meanwhile. */
  private resyncing: Promise<void> | null = null;
  private resyncAgain = false;
  /** A new game being decided on (`startNew`). */
  private choosing = false;
  /** A register on its way. */
  private registering = false;
  /** A name to register once the connection is back (pressed while the server could not be reached). */
  private waitingName: string | null = null;
  /**
   * Names the server refused as no name (`bad_request`): not sent again, as each
   * refusal is a strike against the address (PROTOCOL.md section 10).
   */
  private readonly refusedNames = new Set<string>();
  /** The locale the server was last told (its messages, such as a move's refusal, are in it). */
  private helloLocale: Locale | null = null;
  private showToken = false;
  /** The token is one typed on the sign-in page, not yet taken by the server (nor stored). */
  private tokenTyped = false;
  /** The sign-in screen's fields as typed, and whether "another device" is open. */
  private readonly typed = { name: "", token: "", otherDevice: false };

  constructor(private readonly root: HTMLElement) {
    root.after(this.said, this.alerted);
    // The clicks after the first of a double (or triple) click begun on the game or a
    // question do nothing: answered at once by a near server, the second click of a double click
    // on Undo undid twice, on Pause resumed, and on a question's Yes moved the card that
    // lay under it (`event.detail` counts the clicks at one place; a key gives 0).
    // Where the second click lands does not matter: the first, on a question's Yes,
    // closes it, and the second lands on what lay beneath (Play, in the lobby).
    let firstOnGame = false;
    root.addEventListener(
      "click",
      (event) => {
        const target = event.target instanceof Element ? event.target : null;
        const onGame = Boolean(target?.closest("main.game, .dialog"));
        if (event.detail <= 1) {
          firstOnGame = onGame;
        } else if (firstOnGame || onGame) {
          event.stopPropagation();
          event.preventDefault();
        }
      },
      { capture: true },
    );
    const saved = LOCALES.find((each) => each === load(LOCALE_KEY));
    setLocale(saved ?? preferredLocale(navigator.languages));
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    this.conn = new Connection(`${scheme}://${location.host}/`, {
      onOpen: () => this.hello(),
      onPush: (push) => this.push(push),
      onState: (state) => {
        this.online = state;
        if (state !== "connecting") this.attemptFailed = state === "closed";
        if (state === "connecting") this.refusedNow = false;
        // failed, and not refused: the server that refused the attempts before is not reached now
        if (state === "closed" && !this.refusedNow) this.refused = null;
        // A refusal is taken back once the connection is open, not at its welcome: in
        // between (a game resynced) the lost connection's status would go from
        // "Connecting…" (beside a refusal, `noticeBar`) to "Connection lost", just
        // before it goes, said as the connection is restored.
        if (state === "open") this.refused = null;
        // the server stops the clock of a game no connection has open: so does the page, until its resync
        if (state !== "open" && this.board) this.board = holdClock(this.board, performance.now());
        // the language was changed while the connection's hello was on its way: say the new one
        if (state === "open" && this.helloLocale !== locale()) this.sayLocale();
        this.render();
        // a name pressed while the server could not be reached: registered now it answers
        if (state === "open") this.registerWaiting();
        if (state === "open") this.readAgain();
        if (state === "open") this.rotateAgain();
      },
      onMalformed: (error, lostEvents) => this.malformed(error, lostEvents),
      // why the server closed it, when that is worth saying (PROTOCOL.md section 10)
      onClosed: (code) => {
        if (code === 1013) this.refuse(() => t("closedBusy"));
        if (code === 1008) this.refuse(() => t("closedRefused"));
      },
    });
    // "Sign out on this device" in another tab of this browser forgot the
    // token: this tab is signed out with it, not left playing as the player signed out.
    // Another tab signed in (a name registered, a token entered) while this one was
    // signed out: this one follows, rather than let a second name pressed here
    // replace the token and lose that player to the browser.
    watchKey(TOKEN_KEY, (value, cleared) => {
      // Storage cleared in another tab (a script, "clear site data"): no sign-out, which
      // forgets the token alone. This tab's token is kept, and written back for every tab.
      if (value === null && cleared) {
        if (this.token !== null && !this.tokenTyped) save(TOKEN_KEY, this.token);
      } else if (value === null && this.token !== null) {
        this.signedOut(() => t("signedOutElsewhere"));
      } else if (value !== null && storedToken(value) === null) {
        // no token at all (over 128 characters, forgotten by storedToken): written over with
        // this tab's, before the other tabs read the key gone as a sign-out
        if (this.token !== null && !this.tokenTyped) save(TOKEN_KEY, this.token);
      } else if (value !== null && value !== this.token) {
        // signed in in another tab, or this player's token replaced there (rotated): the old one
        // no longer works. Should the server refuse the one kept now, this tab's goes back (`greet`).
        this.followSignIn(value, this.tokenTyped ? null : this.token);
      }
    });
    document.addEventListener("keydown", (event) => this.key(event));
    window.addEventListener("popstate", () => {
      this.turns = this.turns.then(() => this.navigated()).catch(() => {});
    });
    SHORT_AND_WIDE.addEventListener("change", () => this.render()); // where the hint's words go
    window.addEventListener("resize", () => {
      fitColumns(this.root);
      this.root.querySelectorAll<HTMLElement>(".scroll").forEach(markScroll);
      const steps = this.root.querySelector<HTMLElement>("ol.replay-actions");
      if (steps) keepStepInSight(steps, steps.scrollTop);
    });
    // A request cut off by a dropped connection has no answer to show: the
    // banner says the connection dropped, and the reconnect resyncs the game.
    // One whose answer broke the protocol was said already (`malformed`).
    window.addEventListener("unhandledrejection", (event) => {
      if (event.reason instanceof Disconnected || event.reason instanceof ProtocolError) event.preventDefault();
    });
    // A phone woken, a page shown again or restored from the back-forward cache, a
    // network back: the connection may have died unseen, and a move would wait for
    // the reply timeout (30 s). It is checked at once (`Connection.check`). A
    // network gone: the connection is said to be lost at once, and nothing played
    // meanwhile is sent, to be applied when the network comes back.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.conn.check();
    });
    window.addEventListener("pageshow", (event) => {
      if (event.persisted) this.conn.check();
    });
    window.addEventListener("online", () => this.conn.check());
    window.addEventListener("offline", () => this.conn.lost());
    setInterval(() => this.tick(), 250);
  }

  start(): void {
    this.startedAt = performance.now();
    this.render();
    this.conn.start();
    // still connecting by then: said (the connection keeps trying meanwhile)
    setTimeout(() => this.render(), UNREACHABLE_AFTER_MS);
  }

  // ---- connection -------------------------------------------------------

  /**
   * Says hello. An answer this page cannot use (a welcome that breaks the
   * protocol) is said as such, not as a server that cannot be reached, and
   * asked again after the connection's growing delay, as a refused hello is.
   */
  private async hello(): Promise<void> {
    try {
      await this.greet();
    } catch (error) {
      if (error instanceof ProtocolError) {
        const problem = error.message;
        this.refuse(() => t("protocolError", { problem }));
        this.notice = null; // said by `malformed` too: once is enough, where a refused hello is
        this.render();
      }
      throw error;
    }
  }

  /** A hello, with `token` (or none: to sign in later), in the page's language; its reply. */
  private sayHello(token: string | null): Promise<ServerMessage> {
    const hello = { type: "hello", protocol: 1, client: CLIENT, locale: (this.helloLocale = locale()) } as const;
    return this.conn.request(token ? { ...hello, token } : hello, true);
  }

  private async greet(): Promise<void> {
    const greeting = ++this.greetings;
    const token = this.token;
    let reply = await this.sayHello(token);
    // Refused: a rotation of the token asked for in this browser, whose answer was lost, may
    // have happened (its token is then the player's), or another tab has kept the token
    // that replaced it already. Either is tried before the token is given up.
    const refused = token && !this.tokenTyped && reply.type === "error" && reply.code === "unauthenticated";
    // decided once no tab of the browser is replacing the token (`failed`)
    if (refused) {
      await this.rotationsDone();
      // the connection opened again meanwhile: its own hello decides, not this one's
      if (greeting !== this.greetings) throw new Disconnected();
    }
    // kept until a hello decides: a refusal `rate_limited` (the address's refused tokens) is asked again
    const fallback = this.fallback;
    const next = refused ? storedNext(token) : null;
    const kept = storedToken(loadShared(TOKEN_KEY));
    const newer = next ?? (refused && kept !== null && kept !== token ? kept : null);
    if (newer !== null) {
      const again = await this.sayHello(newer);
      if (again.type === "welcome" && again.player) {
        this.token = newer;
        save(TOKEN_KEY, newer);
        if (next !== null) {
          forget(NEXT_TOKEN_KEY);
          this.say(() => t("tokenRotated"), "done");
        }
        return this.welcomed(again, newer);
      }
      // neither works (revoked since): forgotten with the token below; anything else is said and asked again
      const gone = refusedToken(again);
      if (!gone) reply = again;
      else if (next !== null) forget(NEXT_TOKEN_KEY);
    }
    // A token another tab kept that the server refuses (garbage written there): the one
    // this tab held before following it is kept again, and written back, if it still works.
    if (token && !this.tokenTyped && refusedToken(reply) && fallback !== null && fallback !== token) {
      const again = await this.sayHello(fallback);
      if (again.type === "welcome" && again.player) {
        this.token = fallback;
        this.fallback = null;
        save(TOKEN_KEY, fallback);
        return this.welcomed(again, fallback);
      }
      if (!refusedToken(again)) reply = again; // limited or busy: said, and both asked again later
    }
    if (reply.type === "welcome" || refusedToken(reply)) this.fallback = null; // decided
    // A token refused, or one the server cannot even read (not 1..128
    // characters: another version's data, say), is forgotten: sign in again.
    if (token && refusedToken(reply)) {
      // the token typed, or the one this device kept
      this.signInError = this.tokenTyped ? () => t("badTypedToken") : saidError(reply, "hello");
      this.tokenTyped = false;
      this.forgetToken();
      this.player = null;
      this.board = null;
      reply = await this.sayHello(null);
      if (reply.type === "welcome") {
        this.show("signin");
        return;
      }
    }
    if (reply.type !== "welcome") {
      // Said on the page, and asked again after the connection's growing delay. The player
      // asked for nothing: a server that cannot take a hello for now is said as a wait
      // the page sees through itself, not as a request to try again.
      const why = reply.type !== "error" ? `hello: ${reply.type}` : reply.code === "unavailable" ? () => t("helloUnavailable") : saidError(reply);
      this.refuse(why);
      this.render();
      throw new Error(`hello refused: ${shown(why)}`);
    }
    await this.welcomed(reply, token);
  }

  /** The attempt under way refused, for `why`: said beside "Connecting…" until one opens, or one fails unrefused. */
  private refuse(why: Said): void {
    this.refused = why;
    this.refusedNow = true;
  }

  /** The server's welcome to a hello with `token` (none: a page signed out). */
  private async welcomed(reply: WelcomeReply, token: string | null): Promise<void> {
    // an older server says nothing: its idle timeout is the default, longer than a minute
    this.conn.keepAliveFor(reply.limits?.idle_timeout_ms ?? 0);
    this.player = reply.player;
    if (this.player && token && this.tokenTyped) save(TOKEN_KEY, token);
    this.tokenTyped = false;
    if (this.player) Object.assign(this.typed, { name: "", token: "", otherDevice: false });
    this.unfinished = reply.games;
    if (!this.player) {
      this.show("signin");
      return;
    }
    if (this.board) {
      await this.resyncNow(true); // not joined to one waiting for this hello to end
    } else if (this.screen === "loading" || this.screen === "signin") {
      const active = this.unfinished.find((game) => game.status === "active");
      if (active) await this.openGame(active.game, true);
      // not opened (refused, said by `failed`): the lobby, whose "continue" tries again
      if (!active || (!this.board && this.player)) await this.lobby(true);
    }
  }

  /** This page's token forgotten, and the browser's too unless another tab has put another one there since. */
  private forgetToken(): void {
    const kept = loadShared(TOKEN_KEY);
    if (kept === null || kept === this.token || storedToken(kept) === null) forget(TOKEN_KEY);
    // The new token of a rotation of this one goes too: a refusal reaches this only after
    // that token was tried (`greet`, `refusedAsIs`), and signed out, it must not stay
    // behind for whoever signs in next on the page. Another token's is left to its tab.
    if (this.token !== null && storedNext(this.token) !== null) forget(NEXT_TOKEN_KEY);
    void unmark(REGISTERED_MARK); // a name registered next is not taken for this player's on its way
    this.token = null;
    this.tokenTyped = false;
  }

  private async openGame(game: number, early = false): Promise<void> {
    const reply = await this.conn.request({ type: "open_game", game }, early);
    if (reply.type !== "game") return this.failed(reply);
    this.board = boardFrom(reply.game, reply.v, reply.view, performance.now());
    this.openedAt = performance.now();
    this.level = reply.view.level;
    this.gameWinnable = [...this.unfinished, ...this.games].some((each) => each.game === game && each.winnable === true);
    this.hint = null;
    this.lost = null;
    this.knownPaused = false;
    this.ended = null;
    this.unfinished = this.unfinished.filter((each) => each.game !== game || reply.view.status === "active");
    this.show("game");
    // ended meanwhile (on another tab or device): its results, not a game to play
    if (reply.view.status !== "active") this.afterChange();
    setTimeout(() => this.render(), PAUSE_GRACE_MS);
  }

  /**
   * Brings the board up to date: open_game since the last version (section 5),
   * or without `since` (`whole`) for a fresh snapshot. The answer is taken for
   * the board as it is when it comes: pushes applied meanwhile stay (an answer
   * older than they are is let go), and when the page has gone on to another
   * game or the lobby meanwhile, the game that answer opened again is closed.
   * A catch-up whose events do not fit the board is said, and a snapshot asked for.
   */
  private resync(): Promise<void> {
    // One at a time: asked again while one is on its way (a burst of pushes
    // that do not fit, say), it runs once more after it, not once per ask.
    // (A new connection's hello resyncs by `resyncNow` itself: a resync asked
    // for before it waits for that hello to end, so joining it would never end.)
    if (this.resyncing) {
      this.resyncAgain = true;
      return this.resyncing;
    }
    const run = async () => {
      try {
        do {
          this.resyncAgain = false;
          await this.resyncNow(false);
        } while (this.resyncAgain);
      } finally {
        this.resyncing = null;
      }
    };
    return (this.resyncing = run());
  }

  private async resyncNow(early: boolean, whole = false): Promise<void> {
    const asked = this.board;
    if (!asked) return;
    const reply = await this.conn.request(
      whole ? { type: "open_game", game: asked.game } : { type: "open_game", game: asked.game, since: asked.v },
      early,
    );
    const board = this.board;
    if (board?.game !== asked.game) {
      if (reply.type === "game" || reply.type === "catch_up") {
        await this.conn.request({ type: "close_game", game: asked.game }, early).catch(() => null);
      }
      return;
    }
    const now = performance.now();
    if (reply.type === "catch_up") {
      if (reply.v < board.v) return;
      let next: GameBoard;
      try {
        next = catchUp(board, reply, now);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.malformed(new ProtocolError("catch_up", `cannot be applied: ${reason}`), false);
        return this.resyncNow(early, true);
      }
      this.board = next;
      this.noteEvents(
        reply.events.filter((batch) => batch.v > board.v).flatMap((batch) => batch.events),
        reply.v,
      );
    } else if (reply.type === "game") {
      if (reply.v < board.v) return;
      this.board = boardFrom(reply.game, reply.v, reply.view, now);
    } else {
      this.failed(reply);
      if (reply.type === "error" && reply.code === "not_found") {
        // the server has no such game (any more): nothing on screen can be played
        this.board = null;
        this.unfinished = this.unfinished.filter((each) => each.game !== asked.game);
        await this.lobby(early);
      } else if (reply.type === "error" && reply.code === "too_many_watchers") {
        // Not open on this connection, and it stays so: the board on screen would
        // take no more pushes and every action would be refused. The lobby, with
        // the refusal said and the game among the unfinished ones to continue
        // (as when it is refused at load).
        this.unfinished = [{ ...this.summary(), game: asked.game }];
        this.board = null;
        await this.lobby(early);
      } else if (reply.type === "error" && (reply.code === "unavailable" || reply.code === "rate_limited")) {
        // asked again while the game is on screen: the store was slow, or the page asked too often
        // never sooner than the growing wait: a peer that keeps saying 0 is not asked ten times a second
        const wait = Math.max(reply.code === "rate_limited" ? (reply.retry_after_ms ?? 0) : 0, this.resyncWait);
        this.resyncWait = Math.min(this.resyncWait * 2, RESYNC_WAIT_MOST_MS);
        clearTimeout(this.resyncTimer);
        this.resyncTimer = setTimeout(() => {
          if (this.board?.game === asked.game) void this.resync().catch(() => {});
        }, wait);
      }
      return;
    }
    this.resyncWait = RESYNC_WAIT_FIRST_MS;
    this.openedAt = now;
    this.afterChange();
    setTimeout(() => this.render(), PAUSE_GRACE_MS);
  }

  /**
   * A message that broke the protocol was dropped (src/checks.ts): say so, on
   * the page and in the console. Events it may have carried are missed, as in
   * a gap: the game is brought up to date.
   */
  private malformed(error: ProtocolError, lostEvents: boolean): void {
    console.error(`protocol error: ${error.message}`);
    this.say(() => t("protocolError", { problem: error.message }));
    if (lostEvents && this.board) void this.resync().catch(() => {});
  }

  private push(message: ServerMessage): void {
    if (message.type !== "events" || !this.board) return;
    const before = cardPlaces(this.root);
    let result: ReturnType<typeof receive>;
    try {
      result = receive(this.board, message, performance.now());
    } catch (error) {
      // events that do not fit the board (src/board.ts says which): left unapplied
      const reason = error instanceof Error ? error.message : String(error);
      return this.malformed(new ProtocolError("events", `cannot be applied: ${reason}`), true);
    }
    if (result.kind === "gap") {
      void this.resync().catch(() => {});
      return;
    }
    if (result.kind === "old") return;
    this.board = result.board;
    this.noteEvents(message.events, message.v);
    this.afterChange(before);
    this.sayDone(message.events);
  }

  /** A push's events in words, for a screen reader: a move and the card it turned up, a deal, an undo, the end. */
  private sayDone(events: WireEvent[]): void {
    const words: string[] = [];
    for (const event of events) {
      if (event.type === "moved" && typeof event.to === "number") words.push(t("saidMoved", { card: spokenCard(event.card), to: event.to }));
      if (event.type === "flipped") words.push(t("saidFlipped", { card: spokenCard(event.card) }));
      if (event.type === "dealt") words.push(t("saidDealt"));
      if (event.type === "suit_removed") words.push(t("saidSuit", { suit: t(`suit_${event.suit}`) }));
      if (event.type === "undone") words.push(t("saidUndone"));
      if (event.type === "restarted") words.push(t("saidRestarted"));
      if (event.type === "won") words.push(t("won"));
      if (event.type === "game_lost") words.push(t(event.reason === "abandoned" ? "abandoned" : "resigned"));
    }
    if (words.length === 0) return;
    // emptied first: the same words twice (two deals) are said twice
    this.said.textContent = "";
    window.clearTimeout(this.sayTimer);
    this.sayLater = [words.join(". ")];
    this.sayTimer = window.setTimeout(() => {
      this.said.textContent = this.sayLater.reduce((said, more) => `${said}${/[.!?…]$/.test(said) ? "" : "."} ${more}`);
      this.sayLater = [];
    }, 50);
  }

  /** What the events mean beyond the view: a hint, a proof of loss, the end. */
  private noteEvents(events: WireEvent[], v: number): void {
    // A hint is a version of its own, at the same position: a proof of loss still holds.
    const samePosition = events.every((event) => event.type === "hint" || event.type === "score");
    if (samePosition && this.lost && this.lost.v === v - 1) this.lost = { ...this.lost, v };
    for (const event of events) {
      if (event.type === "hint") {
        this.hint = { v, hint: event };
        this.hintWordsShown = true;
        clearTimeout(this.hintWordsTimer);
        this.hintWordsTimer = window.setTimeout(() => {
          this.hintWordsShown = false;
          this.render();
        }, HINT_WORDS_MS);
      }
      if (event.type === "lost_position") this.lost = { v, fromDeal: event.from_deal };
      if (event.type === "won") this.ended = { won: event, lost: null, stats: event.stats ?? null };
      if (event.type === "game_lost") this.ended = { won: null, lost: event, stats: null };
    }
  }

  private afterChange(before?: Map<string, DOMRect>): void {
    const view = this.board?.view;
    if (view && view.status !== "active" && this.screen === "game") {
      if (!this.ended) this.ended = { won: null, lost: null, stats: null };
      const ended = this.ended;
      if (!ended.stats) void this.loadEndStats(view.level);
      setTimeout(() => {
        if (this.screen === "game" && this.board?.view.status !== "active") this.show("results");
      }, ended.won ? 700 : 0);
    }
    this.render();
    if (before) animateFrom(this.root, before);
  }

  private async loadEndStats(level: Level): Promise<void> {
    const reply = await this.read("endStats", { type: "stats", level });
    if (reply?.type === "stats" && this.ended) {
      const rows = levelRows(reply.stats, level);
      this.ended.stats = (this.gameWinnable ? rows.winnable : rows.random) ?? null;
      this.render();
    } else if (reply && reply.type !== "stats" && reply.type !== "error") {
      this.failed(reply);
    }
  }

  /**
   * A read for a panel: its reply, or null when it was refused or cut off, which is
   * then said in the panel (`unread`) until a later read of it is answered.
   */
  private async read(what: "stats" | "games" | "endStats", request: Body, early = false): Promise<ServerMessage | null> {
    let reply: ServerMessage;
    try {
      reply = await this.conn.request(request, early);
    } catch (error) {
      if (!(error instanceof Disconnected || error instanceof ProtocolError)) throw error;
      // an answer this page cannot use (said once, by `malformed`) is no empty list either
      this.unread.set(what, error instanceof Disconnected ? () => t("readCutOff") : () => t("readUnusable"));
      this.render();
      return null;
    }
    if (reply.type === "error" && reply.code !== "unauthenticated") {
      this.unread.set(what, saidError(reply));
      this.render();
      return null;
    }
    this.unread.delete(what);
    if (reply.type === "error") this.failed(reply);
    return reply;
  }

  /** The connection is open again: the reads it cut off, or the server refused, on the panel on show. */
  private readAgain(): void {
    if (!this.player) return;
    if (this.unread.has("stats") && (this.screen === "stats" || this.screen === "lobby")) void this.loadStats();
    if (this.unread.has("games") && this.screen === "history") void this.loadGames();
    const view = this.board?.view;
    if (this.unread.has("endStats") && this.screen === "results" && view && this.ended && !this.ended.stats) void this.loadEndStats(view.level);
  }

  /** What `unread` says of a read, where its answer would be. */
  private unreadNote(what: "stats" | "games" | "endStats"): HTMLElement | null {
    const said = this.unread.get(what);
    // said by `said` when it changes, not each time the panel is drawn anew
    return said === undefined ? null : h("p.error.unread", { "data-status": true }, shown(said));
  }

  /**
   * A request refused: its message said (`unauthenticated`: sign in again). A
   * reply of a type that does not answer the request breaks the protocol, and
   * is said so.
   */
  private failed(reply: ServerMessage): void {
    if (reply.type !== "error") return this.malformed(new ProtocolError(reply.type, "does not answer the request"), false);
    if (reply.code === "unauthenticated") {
      // Decided once no tab of the browser is replacing the token: refused because one
      // was, this tab would forget the token the browser keeps while that tab's answer
      // is on its way, and sign every tab out (`watchKey`). The token refused is the one
      // held now: each token this page takes is its connection's (`followSignIn`).
      const token = this.token;
      void this.rotationsDone().then(() => this.refusedAsIs(reply, token));
      return;
    }
    this.say(saidError(reply));
  }

  /**
   * Once no other tab of the browser is replacing the token (it holds `ROTATION_LOCK`),
   * or after `ROTATION_WAIT_MS`. Not while this tab is replacing it: its own rotation's
   * request waits for this tab's hello, which would wait for the lock it holds.
   */
  private async rotationsDone(): Promise<void> {
    const locks = typeof navigator === "undefined" ? undefined : navigator.locks;
    if (this.rotations > 0 || !locks?.request) return;
    const signal = AbortSignal.timeout(ROTATION_WAIT_MS);
    await locks.request(ROTATION_LOCK, { signal }, async () => {}).catch(() => {}); // timed out: decided without it
  }

  /** A request sent with `token` refused `unauthenticated`, once no tab of the browser is replacing the token. */
  private refusedAsIs(reply: ErrorReply, token: string | null): void {
    // The page holds another token since (another tab's, followed while this waited): the
    // refusal was of one it no longer holds, and says nothing of the one it holds.
    if (this.token !== token) return;
    // Because another tab replaced the token (both asked for a new one at once, say):
    // that tab's, kept in the browser, is this player's now.
    const kept = storedToken(loadShared(TOKEN_KEY));
    if (kept !== null && kept !== this.token) return this.followSignIn(kept);
    // Or because another tab's rotation of this token happened and its answer was lost:
    // that rotation's token may be this player's now (`greet` finds out).
    if (this.token !== null && storedNext(this.token) !== null) return this.followSignIn(this.token);
    this.signedOut(saidError(reply));
  }

  /** The token no longer works (revoked from another device, or expired): sign in again. */
  private signedOut(message: Said | null): void {
    this.said.textContent = ""; // the last move said is that player's too
    window.clearTimeout(this.sayTimer);
    this.sayLater = [];
    this.forgetToken();
    this.player = null;
    this.board = null;
    this.unfinished = [];
    // nothing of that player's stays for whoever signs in next on this page
    this.stats = [];
    this.games = [];
    this.gamesLoaded = false;
    this.unread.clear();
    this.replay = null;
    this.ended = null;
    this.showToken = false;
    this.notice = null; // of the player signed out
    this.signInError = message;
    this.show("signin");
    this.conn.stop();
    this.conn.start();
  }

  private async signOut(): Promise<void> {
    await this.conn.request({ type: "sign_out" }).catch(() => null);
    this.signedOut(null);
  }

  /**
   * A new token for this player (the old one may have leaked): kept on this
   * device; every other connection signed in with the old one is signed out.
   */
  private async rotateToken(): Promise<void> {
    if (this.online !== "open") return this.say(() => t("offlineAction"));
    // One tab at a time: two tabs replacing the token at once, one was refused and signed
    // out, and could forget the other's new token. The second finds it and follows it.
    this.rotations++;
    try {
      await oneTabAtATime(ROTATION_LOCK, () => this.rotateAlone());
    } finally {
      this.rotations--;
    }
  }

  /**
   * A rotation of this page's token asked for in this browser and not answered (the page
   * reloaded, or the connection dropped, as it was sent), the token still taken: asked
   * again with the same new token (PROTOCOL.md, Tokens). The first request may yet reach
   * the server after this connection's hello, and sign out every connection on the old
   * token without a word; asked again, the rotation answers here either way (done, or
   * `unauthenticated`: the new token is tried, `refusedAsIs`).
   */
  private rotateAgain(): void {
    const token = this.token;
    if (token === null || this.player === null || this.rotations > 0 || storedNext(token) === null) return;
    this.rotations++;
    void oneTabAtATime(ROTATION_LOCK, async () => {
      // done by another tab meanwhile (its token followed), or the page signed out
      if (this.token === token && storedNext(token) !== null && this.online === "open") await this.rotateAlone();
    }).finally(() => this.rotations--);
  }

  private async rotateAlone(): Promise<void> {
    const before = this.token;
    const kept = storedToken(loadShared(TOKEN_KEY));
    if (kept !== null && kept !== before) return this.followSignIn(kept);
    // A rotation of this token still unanswered (its request may yet reach the server) is
    // asked again with the same new token: a second one would leave the first one's, if it
    // lands, in no tab's keeping (PROTOCOL.md, Tokens).
    const next = (before !== null ? storedNext(before) : null) ?? newToken();
    if (before !== null) save(NEXT_TOKEN_KEY, JSON.stringify({ from: before, next }));
    const reply = await this.conn.request({ type: "rotate_token", token: next }).catch(() => null);
    // Cut off: the next hello finds whether the server replaced the token (`greet`).
    if (reply === null) return this.say(() => t("rotateCutOff"));
    if (reply.type === "token") {
      this.token = next;
      save(TOKEN_KEY, next);
      forget(NEXT_TOKEN_KEY);
      this.say(() => t("tokenRotated"), "done");
    } else if (reply.type === "error" && reply.code === "unauthenticated" && this.token !== before) {
      // another tab asked for a new token first, and this page follows it already
    } else {
      // a token the server will not take (in use): the next try makes another
      if (reply.type === "error" && reply.code === "bad_request") forget(NEXT_TOKEN_KEY);
      this.failed(reply); // unauthenticated: rotated here by another tab (followed), or revoked
    }
  }

  /** Every token of the player revoked, every device signed out: for a device lost, with no way back. */
  private async signOutEverywhere(): Promise<void> {
    if (this.online !== "open") return this.say(() => t("offlineAction"));
    const reply = await this.conn.request({ type: "sign_out", everywhere: true }).catch(() => null);
    if (reply === null) return this.say(() => t("offlineAction"));
    if (reply.type === "signed_out") this.signedOut(() => t("signedOutEverywhere"));
    else this.failed(reply);
  }

  // ---- actions ----------------------------------------------------------

  private async act(
    body:
      | { type: "move"; card: string; to?: number }
      | { type: "deal" | "undo" | "restart" }
      | { type: "hint" | "pause" | "resume" | "resign" },
  ): Promise<ErrorReply | "nothing" | "offline" | null> {
    const board = this.board;
    if (!board) return null;
    // While the connection is lost (or its hello is on its way) the action is
    // refused at once and said, never kept to be sent later against a board
    // that may have changed on another device meanwhile.
    if (this.online !== "open") {
      this.say(() => t("offlineAction"));
      return "offline";
    }
    const versioned = body.type === "move" || body.type === "deal" || body.type === "undo" || body.type === "restart";
    // A second action at the version one on its way carries would be refused
    // as stale (and resync); a second hint would be counted, and so would a
    // second pause (or resume): a double click, or a key held down, sends one.
    // A resume goes while its pause is on its way: the pause screen shows with
    // the pause's clock event, which may come before its ack.
    // A resign ends the game at the version on screen: nothing else at that
    // version goes while it is on its way (the second click of a double click
    // on its Yes lands on the card under the closed question).
    // A hint is a version of its own: while it is on its way it holds the
    // version on screen as an action does, or the move pressed right after it
    // would carry the version the hint replaces and be refused as stale.
    const holdsVersion = versioned || body.type === "resign" || body.type === "hint";
    const atVersion = `${board.game}@${board.v}`;
    const keys =
      body.type === "hint" ? [atVersion, `${board.game}:hint`] : holdsVersion ? [atVersion] : [`${board.game}:${body.type}`];
    if (keys.some((key) => this.sending.has(key)) || (holdsVersion && this.behindReply(board))) {
      // not dropped unsaid: on a slow connection the player would wait for a move that never comes
      // (but a second hint, a double click on Hint, is: the first one's words are on their way)
      if (holdsVersion && !(body.type === "hint" && this.sending.has(`${board.game}:hint`))) this.say(PENDING, "note");
      return "nothing";
    }
    for (const key of keys) this.sending.add(key);
    this.markBusy();
    const clockAsked = body.type === "pause" || body.type === "resume" ? ++this.clockAsked : 0;
    let reply: ServerMessage;
    try {
      reply = await this.conn.request(
        body.type === "move" || body.type === "deal" || body.type === "undo" || body.type === "restart"
          ? { ...body, game: board.game, v: board.v }
          : { type: body.type, game: board.game },
      );
      // taken up at once, so that the version stays held if its push is still to come
      const answered = reply.type === (body.type === "hint" ? "hint" : "ack");
      if (answered && (reply.type === "ack" || reply.type === "hint")) this.expect(board.game, reply.v);
    } catch (error) {
      if (error instanceof Disconnected) return null;
      throw error;
    } finally {
      for (const key of keys) this.sending.delete(key);
      this.markBusy();
      if (holdsVersion && this.notice === PENDING) this.render(); // no longer so, unless its push is still to come
    }
    if (reply.type !== "error" && reply.type !== (body.type === "hint" ? "hint" : "ack")) {
      this.failed(reply);
      return "nothing";
    }
    if (reply.type !== "error") {
      if (clockAsked === this.clockAsked) {
        this.knownPaused = body.type === "pause";
        if (this.board?.game === board.game) this.board = { ...this.board, view: { ...this.board.view, paused: this.knownPaused } };
      }
      if (body.type === "pause") this.render();
      return null;
    }
    if (reply.code === "stale" || reply.code === "id_reused" || reply.code === "not_open") void this.resync().catch(() => {});
    else if (reply.code === "paused") this.pausedElsewhere();
    else this.failed(reply);
    return reply;
  }

  /**
   * Marks the board busy (`aria-busy`; style.css dims it after a moment) while a move, deal,
   * undo, restart or hint at the version on screen is on its way: another would not be sent.
   * Set in place, not drawn anew, so a card's slide is not cut short.
   */
  private markBusy(): void {
    this.root.querySelector("main.game .table")?.setAttribute("aria-busy", String(this.busy()));
  }

  /** Whether an action at the version on screen is on its way, or waits for its push (`behindReply`). */
  private busy(): boolean {
    const board = this.board;
    return board !== null && (this.sending.has(`${board.game}@${board.v}`) || this.behindReply(board));
  }

  /**
   * Whether a reply has said the game is at a later version than `board` shows (its
   * push, which may come after it, is still on its way): an action at the version on
   * screen would be refused as stale, so it waits for the push as for the reply.
   */
  private behindReply(board: GameBoard): boolean {
    return this.replied !== null && this.replied.game === board.game && board.v < this.replied.v;
  }

  /**
   * An action acknowledged at version `v`: its events are pushed apart, before
   * or after the reply. When they have not come a moment later, they were lost
   * on the way: the game is brought up to date as after a gap.
   */
  private expect(game: number, v: number): void {
    const behind = () => this.board?.game === game && this.board.v < v;
    if (!behind()) return;
    this.replied = { game, v };
    this.markBusy();
    setTimeout(() => {
      if (behind()) void this.resync().catch(() => {});
    }, PUSH_GRACE_MS);
  }

  /** Refused with `paused`: the game was paused on another device. Show the pause screen. */
  private pausedElsewhere(): void {
    const board = this.board;
    if (!board) return;
    // The clock has stopped even if its `clock` event is still on its way; that event sets the exact time.
    const now = performance.now();
    this.board = { ...board, view: { ...board.view, running: false, time_ms: timeAt(board, now) }, clockAt: now };
    this.knownPaused = true;
    this.hint = null;
    this.render();
  }

  private async move(card: string, to?: number): Promise<void> {
    // A drag let go (or a card tapped) after a push the table waited to draw (a
    // move or a pause from another device): played on a board the player has not
    // seen, it could be refused for a reason about cards not shown, or go where
    // they did not mean. Not sent: the board is drawn at the release.
    const shown = this.board ? `${this.board.game}@${this.board.v}` : null;
    if (this.paused() || shown !== this.drawnAt) {
      if (to !== undefined) springBack();
      return;
    }
    const error = await this.act(to === undefined ? { type: "move", card } : { type: "move", card, to });
    if (error === "nothing") {
      if (to !== undefined) springBack();
    } else if (error) {
      if (to === undefined) shake(card);
      else springBack();
    }
  }

  /**
   * Asks before `action`. Every question the page asks is about something that
   * cannot be taken back (a game lost, a token or the player's sign-in gone), so
   * the focus starts on Cancel: Enter pressed once too often does nothing.
   */
  private ask(
    text: string,
    action: () => void,
    { notWhilePaused = false, showToken = false }: { notWhilePaused?: boolean; showToken?: boolean } = {},
  ): void {
    const from = focusSelector(document.activeElement);
    this.confirm = { text, action, from, notWhilePaused, showToken, copied: null };
    this.render('.dialog [data-action="confirm-no"]');
  }

  /** The question's token to the clipboard; where the page has none (plain http to another host), selected to copy by hand. */
  private async copyToken(token: string): Promise<void> {
    try {
      await navigator.clipboard.writeText(token);
    } catch {
      const code = this.root.querySelector(".dialog code.token");
      if (code) window.getSelection()?.selectAllChildren(code);
      return;
    }
    if (this.confirm?.showToken && this.token === token) {
      this.confirm.copied = token;
      this.render();
    }
  }

  /** The question answered: it goes, and the focus returns whence it was asked. */
  private answered(): void {
    const from = this.confirm?.from ?? null;
    this.confirm = null;
    this.render(from);
  }

  private async newGame(level: Level, deal?: number, winnable = false): Promise<void> {
    // One at a time: a second new_game (a double click on Play) would abandon the first game, a loss.
    if (this.starting) return;
    this.starting = true;
    this.render(); // Play shows it is busy
    const known = new Set([...this.unfinished.map((game) => game.game), ...(this.board ? [this.board.game] : [])]);
    this.dealtMaybe = null;
    let reply: ServerMessage;
    try {
      reply = await this.conn.request(
        deal ? { type: "new_game", level, deal } : winnable ? { type: "new_game", level, winnable } : { type: "new_game", level },
      );
    } catch (error) {
      if (error instanceof Disconnected) this.dealtMaybe = known;
      throw error;
    } finally {
      this.starting = false;
      this.render();
    }
    if (reply.type !== "game") return this.failed(reply);
    this.level = level;
    this.gameWinnable = winnable;
    this.dealText = "";
    save(LEVEL_KEY, level);
    this.board = boardFrom(reply.game, reply.v, reply.view, performance.now());
    this.openedAt = performance.now();
    this.unfinished = [];
    this.hint = null;
    this.lost = null;
    this.knownPaused = false;
    this.ended = null;
    this.show("game");
  }

  /**
   * A new game, asked first when it would abandon an unfinished one (R17): the
   * one on screen, or one the server lists now (another tab or device may have
   * started one since this page last looked).
   */
  private async startNew(level: Level, deal?: number, winnable = false): Promise<void> {
    if (this.online !== "open") {
      this.say(() => t("offlineAction")); // not kept to start later: the lobby may have changed
      return;
    }
    if (this.choosing || this.starting) return; // one on its way: Play is busy
    this.choosing = true;
    this.render(); // Play shows it is busy
    try {
      await this.refreshUnfinished();
    } finally {
      this.choosing = false;
    }
    const active = this.board?.view.status === "active" || this.unfinished.some((game) => game.status === "active");
    if (active) this.ask(t("confirmNew"), () => void this.newGame(level, deal, winnable));
    else await this.newGame(level, deal, winnable);
  }

  /** The player's unfinished games, as the server has them now (kept as they were when it cannot say). */
  private async refreshUnfinished(early = false): Promise<void> {
    const reply = await this.conn.request({ type: "games", status: "active" }, early).catch(() => null);
    if (reply?.type === "games") this.unfinished = reply.games.filter((game) => game.status === "active");
  }

  private async lobby(early = false): Promise<void> {
    await this.leaveGame(early);
    this.show("lobby");
    await this.loadStats(early);
    await this.refreshUnfinished(early); // another tab or device may have started one
    if (this.screen === "lobby") this.render();
  }

  /** The game on screen closed (kept among the unfinished ones if it is), and off the screen. */
  private async leaveGame(early = false): Promise<void> {
    if (this.board && this.board.view.status === "active") {
      const game = this.board.game;
      this.unfinished = [{ ...this.summary(), game }];
      await this.conn.request({ type: "close_game", game }, early).catch(() => null);
    } else if (this.board) {
      this.unfinished = [];
    }
    this.board = null;
  }

  private summary(): GameSummary {
    const board = this.board as GameBoard;
    const view = board.view;
    const now = performance.now();
    return {
      game: board.game,
      level: view.level,
      status: view.status,
      v: board.v,
      moves: view.moves,
      score: scoreAt(board, now),
      time_ms: timeAt(board, now),
      deal: view.deal,
      started: "",
      updated: "",
    };
  }

  private async loadStats(early = false): Promise<void> {
    const reply = await this.read("stats", { type: "stats" }, early);
    if (reply?.type === "stats") {
      this.stats = reply.stats;
      this.render();
    } else if (reply && reply.type !== "error") {
      this.failed(reply);
    }
  }

  private async loadGames(): Promise<void> {
    this.gamesLoaded = false;
    const reply = await this.read("games", { type: "games" });
    if (reply?.type === "games") {
      this.games = reply.games;
      this.gamesLoaded = true;
      this.render();
    } else if (reply && reply.type !== "error") {
      this.failed(reply); // the list is not claimed empty
    }
  }

  /**
   * A finished game's replay, every page of it (a reply holds at most one page
   * of actions: while it has a `next`, ask from there and append), and its boards.
   */
  private async openReplay(game: number): Promise<void> {
    const reply = await this.conn.request({ type: "replay", game });
    if (reply.type !== "replay") return this.failed(reply);
    if (!reply.replay || !reply.result) return;
    const replay = { ...reply.replay, actions: [...reply.replay.actions] };
    for (let next = reply.next; next !== undefined; ) {
      // each page must go on from the actions so far, or the document would repeat or skip some
      if (next !== replay.actions.length) {
        return this.malformed(new ProtocolError("replay.next", `must be ${replay.actions.length}, the actions so far, got ${next}`), false);
      }
      const page = await this.conn.request({ type: "replay", game, from: next });
      if (page.type !== "replay") return this.failed(page);
      if (!page.replay || page.replay.actions.length === 0) {
        return this.malformed(new ProtocolError("replay.replay.actions", `has no action from ${next} on, where a page was promised`), false);
      }
      replay.actions.push(...page.replay.actions);
      next = page.next;
    }
    const { steps, batches } = await this.history(game);
    this.replay = { game, replay, result: reply.result, step: 0, steps, batches };
    this.show("replay");
  }

  /**
   * A finished game's boards, step by step: its final view (`open_game`) and its
   * whole history (`open_game` since 0), played back by `replaySteps`. It is
   * closed again unless it is the game on screen (the results of one just ended).
   */
  private async history(game: number): Promise<{ steps: View[] | null; batches: EventBatch[] }> {
    const final = await this.conn.request({ type: "open_game", game });
    const since = await this.conn.request({ type: "open_game", game, since: 0 });
    if (this.board?.game !== game) await this.conn.request({ type: "close_game", game }).catch(() => null);
    if (final.type !== "game" || since.type !== "catch_up" || since.v !== final.v) return { steps: null, batches: [] };
    return { steps: replaySteps(final.view, since.events), batches: since.events };
  }

  /**
   * The sign-in form's name: a name the server would refuse (`checkName`), or
   * one it has refused, is said here and not sent.
   */
  private submitName(typed: string): void {
    const checked = checkName(typed);
    if ("problem" in checked) {
      this.waitingName = null;
      this.signInError = () => nameText(checked);
      this.render();
      return;
    }
    if (this.refusedNames.has(checked.name)) {
      this.waitingName = null;
      this.signInError = () => t("badName");
      this.render();
      return;
    }
    void this.register(checked.name);
  }

  private async register(name: string): Promise<void> {
    if (this.registering) return; // a double submit would be refused as already signed in
    this.registering = true;
    try {
      // One tab of the browser at a time: two tabs registering at once made two
      // players, and the token of the one saved first was lost under the other's.
      await oneTabAtATime("scorpion.register", () => this.registerAlone(name));
    } finally {
      this.registering = false;
    }
  }

  private async registerAlone(name: string): Promise<void> {
    // Another tab signed in while this one waited (its storage event may have come,
    // and this page be on its way to following it): that player, not a second one.
    // Its storage event may not have come yet, nor this tab's copy of localStorage have
    // the token: the mark another tab left says it did (`tokenOnItsWay`).
    const kept = storedToken(loadShared(TOKEN_KEY)) ?? (await tokenOnItsWay());
    if (kept !== null) {
      if (kept !== this.token) this.followSignIn(kept);
      return;
    }
    let reply: ServerMessage;
    try {
      reply = await this.conn.request({ type: "register", name });
    } catch (error) {
      if (!(error instanceof Disconnected)) throw error;
      // the server cannot be reached: said, and the name is sent as the connection opens again
      this.waitingName = name;
      this.signInError = () => t("registerWaiting");
      this.render();
      if (this.online === "open") this.registerWaiting(); // it opened again meanwhile
      return;
    }
    this.waitingName = null;
    if (reply.type === "error") {
      if (reply.code === "bad_request") this.refusedNames.add(name);
      this.signInError = saidError(reply, "register");
      this.render();
      return;
    }
    if (reply.type !== "registered") return this.failed(reply);
    this.token = reply.token;
    save(TOKEN_KEY, reply.token);
    await mark(REGISTERED_MARK); // before the next tab may register (`tokenOnItsWay`)
    this.player = reply.player;
    this.signInError = null;
    Object.assign(this.typed, { name: "", token: "", otherDevice: false });
    this.show("lobby");
    await this.loadStats();
  }

  /** Registers the name pressed while the server could not be reached, if the sign-in page still waits for it. */
  private registerWaiting(): void {
    const name = this.waitingName;
    this.waitingName = null;
    if (name !== null && this.player === null && this.screen === "signin") void this.register(name);
  }

  /** Signs this page in with the token another tab of the browser stored (`fallback`: the one this page held). */
  private followSignIn(token: string, fallback: string | null = null): void {
    this.waitingName = null;
    this.fallback = fallback !== token ? fallback : null;
    this.token = token;
    this.tokenTyped = false; // stored already
    this.signInError = null;
    Object.assign(this.typed, { name: "", token: "", otherDevice: false });
    this.conn.stop();
    this.conn.start();
  }

  private signInWithToken(token: string): void {
    this.waitingName = null;
    this.token = token;
    // kept once the server has taken it (\`hello\`): a token mistyped is never stored
    this.tokenTyped = true;
    this.signInError = null;
    this.conn.stop();
    this.conn.start();
  }

  private changeLocale(next: Locale): void {
    setLocale(next);
    save(LOCALE_KEY, next);
    // what is on show is said again in the new language; what the server
    // worded in the old one (a move's refusal) goes rather than stay in it
    if (typeof this.notice === "string") this.notice = null;
    if (typeof this.signInError === "string") this.signInError = null;
    this.render();
    // not yet open: the hello on its way says the old one, and "open" says the new one after it
    if (this.online === "open") this.sayLocale();
  }

  /** Tells the server the page's language again (a hello on the open connection). */
  private sayLocale(): void {
    const next = (this.helloLocale = locale());
    void this.conn
      .request({ type: "hello", protocol: 1, client: CLIENT, locale: next, ...(this.token && this.player ? { token: this.token } : {}) })
      .catch(() => null);
  }

  // ---- screens ----------------------------------------------------------

  private show(screen: Screen): void {
    this.remember(screen);
    this.screen = screen;
    this.confirm = null;
    if (screen !== "lobby") this.dealtMaybe = null; // the lobby left (the game continued, say): said enough
    this.render();
    if (screen === "stats") void this.loadStats();
    if (screen === "history") void this.loadGames();
  }

  /**
   * The browser's history has an entry per screen gone to, so Back (a phone's
   * back gesture) goes to the screen before, not off the page. The first
   * screen, the sign-in page, the screen after it, and a game's results (which
   * take the game's place) replace the entry they are on. A screen reached by
   * Back or Forward is already its entry (`navigating`): it is only corrected
   * when another screen had to be shown there, and not at all once a later
   * press has moved on (its own turn shows its screen).
   */
  private remember(screen: Screen): void {
    if (screen === "loading" || typeof history === "undefined") return;
    const state = history.state as Entry | null;
    const navigating = this.navigating;
    this.navigating = null;
    if (navigating !== null) {
      if (state?.n === navigating && state.screen !== screen) this.toHistory("replaceState", { screen, n: navigating });
      return;
    }
    const kept = state?.screen;
    if (kept === screen) return;
    const replace = kept === undefined || kept === "signin" || screen === "signin" || (screen === "results" && kept === "game");
    this.toHistory(replace ? "replaceState" : "pushState", { screen, n: `${performance.timeOrigin}:${++this.entries}` });
  }

  private toHistory(how: "pushState" | "replaceState", entry: Entry): void {
    try {
      history[how](entry, "");
    } catch {
      // a browser limiting how often history may change: the screen is shown all the same
    }
  }

  /**
   * Back or Forward to an entry of `remember`'s: that screen, as far as it can still be
   * shown. Presses are taken in turn (`popstate`), each going to the entry the browser
   * is on when its turn comes: one pressed while another waited for the server is not
   * overtaken by it.
   */
  private async navigated(): Promise<void> {
    const state = history.state as Entry | null;
    const n = state?.n ?? null;
    try {
      this.navigating = n;
      if (!this.player || this.screen === "signin" || this.screen === "loading" || !state?.screen) {
        this.remember(this.screen === "loading" ? "signin" : this.screen); // signed out: it stays
        return;
      }
      await this.navigateTo(state.screen);
    } finally {
      this.navigating = null;
      // not shown (the server could not be reached, say): the entry says what is
      const now = history.state as Entry | null;
      if (n !== null && now?.n === n && now.screen !== this.screen && this.screen !== "loading") {
        this.toHistory("replaceState", { screen: this.screen, n });
      }
    }
  }

  private async navigateTo(screen: Screen): Promise<void> {
    switch (screen) {
      case "game": {
        if (this.board) return this.show(this.board.view.status === "active" || !this.ended ? "game" : "results");
        const active = this.unfinished.find((game) => game.status === "active");
        if (active) await this.openGame(active.game);
        if (!this.board) await this.lobby();
        return;
      }
      case "replay":
        if (this.replay) return this.show("replay");
        return this.show("history");
      case "results":
        if (this.board && this.ended) return this.show("results");
        return this.show("history");
      case "stats":
      case "history":
        await this.leaveGame();
        return this.show(screen);
      default:
        await this.lobby();
    }
  }

  /** Shows `message` for 4 s: a refusal or failure, something done as asked (`done`), or a `note`. */
  private say(message: Said, kind: "error" | "done" | "note" = "error"): void {
    this.noticeKind = kind;
    this.notice = message;
    this.noticesSaid++;
    clearTimeout(this.noticeTimer);
    this.noticeTimer = window.setTimeout(() => {
      this.notice = null;
      this.render();
    }, 4000);
    this.render();
  }

  private paused(): boolean {
    const board = this.board;
    // a clock held by the page while the connection was lost is no pause
    if (!board || board.view.status !== "active" || board.view.running || board.held) return false;
    if (this.knownPaused) return true;
    // the server's word (a view, a catch-up or a clock event); an older server sends none
    if (typeof board.view.paused === "boolean") return board.view.paused;
    return performance.now() - this.openedAt >= PAUSE_GRACE_MS && this.online === "open";
  }

  /**
   * Draws the page anew. The focus stays where it was (the same card, button,
   * field or menu, found by `focusSelector`), with a field's caret, so a
   * keyboard is never sent back to the top of the page; `focusOn` moves it.
   * While a question is asked, the rest of the page is inert.
   */
  private render(focusOn: string | null = null): void {
    if (whenReleased(() => this.render(focusOn))) return; // not under a pressed card
    // what the note said waited (a reply, or the push a reply ran ahead of) has come: no longer so
    if (this.notice === PENDING && !this.busy()) this.notice = null;
    if (this.confirm?.notWhilePaused && this.screen === "game" && this.paused()) this.confirm = null;
    const focused = document.activeElement;
    const selector = focusOn ?? focusSelector(focused);
    // the focus was on the page (not nowhere, nor the language menu): it stays on the page
    const inPage = focused instanceof HTMLElement && this.root.contains(focused) && focused.closest("header") === null;
    const action = focused instanceof HTMLElement ? focused.dataset.action : undefined;
    const wasPaused = Boolean(this.root.querySelector(".paused"));
    const caret =
      focused instanceof HTMLInputElement && focused.type === "text" ? [focused.selectionStart, focused.selectionEnd] : null;
    // A box scrolled sideways (the statistics on a phone) stays where the player put
    // it when the same screen is drawn again (a reply, a push, a tick of the clock).
    const scrolled = new Map<string, number>();
    this.root.querySelectorAll<HTMLElement>(".scroll").forEach((box, index) => {
      if (box.scrollLeft) scrolled.set(`${this.drawn}:${index}`, box.scrollLeft);
    });
    const listTop = this.root.querySelector<HTMLElement>("ol.replay-actions")?.scrollTop ?? 0;
    const page = [this.header(), this.body(), this.noticeBar()];
    page.forEach((part) => (part.inert = Boolean(this.confirm)));
    placeChildren(this.root, [...page, this.dialog()]); // the notices stay where they are
    this.speakChanges();
    this.drawnBefore = this.drawn;
    this.drawn = this.screen;
    // the window's title names the screen: its heading, or the game's level
    const named = this.root.querySelector("main #screen-heading, main.game .level-name")?.textContent;
    document.title = named ? t("screenTitle", { screen: named }) : t("title");
    this.drawnAt = this.board ? `${this.board.game}@${this.board.v}` : null;
    fitColumns(this.root);
    this.root.querySelectorAll<HTMLElement>(".scroll").forEach((box, index) => {
      const left = scrolled.get(`${this.drawn}:${index}`);
      if (left !== undefined) box.scrollLeft = left;
      markScroll(box);
    });
    const steps = this.root.querySelector<HTMLElement>("ol.replay-actions");
    if (steps) keepStepInSight(steps, listTop);
    const found = selector ? this.root.querySelector<HTMLElement>(selector) : null;
    const again = found && !found.closest("[inert]") && !found.matches(":disabled") ? found : null;
    const paused = this.root.querySelector<HTMLElement>(".paused button");
    // Another screen, gone to from the header's menu or by Back or Forward (the focus in the
    // header, on no control, or on the last screen's heading): the focus goes to its heading,
    // said by a screen reader, which heard nothing of the change while it stayed in the menu.
    const heading = this.root.querySelector<HTMLElement>("main #screen-heading");
    const otherScreen = this.drawnBefore !== this.screen && this.drawnBefore !== "loading" && this.drawnBefore !== "signin";
    const outOfPage = !inPage || focused === document.body || focused?.id === "screen-heading";
    if (paused && !wasPaused && (inPage || focused === document.body) && !this.confirm) {
      paused.focus(); // the pause screen, a dialog, has just opened
    } else if (heading && otherScreen && outOfPage && !this.confirm && !(focused instanceof HTMLSelectElement)) {
      heading.focus({ preventScroll: true });
    } else if (again) {
      again.focus({ preventScroll: true });
      if (caret && again instanceof HTMLInputElement && caret[0] !== null && caret[1] !== null) again.setSelectionRange(caret[0], caret[1]);
    } else if (this.confirm) {
      this.root.querySelector<HTMLElement>(".dialog .no")?.focus();
    } else if (inPage || focusOn !== null) {
      // what had the focus is gone (another screen, the pause's end) or disabled: a control near it, or the screen's first
      this.nearFocus(found, action)?.focus({ preventScroll: true });
    }
    this.markBusy();
    this.tick();
  }

  /**
   * Where the focus goes when what had it is gone or disabled: the next
   * enabled button beside a disabled one (Undo with nothing left to undo:
   * Hint), Pause after the pause screen, else the screen's first control (or,
   * on a screen with none, its heading).
   */
  private nearFocus(disabled: HTMLElement | null, action: string | undefined): HTMLElement | null {
    const enabled = (node: Element | null): node is HTMLElement => node instanceof HTMLButtonElement && !node.disabled;
    if (disabled) {
      for (let next = disabled.nextElementSibling; next; next = next.nextElementSibling) if (enabled(next)) return next;
      for (let previous = disabled.previousElementSibling; previous; previous = previous.previousElementSibling) {
        if (enabled(previous)) return previous;
      }
    }
    const first = (...selectors: string[]) => {
      for (const selector of selectors) {
        const node = this.root.querySelector<HTMLElement>(selector);
        if (node && !node.matches(":disabled")) return node;
      }
      return null;
    };
    if (action === "resume" || action === "resume-big") {
      const pause = first('.tools [data-action="pause"]');
      if (pause) return pause;
    }
    switch (this.screen) {
      case "signin":
        return first("#name");
      case "lobby":
        return first('[data-action="continue"]', '[data-action="play"]');
      case "game":
        return first(".paused button", ".tools button:enabled", ".banner button:enabled");
      case "results":
        return first('[data-action="new"]');
      case "replay":
        return first('[data-action="next"]', '[data-action="back"]');
      case "stats":
      case "history":
        // no button on the screen (no past game yet): its heading, read out, not the header's Levels
        return first("main button", "main #screen-heading", "header nav button");
      default:
        return null;
    }
  }

  private header(): HTMLElement {
    const select = h(
      "select.language",
      { id: "language", "aria-label": t("language"), onchange: (event: Event) => this.changeLocale((event.target as HTMLSelectElement).value as Locale) } as never,
      // each language named in itself, and marked as such: a screen reader says "Русский" in Russian
      LOCALES.map((code) => h("option", { value: code, lang: code, selected: code === locale() }, { en: "English", fi: "Suomi", ru: "Русский" }[code])),
    );
    const nav =
      this.player && this.screen !== "game"
        ? h(
            "nav",
            {},
            this.navButton("levels", () => void this.lobby()),
            this.navButton("statistics", () => this.show("stats")),
            this.navButton("history", () => this.show("history")),
          )
        : null;
    return h(
      "header.top",
      {},
      h("h1", {}, h("span.logo", { "aria-hidden": "true" }, "♠"), t("title")),
      nav,
      // a long name is cut with an ellipsis (style.css): the whole of it on hovering
      h("span.who", { title: this.player?.name ?? "" }, this.player?.name ?? ""),
      select,
    );
  }

  private navButton(key: Key, action: () => void): HTMLElement {
    return h("button.link", { type: "button", "data-action": `nav-${key}`, onclick: action }, t(key));
  }

  private body(): HTMLElement {
    switch (this.screen) {
      case "loading":
        // the first connection has not opened for a while: the server is down, or not reached
        return h(
          "main.center",
          {},
          h("p", {}, t("connecting")),
          // reached, but its hello refused or unusable: said as such (`noticeBar`), not as unreachable;
          // a slow link whose first attempt is still under way is no server out of reach
          this.online !== "open" && !this.refused && performance.now() - this.startedAt >= UNREACHABLE_AFTER_MS
            ? this.attemptFailed
              ? h("p.unreachable", { "data-status": true }, t("unreachable")) // said by `said`, once
              : h("p.still-connecting", { "data-status": true }, t("stillConnecting"))
            : null,
        );
      case "signin":
        return this.signInScreen();
      case "lobby":
        return this.lobbyScreen();
      case "game":
        return this.gameScreen();
      case "results":
        return this.resultsScreen();
      case "stats":
        return this.statsScreen();
      case "history":
        return this.historyScreen();
      case "replay":
        return this.replayScreen();
    }
  }

  private signInScreen(): HTMLElement {
    // Drawn again on every render (a refusal, a reconnection): what was typed is kept.
    const typed = this.typed;
    const field = (id: "name" | "token", maxlength: number, autocomplete: string) => {
      const input = h("input", { id, name: id, required: true, maxlength, autocomplete }) as HTMLInputElement;
      input.value = typed[id];
      input.addEventListener("input", () => (typed[id] = input.value));
      return input;
    };
    // maxlength counts UTF-16 units: room for 32 characters of two each (🦂); checkName counts as the server does
    const name = field("name", 2 * MAX_NAME_CHARS, "nickname");
    const token = field("token", MAX_TOKEN_CHARS, "off");
    return h(
      "main.panel.signin",
      {},
      h("p.lead", {}, t("welcome")),
      h(
        "form.register",
        { onsubmit: (event: Event) => (event.preventDefault(), this.submitName(name.value)) } as never,
        h("label", { for: "name" }, t("name")),
        name,
        h("button.primary", { type: "submit", "data-action": "register" }, t("register")),
      ),
      this.signInError ? h("p.error", { "data-alert": true }, shown(this.signInError)) : null, // said by `alerted`
      h(
        "details.other-device",
        { open: typed.otherDevice, ontoggle: (event: Event) => (typed.otherDevice = (event.target as HTMLDetailsElement).open) } as never,
        h("summary", { "data-action": "other-device" }, t("otherDevice")),
        h(
          "form.token",
          { onsubmit: (event: Event) => (event.preventDefault(), this.signInWithToken(token.value.trim())) } as never,
          h("label", { for: "token" }, t("token")),
          token,
          h("button", { type: "submit", "data-action": "sign-in" }, t("signIn")),
        ),
      ),
    );
  }

  private statsTable(row: StatsRow | undefined): HTMLElement {
    const cells: [Key, string][] = row
      ? [
          ["wins", String(row.wins)],
          ["losses", String(row.losses)],
          ["winRate", winRate(row)],
          ["currentStreak", String(row.current_streak)],
          ["bestStreak", String(row.best_streak)],
        ]
      : [];
    return h(
      "dl.stats",
      {},
      cells.map(([key, value]) => h("div", { "data-stat": key }, h("dt", {}, t(key)), h("dd", {}, value))),
    );
  }

  private lobbyScreen(): HTMLElement {
    const level = this.level;
    const rows = levelRows(this.stats, level);
    const winnable = level !== "easy" && this.wantWinnable;
    // Drawn again on every render (stats arriving, say): what was typed is kept, and the focus.
    // A text field, not a number one: a number field tells no caret (`selectionStart` is
    // null there), so one drawn again while a number was typed had the caret put back at
    // its start, and 12, a push, then 3 was 312. A phone still shows its digits' keyboard
    // (inputmode); the number is checked at Play, and only there: a `pattern` marked " 42 ",
    // which plays, invalid for a screen reader, and 0, which does not, valid.
    const deal = h("input", {
      id: "deal",
      type: "text",
      inputmode: "numeric",
      autocomplete: "off",
      spellcheck: "false",
      "data-action": "deal-number",
      value: this.dealText,
      // Enter in the field plays, as a form's would (the keys a held Enter repeats do not)
      onkeydown: (event: KeyboardEvent) => {
        // keyCode 229: the Enter that ends a composition in some browsers (Safari)
        if (event.key !== "Enter" || event.repeat || event.isComposing || event.keyCode === 229) return;
        event.preventDefault();
        this.root.querySelector<HTMLButtonElement>('[data-action="play"]')?.click();
      },
      oninput: (event: Event) => {
        this.dealText = (event.target as HTMLInputElement).value;
        if (this.notice === BAD_DEAL) {
          // said of what was typed before: gone with it
          this.notice = null;
          this.render();
        }
      },
    } as never) as HTMLInputElement;
    const active = this.unfinished.find((game) => game.status === "active");
    // a game listed since a new_game's reply was lost: likely the one it dealt (said once, by `said`)
    const dealt = active && this.dealtMaybe !== null && !this.dealtMaybe.has(active.game);
    return h(
      "main.panel.lobby",
      {},
      active
        ? h(
            "section.continue",
            {},
            h(
              "button.primary",
              { type: "button", "data-action": "continue", onclick: () => void this.openGame(active.game) },
              t("continueGame"),
            ),
            h("span", {}, `${t(`level_${active.level}` as Key)} · ${t("moves")} ${active.moves} · ${clock(active.time_ms)}`),
            dealt ? h("p.note.dealt-maybe", { "data-status": "" }, t("dealtMaybe")) : null,
          )
        : null,
      screenHeading(t("chooseLevel")),
      h(
        "div.levels",
        { role: "radiogroup", "aria-label": t("chooseLevel"), onkeydown: radioKeys },
        LEVELS.map((each) =>
          h(
            `button.level${each === level ? ".chosen" : ""}`,
            {
              type: "button",
              role: "radio",
              "aria-checked": each === level ? "true" : "false",
              tabindex: each === level ? 0 : -1,
              "data-level": each,
              onclick: () => {
                this.level = each;
                save(LEVEL_KEY, each);
                this.render();
              },
            },
            t(`level_${each}` as Key),
          ),
        ),
      ),
      this.unreadNote("stats"),
      this.unread.has("stats")
        ? null
        : h("section.level-stats", {}, h("h3", {}, t("levelStats", { level: t(`level_${level}` as Key) })), this.statsTable(rows.random)),
      rows.winnable && !this.unread.has("stats")
        ? h(
            "section.level-stats.winnable",
            {},
            h("h3", {}, t("winnableStats", { level: t(`level_${level}` as Key) })),
            this.statsTable(rows.winnable),
          )
        : null,
      level === "easy" ? h("p.note", {}, t("winnable")) : this.dealChoice(winnable, deal),
      h(
        `button.primary.play${this.starting || this.choosing ? ".busy" : ""}`,
        {
          type: "button",
          "data-action": "play",
          // on its way: a winnable deal may take the server a moment (a second press does nothing)
          "aria-busy": this.starting || this.choosing ? "true" : "false",
          onclick: () => {
            const typed = level !== "easy" && !winnable ? deal.value.trim() : "";
            const number = Number(typed);
            // a number the wire cannot carry is said here, not sent (nor replaced by a random deal);
            // digits only: not 1e3 or 5.0, which Number would read, nor letters the field takes
            if (typed !== "" && !(/^[0-9]+$/.test(typed) && Number.isSafeInteger(number) && number >= 1)) {
              this.say(BAD_DEAL);
              return;
            }
            void this.startNew(level, typed === "" ? undefined : number, winnable);
          },
        },
        this.starting || this.choosing ? `${t("play")}…` : t("play"),
      ),
      h(
        "details.token-box",
        { open: this.showToken, ontoggle: (event: Event) => (this.showToken = (event.target as HTMLDetailsElement).open) } as never,
        h("summary", { "data-action": "show-token" }, t("showToken")),
        h("p", {}, t("tokenNote")),
        h("code.token", {}, this.token ?? ""),
        h(
          "div.token-actions",
          {},
          h(
            "button",
            {
              type: "button",
              "data-action": "sign-out",
              // the token goes with the page's sign-out: on the player's only device, the player goes with it
              onclick: () => this.ask(t("confirmSignOut", { name: this.player?.name ?? "" }), () => void this.signOut(), { showToken: true }),
            },
            t("signOut"),
          ),
          h(
            "button",
            { type: "button", "data-action": "new-token", onclick: () => this.ask(t("confirmNewToken"), () => void this.rotateToken()) },
            t("newToken"),
          ),
          h(
            "button",
            {
              type: "button",
              "data-action": "sign-out-everywhere",
              onclick: () => this.ask(t("confirmSignOutEverywhere", { name: this.player?.name ?? "" }), () => void this.signOutEverywhere()),
            },
            t("signOutEverywhere"),
          ),
        ),
      ),
    );
  }

  /** Random deal (with an optional number) or a winnable one, on a level other than easy. */
  private dealChoice(winnable: boolean, deal: HTMLInputElement): HTMLElement {
    const kind = (value: boolean, key: Key) =>
      h(
        `button.deal-kind${value === winnable ? ".chosen" : ""}`,
        {
          type: "button",
          role: "radio",
          "aria-checked": value === winnable ? "true" : "false",
          tabindex: value === winnable ? 0 : -1,
          "data-deal-kind": value ? "winnable" : "random",
          onclick: () => {
            this.wantWinnable = value;
            save(WINNABLE_KEY, value ? "1" : "0");
            this.render();
          },
        },
        t(key),
      );
    return h(
      "div.deal-choice",
      {},
      h("div.deal-kinds", { role: "radiogroup", "aria-label": t("dealKind"), onkeydown: radioKeys }, kind(false, "randomDeal"), kind(true, "winnableDeal")),
      winnable ? h("p.note", {}, t("winnableNote")) : h("p.deal-number", {}, h("label", { for: "deal" }, t("dealNumber")), deal),
    );
  }

  private gameScreen(): HTMLElement {
    const board = this.board;
    if (!board) return h("main");
    const view = board.view;
    const active = view.status === "active";
    const hint = this.shownHint();
    const highlight: Highlight = hint ? { card: hint.card, to: hint.to, deal: hint.action === "deal" } : {};
    const paused = this.paused();
    const now = performance.now();
    // the game's actions wait for the connection: one pressed while it is lost would not be done
    const online = this.online === "open";
    const button = (action: string, key: Key, onclick: () => void, disabled = false) =>
      h("button.tool", { type: "button", "data-action": action, onclick, disabled: disabled || !active || !online }, t(key));
    // while paused the server refuses them (`paused`): resume first
    const tools = h(
      "div.tools",
      {},
      button("deal", "deal", () => void this.act({ type: "deal" }), view.stock === 0 || paused),
      button("undo", "undo", () => void this.act({ type: "undo" }), view.undo_depth === 0 || paused),
      button("hint", "hint", () => void this.act({ type: "hint" }), paused),
      paused
        ? button("resume", "resume", () => void this.act({ type: "resume" }))
        : button("pause", "pause", () => void this.act({ type: "pause" })),
      button("restart", "restart", () => this.ask(t("confirmRestart"), () => void this.act({ type: "restart" }), { notWhilePaused: true }), paused),
      button("resign", "resign", () => this.ask(t("confirmResign"), () => void this.act({ type: "resign" }))),
      h("button.tool", { type: "button", "data-action": "menu", onclick: () => void this.lobby() }, t("levels")),
    );
    const status = h(
      "div.status",
      {},
      h("span.level-name", {}, t(`level_${view.level}` as Key) + (view.deal ? ` #${view.deal}` : "")),
      // drawn with their figures (`tick` keeps them going): empty, the status took a line
      // less at 360 px, and the columns were fitted to room the figures then took
      h("span", {}, `${t("time")} `, h("b.clock", { "data-live": "clock" }, clock(timeAt(board, now)))),
      h("span", {}, `${t("score")} `, h("b.score", { "data-live": "score" }, String(scoreAt(board, now)))),
      h("span", {}, `${t("moves")} `, h("b.moves", {}, String(view.moves))),
    );
    // none while paused: they name cards the pause screen hides. The hint's words go
    // over the header (`noticeBar`), but beside the table in a short, wide window,
    // whose banners push no column down (SHORT_AND_WIDE)
    const notices: HTMLElement[] = [];
    const lost = this.lost && this.lost.v === board.v ? this.lost : null;
    if ((view.stuck || lost) && !paused) {
      notices.push(
        h(
          "div.banner.dead-end",
          {}, // said by `alerted`, once
          h(
            "p",
            { "data-lost": lost ? (lost.fromDeal ? "deal" : "position") : "", "data-alert": true },
            view.stuck ? t("stuck") : lostText(lost?.fromDeal ?? false),
          ),
          // a deal lost from the start: undo and restart lead back to it, no way out
          h("p", { "data-alert": true }, t(lost?.fromDeal ? "waysOutDeal" : "waysOut")),
          h(
            "div.ways",
            {},
            lost?.fromDeal ? null : button("undo", "undo", () => void this.act({ type: "undo" }), view.undo_depth === 0),
            lost?.fromDeal
              ? null
              : button("restart", "restart", () => this.ask(t("confirmRestart"), () => void this.act({ type: "restart" }), { notWhilePaused: true })),
            button("resign", "resign", () => this.ask(t("confirmResign"), () => void this.act({ type: "resign" }))),
            button("new", "newGame", () => void this.startNew(view.level, undefined, this.gameWinnable)),
          ),
        ),
      );
    }
    // after the dead end's ways out, which it must not push out of the window
    if (hint && SHORT_AND_WIDE.matches) notices.push(this.hintWords(hint, "p.banner.hint"));
    const table = paused
      ? h(
          "div.paused",
          { role: "dialog", "aria-label": t("paused") },
          h("h2", {}, t("paused")),
          h("p", {}, t("pausedNote")),
          h("button.primary", { type: "button", "data-action": "resume-big", onclick: () => void this.act({ type: "resume" }) }, t("resume")),
        )
      : tableElement(view, highlight, {
          onMove: (card, to) => void this.move(card, to),
          onDeal: () => void this.act({ type: "deal" }),
        });
    return h("main.game", { "data-v": board.v, "data-game": board.game }, status, tools, notices, table, h("p.keys", {}, t("keys")));
  }

  private resultsScreen(): HTMLElement {
    const board = this.board;
    const ended = this.ended;
    if (!board || !ended) return h("main");
    const view = board.view;
    const won = view.status === "won";
    const rows: [Key, string][] = [
      ["moves", String(ended.won?.moves ?? view.moves)],
      ["time", clock(ended.won?.time_ms ?? view.time_ms)],
      ["score", String(ended.won?.score ?? scoreAt(board, performance.now()))],
      ["suits", String(ended.won?.suits ?? view.foundations.length)],
      ["hints", String(ended.won?.hints ?? view.hints)],
      ["undos", String(ended.won?.undos ?? view.undos)],
    ];
    return h(
      `main.panel.results${won ? ".won" : ".lost"}`,
      {},
      screenHeading(won ? t("won") : t("lost")),
      ended.lost ? h("p", {}, ended.lost.reason === "resigned" ? t("resigned") : t("abandoned")) : null,
      h("p.level-name", {}, t(`level_${view.level}` as Key) + (view.deal ? ` #${view.deal}` : "")),
      h("dl.results-table", {}, rows.map(([key, value]) => h("div", { "data-result": key }, h("dt", {}, t(key)), h("dd", {}, value)))),
      h(
        "section.level-stats",
        {},
        h("h3", {}, t(this.gameWinnable ? "winnableStats" : "levelStats", { level: t(`level_${view.level}` as Key) })),
        ended.stats ? this.statsTable(ended.stats) : (this.unreadNote("endStats") ?? this.statsTable(undefined)),
      ),
      h(
        "div.actions",
        {},
        h("button.primary", { type: "button", "data-action": "new", onclick: () => void this.startNew(view.level, undefined, this.gameWinnable) }, t("newGame")),
        h("button", { type: "button", "data-action": "replay", onclick: () => void this.openReplay(board.game) }, t("replay")),
        h("button", { type: "button", "data-action": "levels", onclick: () => void this.lobby() }, t("levels")),
      ),
    );
  }

  private statsScreen(): HTMLElement {
    const columns: [Key, (row: StatsRow) => string][] = [
      ["games", (row) => String(row.games)],
      ["wins", (row) => String(row.wins)],
      ["losses", (row) => String(row.losses)],
      ["winRate", winRate],
      ["currentStreak", (row) => String(row.current_streak)],
      ["bestStreak", (row) => String(row.best_streak)],
      ["bestScore", (row) => (row.best_score === null ? "—" : String(row.best_score))],
      ["fastestWin", (row) => (row.fastest_win_ms === null ? "—" : clock(row.fastest_win_ms))],
      ["fewestMoves", (row) => (row.fewest_moves === null ? "—" : String(row.fewest_moves))],
    ];
    return h(
      "main.panel.stats-page",
      {},
      screenHeading(t("statistics")),
      // an older table is not shown as the player's statistics now
      this.unreadNote("stats") ?? [
        // shown while the table is wider than the screen (style.css)
        h("p.note.scroll-note", {}, t("scrollSideways")),
        // a region of its own, named and reached by Tab, so that a keyboard can scroll it (the arrow
        // keys) and a screen reader names what it scrolls; its id keeps the focus on it at a redraw
        h(
          "div.scroll",
          {
            id: "stats-table",
            tabindex: 0,
            role: "region",
            "aria-label": t("statsTable"),
            onscroll: (event: Event) => markScroll(event.target as HTMLElement),
          } as never,
          h(
            "table",
            {},
            h("thead", {}, h("tr", {}, h("th", {}, t("level")), columns.map(([key]) => h("th", {}, t(key))))),
            h(
              "tbody",
              {},
              this.stats.map((row) =>
                h(
                  "tr",
                  { "data-level": row.level, "data-winnable": row.winnable ? "true" : "false" },
                  h("th", {}, row.winnable ? t("winnableLevel", { level: t(`level_${row.level}` as Key) }) : t(`level_${row.level}` as Key)),
                  columns.map(([, value]) => h("td", {}, value(row))),
                ),
              ),
            ),
          ),
        ),
      ],
    );
  }

  private historyScreen(): HTMLElement {
    return h(
      "main.panel.history",
      {},
      screenHeading(t("history")),
      this.unreadNote("games"),
      this.unread.has("games")
        ? null
        : this.games.length === 0
        ? this.gamesLoaded
          ? h("p", {}, t("noGames"))
          : null
        : h(
            "ul.games",
            {},
            this.games.map((game) =>
              h(
                "li",
                { "data-game": game.game },
                h("span.level-name", {}, t(`level_${game.level}` as Key) + (game.deal ? ` #${game.deal}` : "")),
                h("span", { class: `status ${game.status}` }, t(`status_${game.status}` as Key)),
                h("span", {}, `${t("score")} ${game.score} · ${t("moves")} ${game.moves} · ${clock(game.time_ms)}`),
                h("time", { datetime: game.started }, new Date(game.started).toLocaleString(regionalLocale(locale(), navigator.languages))),
                game.status === "active"
                  ? h("button", { type: "button", "data-action": "continue", onclick: () => void this.openGame(game.game) }, t("continueGame"))
                  : h("button", { type: "button", "data-action": "replay", onclick: () => void this.openReplay(game.game) }, t("replay")),
              ),
            ),
          ),
    );
  }

  /** Moves the replay to `step` (kept within the game). */
  private replayTo(step: number): void {
    const state = this.replay;
    if (!state) return;
    const next = Math.max(0, Math.min(this.replayTotal(state), step));
    if (next === state.step) return;
    state.step = next;
    this.render();
  }

  /** The replay's steps: one per version with a board, else one per action. */
  private replayTotal(state: ReplayState): number {
    return state.steps ? state.steps.length - 1 : state.replay.actions.length;
  }

  private replayScreen(): HTMLElement {
    const state = this.replay;
    if (!state) return h("main");
    const { replay, result, steps } = state;
    const total = this.replayTotal(state);
    // a move's card as the table shows it, or (`said`) by name, as the object of "move"
    const describe = (index: number, said = false): string => {
      const action = replay.actions[index];
      if (action === undefined) {
        // the version after the last action: a resignation or an abandonment
        const lost = state.batches[index]?.events.find((event) => event.type === "game_lost");
        return lost?.type === "game_lost" && lost.reason === "abandoned" ? t("abandoned") : t("resigned");
      }
      switch (action.type) {
        case "move": {
          const card = said ? spokenCard(action.card, true) : cardLabel(action.card);
          return action.to === undefined ? t("actionAuto", { card }) : t("actionMove", { card, to: action.to });
        }
        case "deal":
          return t("actionDeal");
        case "undo":
          return t("actionUndo");
        case "restart":
          return t("actionRestart");
        case "hint":
          return t("actionHint");
        default:
          // an action type a later server adds (PROTOCOL.md section 11): named as sent
          return String((action as { type: unknown }).type);
      }
    };
    let last = 0;
    const playTimes = replay.actions.map((action) => (last = action.t ?? last));
    const timeAtStep = (step: number) => (step === 0 ? 0 : (playTimes[Math.min(step, playTimes.length) - 1] ?? 0));
    const button = (action: string, key: Key, step: number, disabled: boolean, primary = false) =>
      h(`button${primary ? ".primary" : ""}`, { type: "button", "data-action": action, onclick: () => this.replayTo(step), disabled }, t(key));
    const view = steps?.[state.step];
    const board = view
      ? h(
          "section.replay-board",
          { "data-step": state.step, "aria-label": t("step", { n: state.step, total }) },
          h(
            "div.status",
            {},
            h("span", {}, `${t("time")} `, h("b.clock", {}, clock(timeAtStep(state.step)))),
            h("span", {}, `${t("score")} `, h("b.score", {}, String(view.score))),
            h("span", {}, `${t("moves")} `, h("b.moves", {}, String(view.moves))),
          ),
          tableElement(view, { moved: movedCard(state.batches[state.step - 1]) }, null),
        )
      : h("p.note", {}, t("replayNoBoard"));
    const labels = Array.from({ length: total }, (_, i) => describe(i));
    const list = h(
      "ol.replay-actions",
      {},
      labels.map((label, index) =>
        h(
          `li${index === state.step - 1 ? ".current" : ""}`,
          {},
          h("button.link", { type: "button", "data-step": index + 1, onclick: () => this.replayTo(index + 1) }, shownAndSaid(label, describe(index, true))),
        ),
      ),
    );
    list.style.setProperty("--digits", String(String(labels.length).length)); // room for the longest step number (style.css)
    return h(
      "main.replay",
      {},
      screenHeading(`${t("replay")}: ${t(`level_${replay.level}` as Key)} #${replay.deal}`),
      h(
        "p.step",
        { "data-status": true }, // said by `said` when it changes
        t("step", { n: state.step, total }),
        state.step > 0
          ? shownAndSaid(` — ${describe(state.step - 1)} (${clock(timeAtStep(state.step))})`, ` — ${describe(state.step - 1, true)} (${clock(timeAtStep(state.step))})`)
          : ` — ${t("replayStart")}`,
      ),
      h(
        "div.actions.replay-steps",
        {},
        button("first", "first", 0, state.step === 0),
        button("prev", "previous", state.step - 1, state.step === 0),
        button("next", "next", state.step + 1, state.step === total, true),
        button("last", "last", total, state.step === total),
      ),
      board,
      list,
      h(
        "dl.results-table",
        {},
        h("div.word", {}, h("dt", {}, t("status")), h("dd", {}, result.won ? t("status_won") : t("status_lost"))),
        h("div", {}, h("dt", {}, t("score")), h("dd", {}, String(result.score))),
        h("div", {}, h("dt", {}, t("moves")), h("dd", {}, String(result.moves))),
        h("div", {}, h("dt", {}, t("time")), h("dd", {}, clock(result.time_ms))),
      ),
      h("p.keys", {}, t("replayKeys")),
      h("button", { type: "button", "data-action": "back", onclick: () => this.show("history") }, t("back")),
    );
  }

  /** A hint in words, as `tag`: its card as the table shows it, and by name for a screen reader. */
  private hintWords(hint: HintEvent, tag: string): HTMLElement {
    const atDeal = this.board?.view.undo_depth === 0;
    const shown = hintText(hint, atDeal);
    const said = hintText(hint, atDeal, true);
    return h(
      `${tag}${hint.action === "none" ? ".none" : ""}`,
      // its version: the same words asked again later are news, said again
      { role: "status", "data-reason": hint.reason ?? "", "data-v": this.hint?.v },
      shownAndSaid(shown, said),
    );
  }

  /** The hint to show for the game on screen: the last one asked, while its version stands and the game is not paused. */
  private shownHint(): HintEvent | null {
    const board = this.board;
    if (this.screen !== "game" || !board || !this.hint || this.hint.v !== board.v || this.paused()) return null;
    return this.hint.hint;
  }

  private noticeBar(): HTMLElement {
    // signed in, or signing in: the sign-in page says a lost connection too
    const offline = this.online !== "open" && (this.player !== null || this.screen === "signin");
    // A hint's words too, not above the table: there they pushed the columns down as
    // they came and up as they went, under a pointer aimed at a card.
    // a request unanswered for a while on an open connection: said once, until its reply
    // comes or the connection drops (then the words for that take over)
    this.unanswered = this.unansweredNow();
    const others = offline || (this.refused && this.online !== "open") || this.notice || this.unanswered;
    // for a while, and only alone: they hide the status line under them, and with a
    // notice or two the tools too (the card and column stay marked)
    const hint = this.hintWordsShown && !others && !SHORT_AND_WIDE.matches ? this.shownHint() : null;
    // a pause ends them (the card and column stay marked): put back at its end, they were said again
    if (this.paused()) this.hintWordsShown = false;
    const notices = this.notices;
    // in a game, kept off the table (style.css): its columns reach down to the window's bottom
    notices.classList.toggle("in-game", this.screen === "game");
    const drawn = [
      hint ? this.hintWords(hint, "p.banner.hint") : null,
      // refused (a hello answered "too many requests", a close saying why): the server was reached, and it is said beside
      // a lost connection is said as lost until one opens again, through every attempt in between:
      // words that went from "reconnecting" to "connecting" at each retry were read out at each
      offline ? h("p.toast.offline", { role: "status" }, this.attemptFailed && !this.refused ? t("reconnecting") : t("connecting")) : null,
      this.refused && this.online !== "open" ? h("p.toast.error.refused", { role: "alert" }, shown(this.refused)) : null,
      this.unanswered ? h("p.toast.waiting", { role: "status" }, t("unanswered")) : null,
      this.notice
        ? this.noticeKind === "error"
          ? h("p.toast.error", { role: "alert", "data-said": this.noticesSaid }, shownAndSaid(shown(this.notice)))
          : h(`p.toast.${this.noticeKind}`, { role: "status", "data-said": this.noticesSaid }, shownAndSaid(shown(this.notice)))
        : null,
    ].filter((notice) => notice !== null);
    // one that is on show already, unchanged, stays: put in anew, it would be said again
    const shownNow = [...notices.children];
    placeChildren(notices, drawn.map((notice) => shownNow.find((old) => old.isEqualNode(notice)) ?? notice));
    return notices;
  }

  /**
   * Says what the page's drawing changed, by the regions outside it: its alerts
   * by `alerted`, when their words change, or when a new sign-in error has the
   * same words as the last (a name refused twice is said twice); its status lines
   * by `said`, when their words change (while the game is paused its dead end is
   * hidden, not gone). A redraw that changes neither says nothing.
   */
  private speakChanges(): void {
    const words = (selector: string) => [...this.root.querySelectorAll(selector)].map(readText).join(" ");
    if (!(this.screen === "game" && this.paused())) {
      const alert = { words: words("[data-alert]"), cause: this.screen === "signin" ? this.signInError : null };
      const again = alert.words !== "" && alert.words === this.alerting.words && alert.cause !== this.alerting.cause;
      if (alert.words !== this.alerting.words || again) {
        this.alerting = alert;
        // emptied first when the words are the same, as `said` is
        this.alerted.textContent = again ? "" : alert.words;
        if (again) window.setTimeout(() => this.alerting === alert && (this.alerted.textContent = alert.words), 50);
      }
    }
    const status = words("[data-status]");
    if (status !== this.statusSaid) {
      this.statusSaid = status;
      if (status) {
        // after what the pushes are about to say ("You resigned."), not in its place
        if (this.sayLater.length) this.sayLater.push(status);
        else this.said.textContent = status;
      }
    }
  }

  private dialog(): HTMLElement {
    const confirm = this.confirm;
    if (!confirm) return h("div.no-dialog", { hidden: true });
    const close = () => this.answered();
    return h(
      "div.backdrop",
      {},
      h(
        "div.dialog",
        { role: "alertdialog", "aria-modal": "true", "aria-label": confirm.text },
        h("p", {}, confirm.text),
        confirm.showToken && this.token
          ? [
              h("code.token", {}, this.token),
              h(
                "button.copy",
                { type: "button", "data-action": "copy-token", onclick: () => void this.copyToken(this.token ?? "") },
                confirm.copied === this.token ? t("tokenCopied") : t("copyToken"),
              ),
            ]
          : null,
        h(
          "div.actions",
          {},
          h("button.primary.yes", { type: "button", "data-action": "confirm-yes", onclick: () => (close(), confirm.action()) }, t("yes")),
          h("button.no", { type: "button", "data-action": "confirm-no", onclick: close }, t("cancel")),
        ),
      ),
    );
  }

  // ---- clock and keys -----------------------------------------------------

  /** Whether a request has waited UNREACHABLE_AFTER_MS for its reply on an open connection. */
  private unansweredNow(): boolean {
    const since = this.conn.waitingSince();
    return this.online === "open" && since !== null && performance.now() - since >= UNREACHABLE_AFTER_MS;
  }

  private tick(): void {
    // the server has been silent that long (or has answered since): said (or no longer)
    if (this.unansweredNow() !== this.unanswered) return this.render();
    const board = this.board;
    if (!board || this.screen !== "game") return;
    const now = performance.now();
    const clockNode = this.root.querySelector('[data-live="clock"]');
    const scoreNode = this.root.querySelector('[data-live="score"]');
    const clockText = clock(timeAt(board, now));
    const scoreText = String(scoreAt(board, now));
    // a figure one digit longer (10:00, a score past 999) may take the status onto
    // another line: the columns are fitted again to the room left under it
    const longer = (clockNode?.textContent?.length ?? 0) !== clockText.length || (scoreNode?.textContent?.length ?? 0) !== scoreText.length;
    if (clockNode) clockNode.textContent = clockText;
    if (scoreNode) scoreNode.textContent = scoreText;
    if (longer) fitColumns(this.root);
    if (this.paused() !== Boolean(this.root.querySelector(".paused"))) this.render();
  }

  private key(event: KeyboardEvent): void {
    if (this.confirm) {
      if (event.key === "Escape") this.answered();
      if (event.key === "Tab") this.tabInDialog(event);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (this.screen === "replay") return this.replayKey(event);
    if (this.screen !== "game") return;
    if ((event.target as HTMLElement).closest("input, select, textarea")) return;
    // A key held down repeats its keydown: the game's keys act on its first
    // press alone (held H would ask hint after hint, held U undo move after
    // move), and so does Enter on a focused card or button.
    if (event.repeat) {
      if (event.key === "Enter" || shortcutLetter(event) !== null || columnKey(event) !== null) event.preventDefault();
      return;
    }
    const focused = (event.target as HTMLElement).closest<HTMLElement>(".card.up");
    const to = columnKey(event);
    if (focused && to !== null) {
      void this.move(focused.dataset.card ?? "", to);
      event.preventDefault();
      return;
    }
    // A key does what its button does, and nothing while that is disabled (nothing to
    // undo, paused); but while the connection is lost the action is tried, and says so.
    const tool = (action: string, run: () => void) => () => {
      const button = this.root.querySelector<HTMLButtonElement>(`.tools [data-action="${action}"]`);
      if (this.online !== "open" || (button && !button.disabled)) run();
    };
    const actions: Record<string, () => void> = {
      d: tool("deal", () => void this.act({ type: "deal" })),
      u: tool("undo", () => void this.act({ type: "undo" })),
      h: tool("hint", () => void this.act({ type: "hint" })),
      p: () => void this.act({ type: this.paused() ? "resume" : "pause" }),
    };
    // the keys marked D, U, H and P on any layout (src/keys.ts)
    const letter = shortcutLetter(event);
    const action = letter === null ? undefined : actions[letter];
    if (action) {
      action();
      event.preventDefault();
    }
  }

  /** Tab and Shift+Tab go round the question's buttons (the rest of the page is inert): Yes is a Tab away from Cancel. */
  private tabInDialog(event: KeyboardEvent): void {
    const buttons = [...this.root.querySelectorAll<HTMLElement>(".dialog button")];
    if (buttons.length === 0) return;
    const at = buttons.indexOf(document.activeElement as HTMLElement);
    const step = event.shiftKey ? -1 : 1;
    const next = at === -1 ? (event.shiftKey ? buttons.length - 1 : 0) : (at + step + buttons.length) % buttons.length;
    event.preventDefault();
    buttons[next].focus();
  }

  /** The replay's keys: arrows step back and forth, Home and End go to the deal and the end. */
  private replayKey(event: KeyboardEvent): void {
    const state = this.replay;
    if (!state || (event.target as HTMLElement).closest("input, select, textarea")) return;
    const steps: Record<string, number> = {
      ArrowLeft: state.step - 1,
      ArrowRight: state.step + 1,
      Home: 0,
      End: this.replayTotal(state),
    };
    const step = steps[event.key];
    if (step === undefined) return;
    event.preventDefault();
    this.replayTo(step);
  }
}
