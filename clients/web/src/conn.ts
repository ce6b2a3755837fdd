/**
 * One WebSocket to the server (PROTOCOL.md sections 1-2 and 10): binary frames,
 * one msgpack map each, subprotocol scorpion.v1. `request` sends a request and
 * resolves with its reply, matched by `re` (never by order); pushes go to
 * `onPush`. When the socket drops, every pending request is rejected with
 * `Disconnected` and the connection reopens with a growing delay (0.25 s up to
 * 4 s); `onOpen` runs on every (re)open, before anything else is sent, so the
 * caller can say hello and resync its game there.
 *
 * Request ids are strings unique across page loads (a random prefix and a
 * counter): the server recognises a retry by the id of the action at v + 1
 * (section 5), so an id from an earlier page must never come back.
 */
import { decode, encode } from "@msgpack/msgpack";
import type { ClientMessage, ServerMessage } from "./wire";

export const SUBPROTOCOL = "scorpion.v1";

export class Disconnected extends Error {
  constructor() {
    super("disconnected");
  }
}

type Pending = { resolve: (reply: ServerMessage) => void; reject: (error: Error) => void };
type Body = ClientMessage extends infer M ? (M extends unknown ? Omit<M, "id"> : never) : never;

export interface ConnectionHooks {
  onOpen: () => Promise<void>;
  onPush: (push: ServerMessage) => void;
  onState: (state: "connecting" | "open" | "closed") => void;
}

export class Connection {
  private socket: WebSocket | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly prefix = Math.random().toString(36).slice(2, 10);
  private counter = 0;
  private delay = 250;
  private stopped = false;
  private ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly hooks: ConnectionHooks,
  ) {}

  start(): void {
    this.stopped = false;
    this.open();
  }

  stop(): void {
    this.stopped = true;
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
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.send(encode({ ...body, id }));
    });
  }

  private open(): void {
    this.hooks.onState("connecting");
    const socket = new WebSocket(this.url, [SUBPROTOCOL]);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    let markReady: () => void = () => {};
    this.ready = new Promise((resolve) => (markReady = resolve));
    socket.onopen = () => {
      if (socket.protocol !== SUBPROTOCOL) {
        socket.close(1000);
        return;
      }
      this.delay = 250;
      this.hooks
        .onOpen()
        .then(() => {
          markReady();
          this.hooks.onState("open");
        })
        .catch(() => socket.close(1000));
    };
    socket.onmessage = (message) => {
      if (this.socket === socket) this.receive(message.data);
    };
    socket.onclose = () => {
      markReady();
      if (this.socket !== socket) return; // stopped, or replaced by a newer socket
      this.socket = null;
      this.failPending();
      this.hooks.onState("closed");
      if (!this.stopped) {
        setTimeout(() => this.open(), this.delay);
        this.delay = Math.min(this.delay * 2, 4000);
      }
    };
  }

  private receive(data: unknown): void {
    if (!(data instanceof ArrayBuffer)) return;
    const message = decode(new Uint8Array(data)) as ServerMessage;
    const re = "re" in message ? message.re : undefined;
    if (re !== undefined && this.pending.has(String(re))) {
      const waiter = this.pending.get(String(re));
      this.pending.delete(String(re));
      waiter?.resolve(message);
      return;
    }
    this.hooks.onPush(message);
  }

  private failPending(): void {
    for (const waiter of this.pending.values()) waiter.reject(new Disconnected());
    this.pending.clear();
  }
}
