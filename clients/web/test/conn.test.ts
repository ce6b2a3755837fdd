import { decode, encode } from "@msgpack/msgpack";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ProtocolError } from "../src/checks";
import { CHECK_TIMEOUT_MS, Connection, Disconnected, KEEPALIVE_MS, OPEN_TIMEOUT_MS, REPLY_TIMEOUT_MS, SUBPROTOCOL } from "../src/conn";
import type { ServerMessage } from "../src/wire";
import { view } from "./fixtures";

/** A WebSocket the test plays the server of: `sent` holds what the page sent, `serve` delivers a frame. */
class FakeSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static last: FakeSocket | null = null;
  readonly protocol = SUBPROTOCOL;
  readyState = FakeSocket.OPEN;
  binaryType = "blob";
  sent: Record<string, unknown>[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((message: { data: unknown }) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;

  constructor() {
    FakeSocket.last = this;
  }

  send(frame: Uint8Array): void {
    this.sent.push(decode(frame) as Record<string, unknown>);
  }

  closed = false;

  close(): void {
    this.closed = true;
  }

  serve(message: unknown): void {
    const bytes = encode(message);
    this.onmessage?.({ data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
  }
}

interface Heard {
  pushes: ServerMessage[];
  malformed: [string, boolean][];
}

async function open(): Promise<{ conn: Connection; socket: FakeSocket; heard: Heard }> {
  const heard: Heard = { pushes: [], malformed: [] };
  const conn = new Connection("ws://test/", {
    onOpen: async () => {},
    onPush: (push) => heard.pushes.push(push),
    onState: () => {},
    onMalformed: (error, lostEvents) => heard.malformed.push([error.message, lostEvents]),
  });
  conn.start();
  const socket = FakeSocket.last as FakeSocket;
  socket.onopen?.();
  await Promise.resolve();
  return { conn, socket, heard };
}

beforeEach(() => vi.stubGlobal("WebSocket", FakeSocket));
afterEach(() => vi.unstubAllGlobals());

describe("Connection", () => {
  it("fails a request whose reply breaks the protocol, and says so once", async () => {
    const { conn, socket, heard } = await open();
    const reply = conn.request({ type: "open_game", game: 7 });
    await vi.waitFor(() => expect(socket.sent).toHaveLength(1));
    const re = socket.sent[0].id;
    socket.serve({ type: "game", re, game: 7, v: 0, view: { ...view(), score: "12" } });
    await expect(reply).rejects.toThrow(new ProtocolError("game.view.score", 'must be an integer in 0..2^53-1, got "12"'));
    expect(heard.malformed).toEqual([['game.view.score must be an integer in 0..2^53-1, got "12"', false]]);
    expect(heard.pushes).toEqual([]);
    conn.stop();
  });

  it("tells since when the oldest request has waited for its reply, a keepalive ping aside", async () => {
    const { conn, socket } = await open();
    expect(conn.waitingSince()).toBeNull();
    conn.request({ type: "ping" }).catch(() => {}); // failed by stop()
    await vi.waitFor(() => expect(socket.sent).toHaveLength(1));
    expect(conn.waitingSince()).toBeNull(); // the player asked for nothing
    const before = performance.now();
    const reply = conn.request({ type: "stats" });
    await vi.waitFor(() => expect(socket.sent).toHaveLength(2));
    expect(conn.waitingSince()).toBeGreaterThanOrEqual(before);
    socket.serve({ type: "stats", re: socket.sent[1].id, stats: [] });
    await reply;
    expect(conn.waitingSince()).toBeNull();
    conn.stop();
  });

  it("drops a push that breaks the protocol: its events are missed", async () => {
    const { conn, socket, heard } = await open();
    socket.serve({ type: "events", game: 7, v: "2", events: [] });
    expect(heard.pushes).toEqual([]);
    expect(heard.malformed).toEqual([['events.v must be an integer in 0..2^53-1, got "2"', true]]);
    socket.serve({ type: "events", game: 7, v: 2, events: [] });
    expect(heard.pushes).toEqual([{ type: "events", game: 7, v: 2, events: [] }]);
    conn.stop();
  });

  it("drops a frame it cannot read, instead of throwing", async () => {
    const { conn, socket, heard } = await open();
    socket.onmessage?.({ data: new Uint8Array([0xc1]).buffer });
    socket.onmessage?.({ data: new Uint8Array([0x81, 0x91, 0x01, 0x01]).buffer }); // an array as a map's key
    socket.onmessage?.({ data: "text" });
    socket.serve(42);
    expect(heard.pushes).toEqual([]);
    expect(heard.malformed.map(([text, lost]) => [text.split(" (")[0], lost])).toEqual([
      ["frame is not msgpack", true],
      ["frame is not msgpack", true],
      ["frame is a text frame", true],
      ["message must be a map, got 42", false],
    ]);
    conn.stop();
  });

  it("holds a kind the server asked to wait for, and does not send it until then", async () => {
    // a player pressing on while sign-ups were rate-limited sent each press, each a strike,
    // until the address was barred
    const { conn, socket } = await open();
    const first = conn.request({ type: "register", name: "ada" });
    await vi.waitFor(() => expect(socket.sent).toHaveLength(1));
    socket.serve({ type: "error", re: socket.sent[0].id, code: "rate_limited", message: "slow down", retry_after_ms: 60_000 });
    expect(await first).toMatchObject({ code: "rate_limited", retry_after_ms: 60_000 });
    const again = await conn.request({ type: "sign_out" }); // the same kind: held, not sent
    expect(again).toMatchObject({ type: "error", code: "rate_limited" });
    expect((again as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(59_000);
    expect(socket.sent).toHaveLength(1);
    const read = conn.request({ type: "ping" }); // another kind goes
    await vi.waitFor(() => expect(socket.sent).toHaveLength(2));
    socket.serve({ type: "pong", re: socket.sent[1].id });
    expect(await read).toMatchObject({ type: "pong" });
    conn.stop();
  });

  it("holds new games apart from moves: each is a kind of its own", async () => {
    const { conn, socket } = await open();
    const first = conn.request({ type: "new_game", level: "hard" });
    await vi.waitFor(() => expect(socket.sent).toHaveLength(1));
    socket.serve({ type: "error", re: socket.sent[0].id, code: "rate_limited", message: "slow down", retry_after_ms: 60_000 });
    expect(await first).toMatchObject({ code: "rate_limited" });
    const again = await conn.request({ type: "new_game", level: "hard" }); // held, not sent
    expect(again).toMatchObject({ type: "error", code: "rate_limited" });
    expect(socket.sent).toHaveLength(1);
    const move = conn.request({ type: "move", game: 1, v: 0, card: "7C" }); // an action goes
    await vi.waitFor(() => expect(socket.sent).toHaveLength(2));
    socket.serve({ type: "ack", re: socket.sent[1].id, game: 1, v: 1 });
    expect(await move).toMatchObject({ type: "ack" });
    conn.stop();
  });

  describe("a reply that never comes", () => {
    beforeEach(() => vi.useFakeTimers());
    afterEach(() => vi.useRealTimers());

    it("takes a connection whose reply never comes for broken, and opens it anew", async () => {
      const { conn, socket } = await open();
      const reply = conn.request({ type: "open_game", game: 7 });
      const failed = expect(reply).rejects.toThrow(Disconnected);
      await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS - 1);
      expect(socket.closed).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await failed;
      expect(socket.closed).toBe(true);
      await vi.advanceTimersByTimeAsync(250); // the first reconnect's delay
      expect(FakeSocket.last).not.toBe(socket);
      conn.stop();
    });

    it("leaves a connection whose replies come in time", async () => {
      const { conn, socket } = await open();
      const reply = conn.request({ type: "open_game", game: 7 });
      await vi.advanceTimersByTimeAsync(0);
      socket.serve({ type: "error", re: socket.sent[0].id, code: "not_found", message: "no game 7" });
      await reply;
      await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS * 2);
      expect(socket.closed).toBe(false);
      expect(FakeSocket.last).toBe(socket);
      conn.stop();
    });
  });

  describe("reconnecting", () => {
    beforeEach(() => vi.useFakeTimers());
    afterEach(() => vi.useRealTimers());

    it("checks a connection with one ping: one that answers is kept, one that does not is opened anew at once", async () => {
      const { conn, socket } = await open();
      const pings = () => socket.sent.filter((each) => each.type === "ping");
      conn.check();
      conn.check(); // the page shown and the network back at once: one ping
      expect(pings()).toHaveLength(1);
      socket.serve({ type: "pong", re: pings()[0].id });
      await vi.advanceTimersByTimeAsync(CHECK_TIMEOUT_MS * 2);
      expect(socket.closed).toBe(false);
      expect(FakeSocket.last).toBe(socket);
      // dead unseen: no pong, and a move waiting on it fails as at any drop, never sent again
      const move = conn.request({ type: "move", game: 1, v: 0, card: "QD" }).catch((error: unknown) => error);
      await vi.waitFor(() => expect(socket.sent.filter((each) => each.type === "move")).toHaveLength(1));
      conn.check();
      await vi.advanceTimersByTimeAsync(CHECK_TIMEOUT_MS - 1);
      expect(socket.closed).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(socket.closed).toBe(true);
      expect(await move).toBeInstanceOf(Disconnected);
      await vi.advanceTimersByTimeAsync(1); // at once: a timer's least delay
      const next = FakeSocket.last as FakeSocket;
      expect(next).not.toBe(socket);
      expect(next.sent).toEqual([]);
      conn.stop();
    });

    it("takes a connection for lost when the network goes, and opens it at once when a check finds none", async () => {
      const states: string[] = [];
      const conn = new Connection("ws://test/", { onOpen: async () => {}, onPush: () => {}, onState: (state) => states.push(state), onMalformed: () => {} });
      conn.start();
      const socket = FakeSocket.last as FakeSocket;
      socket.onopen?.();
      await vi.advanceTimersByTimeAsync(0);
      conn.lost();
      expect(socket.closed).toBe(true);
      expect(states.at(-1)).toBe("closed");
      await vi.advanceTimersByTimeAsync(250);
      const second = FakeSocket.last as FakeSocket;
      second.onclose?.({ code: 1006 } as CloseEvent); // the network still gone: the delay grows to 0.5 s
      await vi.advanceTimersByTimeAsync(100);
      expect(FakeSocket.last).toBe(second);
      conn.check(); // the network back: at once
      await vi.advanceTimersByTimeAsync(1);
      expect(FakeSocket.last).not.toBe(second);
      conn.stop();
    });

    it("opens at once after an opening that fails once the network is back, begun while it was gone", async () => {
      const conn = new Connection("ws://test/", { onOpen: async () => {}, onPush: () => {}, onState: () => {}, onMalformed: () => {} });
      conn.start();
      const first = FakeSocket.last as FakeSocket;
      first.readyState = FakeSocket.CONNECTING;
      conn.check(); // the network back while the socket opened without it is still opening
      await vi.advanceTimersByTimeAsync(100);
      expect(FakeSocket.last).toBe(first); // left to its handshake
      first.onclose?.({ code: 1006 } as CloseEvent);
      await vi.advanceTimersByTimeAsync(1); // not after the delay (0.25 s): at once
      const second = FakeSocket.last as FakeSocket;
      expect(second).not.toBe(first);
      // once only: a second failure waits for the growing delay again
      second.readyState = FakeSocket.CONNECTING;
      second.onclose?.({ code: 1006 } as CloseEvent);
      await vi.advanceTimersByTimeAsync(100);
      expect(FakeSocket.last).toBe(second);
      await vi.advanceTimersByTimeAsync(400);
      const third = FakeSocket.last as FakeSocket;
      expect(third).not.toBe(second);
      // a check while opening, then an opening that succeeds: a later drop waits for the delay
      third.readyState = FakeSocket.CONNECTING;
      conn.check();
      third.readyState = FakeSocket.OPEN;
      third.onopen?.();
      await vi.advanceTimersByTimeAsync(0);
      conn.lost();
      await vi.advanceTimersByTimeAsync(100);
      expect(FakeSocket.last).toBe(third);
      await vi.advanceTimersByTimeAsync(150);
      expect(FakeSocket.last).not.toBe(third);
      conn.stop();
    });

    it("pings a connection that has sent nothing for a minute, and only then", async () => {
      const { conn, socket } = await open();
      const pings = () => socket.sent.filter((each) => each.type === "ping");
      const second = 1000;
      await vi.advanceTimersByTimeAsync(30 * second);
      void conn.request({ type: "stats" });
      await vi.advanceTimersByTimeAsync(second);
      socket.serve({ type: "stats", re: socket.sent[0].id, stats: [] });
      await vi.advanceTimersByTimeAsync(44 * second); // 75 s: the stats request went 45 s ago
      expect(pings()).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(15 * second); // 90 s: a minute since
      expect(pings()).toHaveLength(1);
      socket.serve({ type: "pong", re: pings()[0].id });
      await vi.advanceTimersByTimeAsync(45 * second); // 135 s
      expect(pings()).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(15 * second); // 150 s
      expect(pings()).toHaveLength(2);
      socket.serve({ type: "pong", re: pings()[1].id });
      expect(FakeSocket.last).toBe(socket);
      conn.stop();
      await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 2);
      expect(pings()).toHaveLength(2);
    });

    it("pings after half the idle timeout a server says, when that is under two minutes", async () => {
      const { conn, socket } = await open();
      const pings = () => socket.sent.filter((each) => each.type === "ping");
      conn.keepAliveFor(10_000); // closed after 10 s of silence: a ping after 5 s
      await vi.advanceTimersByTimeAsync(4000);
      expect(pings()).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(2500);
      expect(pings()).toHaveLength(1);
      socket.serve({ type: "pong", re: pings()[0].id });
      conn.keepAliveFor(0); // never closed: back to a ping a minute
      await vi.advanceTimersByTimeAsync(30_000);
      expect(pings()).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(KEEPALIVE_MS);
      expect(pings()).toHaveLength(2);
      socket.serve({ type: "pong", re: pings()[1].id });
      conn.keepAliveFor(10); // a timeout no client can keep up with: a ping a second, no more
      await vi.advanceTimersByTimeAsync(1000);
      const before = pings().length;
      for (const ping of pings().slice(2)) socket.serve({ type: "pong", re: ping.id });
      await vi.advanceTimersByTimeAsync(3000);
      expect(pings().length - before).toBeLessThanOrEqual(3);
      conn.stop();
    });

    it("gives up an opening handshake that does not complete in time, and tries again with the growing delay", async () => {
      const states: string[] = [];
      const conn = new Connection("ws://test/", {
        onOpen: async () => {},
        onPush: () => {},
        onState: (state) => states.push(state),
        onMalformed: () => {},
      });
      conn.start();
      // the network is down: the handshakes go nowhere (a browser waits minutes on its own)
      const first = FakeSocket.last as FakeSocket;
      await vi.advanceTimersByTimeAsync(OPEN_TIMEOUT_MS - 1);
      expect(first.closed).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(first.closed).toBe(true);
      expect(states).toEqual(["connecting", "closed"]);
      await vi.advanceTimersByTimeAsync(250);
      const second = FakeSocket.last as FakeSocket;
      expect(second).not.toBe(first);
      await vi.advanceTimersByTimeAsync(OPEN_TIMEOUT_MS);
      expect(second.closed).toBe(true);
      await vi.advanceTimersByTimeAsync(499);
      expect(FakeSocket.last).toBe(second);
      await vi.advanceTimersByTimeAsync(1); // the delay grew
      const third = FakeSocket.last as FakeSocket;
      expect(third).not.toBe(second);
      // the network is back: a handshake that completes in time is kept
      third.onopen?.();
      await vi.advanceTimersByTimeAsync(OPEN_TIMEOUT_MS * 2);
      expect(third.closed).toBe(false);
      expect(FakeSocket.last).toBe(third);
      expect(states.at(-1)).toBe("open");
      // a late close of a socket given up does not drop the open one
      first.onclose?.({ code: 1006 } as CloseEvent);
      expect(FakeSocket.last).toBe(third);
      expect(states.at(-1)).toBe("open");
      conn.stop();
    });

    it("waits longer before each reconnect while the open hook keeps failing (a refused hello)", async () => {
      let opened = 0;
      const conn = new Connection("ws://test/", {
        onOpen: async () => {
          opened++;
          throw new Error("hello refused");
        },
        onPush: () => {},
        onState: () => {},
        onMalformed: () => {},
      });
      conn.start();
      const waits: number[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        const socket = FakeSocket.last as FakeSocket;
        socket.onopen?.();
        await vi.advanceTimersByTimeAsync(0);
        expect(socket.closed).toBe(true);
        socket.onclose?.({ code: 1006 } as CloseEvent);
        let waited = 0;
        while (FakeSocket.last === socket) {
          await vi.advanceTimersByTimeAsync(50);
          waited += 50;
        }
        waits.push(waited);
      }
      expect(opened).toBe(5);
      expect(waits).toEqual([250, 500, 1000, 2000, 4000]);
      conn.stop();
    });
  });
});
