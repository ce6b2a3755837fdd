/**
 * The table on screen: columns, stock, foundations and reserve drawn from a
 * view, and the player's gestures turned into intentions (`onMove`). A tap (or
 * Enter on a focused card) asks for an auto-move; dragging a face-up card
 * carries it with every card on it and drops it on the column under the
 * pointer; a drop nowhere springs back. Nothing moves for real until the
 * server's events redraw the table; `springBack` undoes a drag the server
 * refused. `animateFrom` slides each card from where it was drawn before
 * (FLIP), so a tapped card flies to its new place.
 */
import { cardFace, spokenCard, spokenFoundation, SUIT_SYMBOL, type Suit } from "./format";
import { h } from "./dom";
import { t, tn } from "./i18n";
import type { View } from "./wire";

export interface TableHandlers {
  onMove: (card: string, to?: number) => void;
  onDeal: () => void;
}

export interface Highlight {
  card?: string;
  /** The bottom card of a group a replay's step just moved: the group is marked. */
  moved?: string;
  to?: number;
  deal?: boolean;
}

export function cardElement(card: string, column: number): HTMLElement {
  const face = cardFace(card);
  const symbol = SUIT_SYMBOL[face.suit];
  return h(
    `button.card.up.suit-${face.suit}${face.red ? ".red" : ".black"}`,
    { type: "button", "data-card": card, "data-column": column, "aria-label": spokenCard(card) },
    h("span.corner", {}, h("span.rank", {}, face.rank), h("span.pip", {}, symbol)),
    h("span.center", { "aria-hidden": "true" }, symbol),
  );
}

function columnElement(view: View, index: number, highlight: Highlight): HTMLElement {
  const number = index + 1;
  const column = view.columns[index];
  const size = column.down + column.cards.length;
  const label = `${t("column", { n: number })}: ${column.down ? tn("faceDown", column.down) + ", " : ""}${
    size === 0 ? t("emptyColumn") : tn("faceUp", column.cards.length)
  }`;
  // The overlap of its face-up cards depends on how many there are (style.css, "fitting a column").
  const element = h("div.column", {
    "data-column": number,
    role: "group",
    "aria-label": label,
    style: `--up: ${column.cards.length}; --down: ${column.down}`,
  });
  if (highlight.to === number) element.classList.add("hint-target");
  element.append(h("div.slot", { "aria-hidden": "true" }, String(number)));
  for (let i = 0; i < column.down; i++) element.append(h("div.card.down", { "aria-hidden": "true" }));
  let moved = false;
  for (const card of column.cards) {
    const cardNode = cardElement(card, number);
    if (highlight.card === card) cardNode.classList.add("hinted");
    moved ||= highlight.moved === card;
    if (moved) cardNode.classList.add("moved");
    element.append(cardNode);
  }
  return element;
}

/** The table of `view`; without `handlers` a still one (a replay's), which nothing on it moves. */
export function tableElement(view: View, highlight: Highlight, handlers: TableHandlers | null): HTMLElement {
  const stock = h(
    `button.stock${view.stock === 0 ? ".empty" : ""}${highlight.deal ? ".hinted" : ""}`,
    {
      type: "button",
      "data-action": "deal",
      disabled: view.stock === 0 || view.status !== "active" || !handlers,
      "aria-label": t("deal") + " — " + t("stock", { n: view.stock }),
      onclick: () => handlers?.onDeal(),
    },
    h("span", {}, view.stock ? String(view.stock) : ""),
  );
  const slots: HTMLElement[] = [];
  for (let i = 0; i < 4; i++) {
    const suit = view.foundations[i] as Suit | undefined;
    slots.push(
      suit
        ? h(
            `div.foundation.full.suit-${suit}${suit === "H" || suit === "D" ? ".red" : ".black"}`,
            // named as a card is, not by its symbols ("♥ K♥")
            { "data-suit": suit, role: "img", "aria-label": spokenFoundation(suit) },
            h("span.center", { "aria-hidden": "true" }, SUIT_SYMBOL[suit]),
            h("span.corner", { "aria-hidden": "true" }, "K" + SUIT_SYMBOL[suit]),
          )
        : h("div.foundation", { "aria-hidden": "true" }),
    );
  }
  const top = h(
    "div.top-row",
    {},
    view.level === "three-blind-mice" // no stock on this level (R5): the reserve instead
      ? null
      : h("div.stock-area", {}, stock, h("span.caption", {}, t("stock", { n: view.stock }))),
    view.reserve.length
      ? h(
          "div.reserve",
          { "aria-label": t("reserve"), role: "group" },
          view.reserve.map((card) => {
            const cardNode = cardElement(card, 0);
            if (highlight.card === card) cardNode.classList.add("hinted"); // outlined as a column's card is
            return cardNode;
          }),
        )
      : null,
    h("div.foundations", { "aria-label": t("foundations"), role: "group" }, slots),
  );
  const columns = h(
    `div.columns.cols-${view.columns.length}`,
    { style: `--cols: ${view.columns.length}` },
    view.columns.map((_, i) => columnElement(view, i, highlight)),
  );
  const table = h(`div.table${handlers ? "" : ".still"}`, {}, top, columns);
  if (handlers) {
    attachGestures(table, handlers);
  } else {
    table.querySelectorAll<HTMLElement>(".card.up").forEach((card) => {
      card.tabIndex = -1;
      card.setAttribute("aria-disabled", "true");
    });
  }
  return table;
}

