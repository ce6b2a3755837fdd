/**
 * One WebSocket to the server (PROTOCOL.md sections 1-2 and 10): binary frames,
 * one msgpack map each, subprotocol scorpion.v1. `request` sends a request and
 * resolves with its reply, matched by `re` (never by order); pushes go to
 * `onPush`. When the socket drops, every pending request is rejected with
 * `Disconnected` and the connection reopens with a growing delay (0.25 s up to
 * 4 s); `onOpen` runs on every (re)open, before anything else is sent, so the
 * caller can say hello and resync its game there. When `onOpen` fails the
 * socket is closed and the delay keeps growing: it starts over at 0.25 s only
 * after an `onOpen` that succeeded.
 *
 * An opening handshake that has not completed within `OPEN_TIMEOUT_MS` is given
 * up, and the socket opened anew with the growing delay: one opened while the
 * network was down would otherwise wait out the browser's own timeout
 * (Chromium's is 4 minutes), "Connecting…" long after the network is back.
 *
 * A request that has no reply within `REPLY_TIMEOUT_MS` means the connection is
 * not working (a reply lost as unreadable, a peer gone without a close): the
 * socket is dropped as if it had closed, so pending requests fail with
 * `Disconnected` and the connection reopens (and resyncs in `onOpen`). Long
 * before that, `waitingSince` lets the page say the server has not answered yet.
 *
 * An open connection that has sent nothing for `KEEPALIVE_MS` sends a `ping`,
 * so the server's idle timeout does not close it while a player thinks; a
 * server whose `welcome` says a shorter idle timeout (`keepAliveFor`) is pinged
 * after half of it.
 *
 * A connection can die without a close (a phone asleep, a network changed):
 * `check`, run when the page is shown again or the network comes back, pings
 * an open socket and drops it if no pong comes within `CHECK_TIMEOUT_MS`, and
 * opens anew at once a socket that is not open, rather than wait for the
 * growing delay or for a request's `REPLY_TIMEOUT_MS`. `lost`, when the
 * network goes, drops the socket at once: the page says the connection is
 * lost, and nothing is sent meanwhile to be delivered when it is back. A
 * request cut off by either fails with `Disconnected`, as at any drop: it is
 * never sent again (the reconnection's resync shows whether it was done).
 *
 * Every frame is checked where it enters (`src/checks.ts`): one that cannot be
 * read, or that breaks the protocol, is dropped and told to `onMalformed` once,
 * and the request it answers, when it names one, fails with that
 * `ProtocolError`; nothing else sees it.
 *
 * Request ids are strings unique across page loads (a random prefix and a
 * counter): the server recognises a retry by the id of the action at v + 1
 * (section 5), so an id from an earlier page must never come back.
 */
import { decode, encode } from "@msgpack/msgpack";
import { checkServerMessage, ProtocolError } from "./checks";
import type { ClientMessage, ServerMessage } from "./wire";

export const SUBPROTOCOL = "scorpion.v1";

/** How long an opening handshake may take before it is given up and tried again. */
export const OPEN_TIMEOUT_MS = 10_000;

/** How long a request waits for its reply before the connection is taken for broken. */
export const REPLY_TIMEOUT_MS = 30_000;

/** How long a `check`'s ping waits for its pong before the connection is taken for broken. */
export const CHECK_TIMEOUT_MS = 3000;

/**
 * How long an open connection may send nothing before it sends a `ping`: the
 * server closes one that sends nothing for its idle timeout (15 minutes by
 * default, PROTOCOL.md section 10), and a player may look at a board that long.
 */
export const KEEPALIVE_MS = 60_000;

/** The least time between pings, whatever idle timeout a server says. */
export const KEEPALIVE_LEAST_MS = 1000;

/**
 * The kinds the server limits requests by (PROTOCOL.md section 10): a
 * `rate_limited` reply's `retry_after_ms` holds every request of its kind.
 * Every other request is a read.
 */
const KINDS: Readonly<Record<string, string>> = {
  move: "action",
  deal: "action",
  undo: "action",
  restart: "action",
  resign: "action",
  new_game: "game",
  pause: "action",
  resume: "action",
  hint: "hint",
  register: "register",
  rotate_token: "register",
  sign_out: "register",
};

function kindOf(type: string): string {
  return KINDS[type] ?? "read";
}

export class Disconnected extends Error {
  constructor() {
    super("disconnected");
  }
}

type Pending = { resolve: (reply: ServerMessage) => void; reject: (error: Error) => void; type: string; sentAt: number };
export type Body = ClientMessage extends infer M ? (M extends unknown ? Omit<M, "id"> : never) : never;