/**
 * Fits each table's columns into the window, from their top to the window's
 * bottom (style.css, "fitting a column"). A long column's face-up cards
 * overlap more, all alike, down to strips of `FLOOR` px, where the rank is
 * still read. When the longest column would not end inside the window even
 * so, the whole table is drawn narrower, its cards smaller, as far as that
 * column needs, but no narrower than `LEAST_SCALE` of its width (nor cards
 * under `LEAST_CARD` px). When even that is not enough (a very long column in
 * a short window: a phone on its side), the deepest face-up cards of the
 * column are folded under the next one, each showing an edge of `FOLDED` px,
 * as few as it takes for the rest to keep their strips and the top card to
 * end inside the window. Run after every drawing and on resize.
 */
export function fitColumns(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>(".columns").forEach((columns) => {
    const table = columns.closest<HTMLElement>(".table");
    const shapes = [...columns.querySelectorAll<HTMLElement>(".column")].map((column) => ({
      column,
      up: [...column.querySelectorAll<HTMLElement>(".card.up")],
      down: column.querySelectorAll(".card.down").length,
    }));
    // the height a column of cards `width` wide needs, its face-up cards `FLOOR` px apart
    const need = (width: number, up: number, down: number) => width * (CARD_HEIGHT + DOWN_STRIP * down) + FLOOR * Math.max(0, up - 1) + COLUMN_PADDING;
    const longest = (width: number) => Math.max(0, ...shapes.map((shape) => need(width, shape.up.length, shape.down)));
    const roomNow = () => Math.max(0, Math.floor(window.innerHeight - (columns.getBoundingClientRect().top + window.scrollY) - ROOM_BELOW));
    const cardWidth = () => columns.querySelector(".column")?.getBoundingClientRect().width ?? 0;
    if (table) {
      table.style.maxWidth = ""; // its own width first
      const natural = cardWidth();
      const least = Math.min(natural, Math.max(LEAST_CARD, natural * LEAST_SCALE));
      let width = natural;
      // narrower until the longest column fits: the row above the columns shrinks with the
      // cards (nearly in proportion: its caption does not), so a step or two more may be needed
      for (let step = 0; step < 6 && width > least + 0.5 && longest(width) > roomNow(); step++) {
        const top = table.getBoundingClientRect().top + window.scrollY;
        const above = columns.getBoundingClientRect().top + window.scrollY - top; // the top row, per card width
        const shape = shapes.reduce((a, b) => (need(width, b.up.length, b.down) > need(width, a.up.length, a.down) ? b : a));
        const fixed = window.innerHeight - top - ROOM_BELOW - FLOOR * Math.max(0, shape.up.length - 1) - COLUMN_PADDING - 1;
        const fits = Math.max(least, Math.min(width - 0.5, fixed / (CARD_HEIGHT + DOWN_STRIP * shape.down + above / width)));
        const tableWidth = table.getBoundingClientRect().width - shapes.length * (width - fits);
        table.style.maxWidth = `${Math.floor(tableWidth)}px`;
        width = cardWidth();
      }
    }
    const room = roomNow();
    columns.style.setProperty("--room", `${room}px`);
    const width = cardWidth();
    const over = (up: number, down: number) => need(width, up, down) - room;
    // folded only when that makes every column fit: in a window too short for the table
    // even folded (a banner on a small phone) every rank stays in sight, and the page scrolls
    const folds = shapes.every(({ up, down }) => over(up.length, down) <= Math.max(0, up.length - 1) * (FLOOR - FOLDED));
    for (const { column, up, down } of shapes) {
      const folded = folds && over(up.length, down) > 0 ? Math.ceil(over(up.length, down) / (FLOOR - FOLDED)) : 0;
      column.style.setProperty("--folded", String(folded));
      up.forEach((card, index) => card.classList.toggle("folded", index < folded));
    }
  });
}

/** Pixels kept free below the columns, inside the window. */
const ROOM_BELOW = 10;
/** The least strip of a face-up card on another (style.css's floor). */
const FLOOR = 11;
/** What a folded card shows of itself. */
const FOLDED = 3;
/** A table is drawn no narrower than this share of its width to fit a column... */
const LEAST_SCALE = 0.6;
/** ...nor with cards under this many pixels wide: 30 % of it, the most a strip shows, is still 11 px. */
const LEAST_CARD = 37;
/** A card's height and a face-down card's strip, per card width; the column's padding (style.css). */
const CARD_HEIGHT = 1.4;
const DOWN_STRIP = 0.15;
const COLUMN_PADDING = 6;

/** How far a mouse (or pen) moves a pressed card before it is dragged: short of it, the press is a tap. */
const DRAG_THRESHOLD = 6;
/**
 * How far a finger does: a finger wobbles as it taps, and the browser still
 * takes one that moved less than this for a tap, and clicks (Chromium's slop
 * is 15 px). Dragged sooner, that tap would be dropped on its own column and
 * spring back, its click withheld: nothing would happen.
 */
const TOUCH_DRAG_THRESHOLD = 15;

interface Drag {
  pointer: number;
  card: HTMLElement;
  carried: HTMLElement[];
  x: number;
  y: number;
  /** How far the pointer moves before the press is a drag. */
  threshold: number;
  moved: boolean;
}

let lastDrag: HTMLElement[] = [];

/**
 * A pointer is down on a card or a button: drawing the page again now would
 * take it from under the pointer (a drag in progress would be dropped, its
 * pointer capture lost with the old table, and the release would land on a new
 * node: no click, so a Deal pressed as a push came did nothing). So a redraw
 * asked for meanwhile waits until the pointer is released anywhere, and until
 * the click has run.
 */
let pressed = false;
let redrawAfter: (() => void) | null = null;
/** Puts back the cards of the drag in progress (Escape), if one is. */
let cancelDrag: (() => void) | null = null;

/** True, keeping `redraw` for later, while a pointer is down on a card or a button; false (draw now) otherwise. */
export function whenReleased(redraw: () => void): boolean {
  if (!pressed) return false;
  redrawAfter = redraw;
  return true;
}

function released(): void {
  // A drag whose release this page never saw (the window lost the focus): its cards go
  // back, and Escape is the next dialog's again.
  if (cancelDrag) {
    cancelDrag();
    cancelDrag = null;
  }
  if (!pressed) return;
  pressed = false;
  const redraw = redrawAfter;
  redrawAfter = null;
  if (redraw) setTimeout(redraw, 0); // after this release's click
}

if (typeof window !== "undefined") {
  window.addEventListener(
    "pointerdown",
    (event) => {
      if (event.button === 0 && event.target instanceof Element && event.target.closest("button")) pressed = true;
    },
    true,
  );
  window.addEventListener("pointerup", released);
  window.addEventListener("pointercancel", released);
  // The window lost the focus with a card pressed (another window, a system
  // gesture): its release may never be seen here, and the page would never be
  // drawn again until some later click.
  window.addEventListener("blur", released);
  // Escape during a drag puts the cards back, and its release does nothing.
  window.addEventListener(
    "keydown",
    (event) => {
      if (event.key !== "Escape" || !cancelDrag) return;
      cancelDrag();
      cancelDrag = null;
      event.preventDefault();
      event.stopPropagation(); // not also a dialog's Escape
    },
    true,
  );
}

/** The card and every card after it in its column (what a move carries, R7); a reserve card alone (R5). */
function carriedBy(card: HTMLElement): HTMLElement[] {
  const carried = [card];
  if (!card.parentElement?.classList.contains("column")) return carried;
  let next = card.nextElementSibling;
  while (next instanceof HTMLElement) {
    carried.push(next);
    next = next.nextElementSibling;
  }
  return carried;
}