export interface ConnectionHooks {
  onOpen: () => Promise<void>;
  onPush: (push: ServerMessage) => void;
  onState: (state: "connecting" | "open" | "closed") => void;
  /** The server closed the socket with `code` (PROTOCOL.md section 10), before it reopens. */
  onClosed?: (code: number) => void;
  /**
   * A frame dropped: `lostEvents` when it may have been an `events` push (one
   * that says so, or one that cannot be read), whose events are then missed.
   */
  onMalformed: (error: ProtocolError, lostEvents: boolean) => void;
}

export class Connection {
  private socket: WebSocket | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly prefix = Math.random().toString(36).slice(2, 10);
  private counter = 0;
  private delay = 250;
  /** The next attempt to open, after a drop. */
  private retry: ReturnType<typeof setTimeout> | undefined;
  private stopped = true;
  /** A `check`'s ping is on its way. */
  private checking = false;
  /**
   * A `check` came while a socket was still opening: should that opening fail
   * (begun while the network was gone, it fails as it comes back), the next is
   * opened at once, not after the growing delay.
   */
  private againAtOnce = false;
  private ready: Promise<void> = Promise.resolve();
  private lastSent = 0;
  private keepalive: ReturnType<typeof setInterval> | null = null;
  private keepaliveMs = KEEPALIVE_MS;
  private markReady: () => void = () => {};
  /**
   * Per kind, until when the server's last `rate_limited` asked to wait. A
   * request sent sooner is refused again, and is a strike against the address
   * (a player pressing on while told to wait gets it barred): it is answered
   * here instead, with what is left of the wait, and not sent.
   */
  private readonly heldUntil = new Map<string, number>();

  constructor(
    private readonly url: string,
    private readonly hooks: ConnectionHooks,
  ) {}

  start(): void {
    this.stopped = false;
    this.open();
    this.keepalive ??= setInterval(() => this.ping(), this.keepaliveMs / 4);
  }

  /**
   * The server closes a connection that sends nothing for `idleTimeoutMs` (its
   * `welcome`'s `limits`; 0: never): a ping goes after half of it, or after
   * KEEPALIVE_MS if that is sooner, never more often than KEEPALIVE_LEAST_MS.
   */
  keepAliveFor(idleTimeoutMs: number): void {
    const every = idleTimeoutMs > 0 ? Math.max(KEEPALIVE_LEAST_MS, Math.min(KEEPALIVE_MS, idleTimeoutMs / 2)) : KEEPALIVE_MS;
    if (every === this.keepaliveMs) return;
    this.keepaliveMs = every;
    if (this.keepalive === null) return; // stopped: `start` sets it going at this pace
    clearInterval(this.keepalive);
    this.keepalive = setInterval(() => this.ping(), every / 4);
  }

  /** A `ping` on an open connection that has sent nothing for `keepaliveMs`. */
  private ping(): void {
    if (this.socket?.readyState !== WebSocket.OPEN || Date.now() - this.lastSent < this.keepaliveMs) return;
    this.request({ type: "ping" }).catch(() => {});
  }

  /**
   * Checks the connection, which may have died unseen (the page was hidden,
   * the network came back): an open socket that does not answer a ping within
   * CHECK_TIMEOUT_MS is dropped and opened anew at once; one waiting to be
   * opened again is opened now. One opening is left to its handshake's timeout,
   * and should it fail, the next opening is at once.
   */
  check(): void {
    if (this.stopped || this.checking) return;
    const socket = this.socket;
    if (socket === null) return this.reopen(true);
    if (socket.readyState === WebSocket.CONNECTING) {
      this.againAtOnce = true;
      return;
    }
    // not while the server asks reads to wait: a ping refused `rate_limited` is a strike
    if (socket.readyState !== WebSocket.OPEN || (this.heldUntil.get("read") ?? 0) > Date.now()) return;
    this.checking = true; // one ping at a time: the page shown and the network back come together
    const timer = setTimeout(() => this.drop(socket, true), CHECK_TIMEOUT_MS);
    const answered = () => {
      clearTimeout(timer);
      this.checking = false;
    };
    this.send(socket, `${this.prefix}-${++this.counter}`, { type: "ping" }).then(answered, answered);
  }

  /** The network is gone: the socket is dropped now, not when a request times out. */
  lost(): void {
    if (this.socket !== null) this.drop(this.socket);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    if (this.keepalive !== null) clearInterval(this.keepalive);
    this.keepalive = null;
    const socket = this.socket;
    this.socket = null;
    this.failPending();
    socket?.close(1000);
  }

  /** Sends a request (after the open hook has run, unless `early`) and waits for its reply. */
  async request(body: Body, early = false): Promise<ServerMessage> {
    if (!early) await this.ready;
    const socket = this.socket;
    if (socket === null || socket.readyState !== WebSocket.OPEN) throw new Disconnected();
    const id = `${this.prefix}-${++this.counter}`;
    const kind = kindOf(body.type);
    const wait = (this.heldUntil.get(kind) ?? 0) - Date.now();
    if (wait > 0) {
      return { type: "error", re: id, code: "rate_limited", message: "Wait before asking again.", retry_after_ms: Math.ceil(wait) };
    }
    const reply = await this.send(socket, id, body);
    if (reply.type === "error" && reply.code === "rate_limited" && reply.retry_after_ms !== undefined) {
      this.heldUntil.set(kind, Date.now() + reply.retry_after_ms);
    }
    return reply;
  }

  private send(socket: WebSocket, id: string, body: Body): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.pending.has(id)) this.drop(socket);
      }, REPLY_TIMEOUT_MS);
      const settled = () => clearTimeout(timer);
      this.pending.set(id, {
        resolve: (reply) => (settled(), resolve(reply)),
        reject: (error) => (settled(), reject(error)),
        type: body.type,
        sentAt: performance.now(),
      });
      socket.send(encode({ ...body, id }));
      this.lastSent = Date.now();
    });
  }

  /**
   * When the oldest request still waiting for its reply was sent (`performance.now()`),
   * or null when none waits: the caller can say a silent server long before
   * REPLY_TIMEOUT_MS gives the connection up. The keepalive `ping` does not
   * count: the player asked for nothing.
   */
  waitingSince(): number | null {
    let oldest: number | null = null;
    for (const waiter of this.pending.values()) {
      if (waiter.type !== "ping" && (oldest === null || waiter.sentAt < oldest)) oldest = waiter.sentAt;
    }
    return oldest;
  }

  private open(): void {
    this.hooks.onState("connecting");
    const socket = new WebSocket(this.url, [SUBPROTOCOL]);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    let markReady: () => void = () => {};
    this.ready = new Promise((resolve) => (markReady = resolve));
    this.markReady = markReady;
    const handshake = setTimeout(() => this.drop(socket), OPEN_TIMEOUT_MS);
    socket.onopen = () => {
      clearTimeout(handshake);
      if (socket.protocol !== SUBPROTOCOL) {
        socket.close(1000);
        return;
      }
      this.lastSent = Date.now();
      this.hooks
        .onOpen()
        .then(() => {
          // the delay starts over only once the open hook is through (the hello
          // accepted): a server that takes the socket but refuses the hello is
          // not tried again four times a second
          this.delay = 250;
          this.againAtOnce = false;
          markReady();
          this.hooks.onState("open");
        })
        .catch(() => socket.close(1000));
    };
    socket.onmessage = (message) => {
      if (this.socket === socket) this.receive(message.data);
    };
    socket.onclose = (event) => {
      clearTimeout(handshake);
      markReady();
      if (this.socket === socket) this.hooks.onClosed?.(event.code);
      this.drop(socket);
    };
  }

  /** The socket is done with (closed, or taken for broken): fail what waits, open anew (`now`: at once). */
  private drop(socket: WebSocket, now = false): void {
    if (this.socket !== socket) return; // stopped, or replaced by a newer socket
    this.socket = null;
    this.markReady();
    this.failPending();
    socket.close(1000);
    this.hooks.onState("closed");
    if (!this.stopped) this.reopen(now);
  }

  /** Opens anew after the growing delay, or `now`. */
  private reopen(now: boolean): void {
    now ||= this.againAtOnce;
    this.againAtOnce = false;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.open(), now ? 0 : this.delay);
    if (!now) this.delay = Math.min(this.delay * 2, 4000);
  }

  private receive(data: unknown): void {
    let decoded: unknown;
    try {
      if (!(data instanceof ArrayBuffer)) throw new ProtocolError("frame", "is a text frame");
      decoded = decode(new Uint8Array(data));
    } catch (error) {
      const reason = error instanceof ProtocolError ? error : new ProtocolError("frame", `is not msgpack (${String(error)})`);
      this.hooks.onMalformed(reason, true);
      return;
    }
    let message: ServerMessage;
    try {
      message = checkServerMessage(decoded);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      const waiter = this.answered(decoded);
      waiter?.reject(error);
      this.hooks.onMalformed(error, !waiter && (decoded as { type?: unknown } | null)?.type === "events");
      return;
    }
    const waiter = this.answered(message);
    if (waiter) waiter.resolve(message);
    else this.hooks.onPush(message);
  }

  /** The request a message answers (by its `re`), taken from those waiting. */
  private answered(message: unknown): Pending | undefined {
    const re = typeof message === "object" && message !== null ? (message as { re?: unknown }).re : undefined;
    if (typeof re !== "string" && typeof re !== "number") return undefined;
    const waiter = this.pending.get(String(re));
    this.pending.delete(String(re));
    return waiter;
  }

  private failPending(): void {
    for (const waiter of this.pending.values()) waiter.reject(new Disconnected());
    this.pending.clear();
  }
}