function attachGestures(table: HTMLElement, handlers: TableHandlers): void {
  let drag: Drag | null = null;
  let suppressClick = false;
  let cancelled: number | null = null; // the pointer of a drag Escape put back
  table.addEventListener("pointerdown", (event) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>(".card.up");
    if (!target || event.button !== 0) return;
    if (drag?.moved && drag.pointer !== event.pointerId) return; // a second finger while one drags: the drag goes on
    if (cancelled === event.pointerId) cancelled = null; // a new press: the cancelled drag's release is gone
    pressed = true;
    const threshold = event.pointerType === "touch" ? TOUCH_DRAG_THRESHOLD : DRAG_THRESHOLD;
    drag = { pointer: event.pointerId, card: target, carried: carriedBy(target), x: event.clientX, y: event.clientY, threshold, moved: false };
  });
  table.addEventListener("pointermove", (event) => {
    if (!drag || event.pointerId !== drag.pointer) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < drag.threshold) return;
    if (!drag.moved) {
      drag.moved = true;
      table.setPointerCapture(event.pointerId);
      for (const node of drag.carried) node.classList.add("dragging");
      const current = drag;
      cancelDrag = () => {
        if (drag !== current) return;
        cancelled = current.pointer;
        drag = null;
        springBack(current.carried);
      };
    }
    for (const node of drag.carried) node.style.transform = `translate(${dx}px, ${dy}px)`;
    event.preventDefault();
  });
  const finish = (event: PointerEvent) => {
    if (cancelled === event.pointerId) {
      // the release of a drag Escape cancelled: no move, and no click either
      cancelled = null;
      suppressClick = true;
      setTimeout(() => (suppressClick = false), 0);
      return;
    }
    if (!drag || event.pointerId !== drag.pointer) return;
    const current = drag;
    drag = null;
    cancelDrag = null;
    if (!current.moved) return; // a tap: the click handler moves it
    suppressClick = true;
    setTimeout(() => (suppressClick = false), 0);
    for (const node of current.carried) node.style.visibility = "hidden";
    const below = document.elementFromPoint(event.clientX, event.clientY);
    for (const node of current.carried) node.style.visibility = "";
    const column = below?.closest<HTMLElement>(".column");
    const to = column ? Number(column.dataset.column) : NaN;
    const card = current.card.dataset.card ?? "";
    if (event.type === "pointerup" && Number.isInteger(to) && to !== Number(current.card.dataset.column)) {
      lastDrag = current.carried;
      handlers.onMove(card, to);
    } else {
      springBack(current.carried);
    }
  };
  table.addEventListener("pointerup", finish);
  table.addEventListener("pointercancel", finish);
  table.addEventListener("click", (event) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>(".card.up");
    if (!target || suppressClick) return;
    handlers.onMove(target.dataset.card ?? "");
  });
}

/** Sends dragged cards back where they lie (a drop nowhere, or a refused move). */
export function springBack(nodes: HTMLElement[] = lastDrag): void {
  for (const node of nodes) {
    node.classList.add("returning");
    node.style.transform = "";
    node.addEventListener(
      "transitionend",
      () => node.classList.remove("returning", "dragging"),
      { once: true },
    );
    setTimeout(() => node.classList.remove("returning", "dragging"), 400);
  }
  lastDrag = [];
}

/** Shakes a card the server would not move (a tap with no destination). */
export function shake(card: string): void {
  const node = document.querySelector<HTMLElement>(`.card.up[data-card="${card}"]`);
  if (!node) return;
  node.classList.remove("rejected");
  void node.offsetWidth;
  node.classList.add("rejected");
}

/** Where each face-up card is on screen, to animate from after a redraw. */
export function cardPlaces(root: ParentNode): Map<string, DOMRect> {
  const places = new Map<string, DOMRect>();
  root.querySelectorAll<HTMLElement>(".card.up").forEach((node) => {
    if (!node.classList.contains("dragging")) places.set(node.dataset.card ?? "", node.getBoundingClientRect());
  });
  return places;
}

export function animateFrom(root: ParentNode, before: Map<string, DOMRect>): void {
  if (window.matchMedia?.("(prefers-reduced-motion: reduce)").matches) return;
  root.querySelectorAll<HTMLElement>(".card.up").forEach((node) => {
    const old = before.get(node.dataset.card ?? "");
    if (!old) return;
    const now = node.getBoundingClientRect();
    const dx = old.left - now.left;
    const dy = old.top - now.top;
    if (Math.abs(dx) < 1 && Math.abs(dy) < 1) return;
    node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: "none" }], {
      duration: 220,
      easing: "ease-out",
    });
  });
}
