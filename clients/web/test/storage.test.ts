import { afterEach, describe, expect, it, vi } from "vitest";
import { mark, markedAt, unmark } from "../src/storage";

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe("marks", () => {
  it("keep and read nothing, and never fail, where there is no IndexedDB", async () => {
    expect(typeof (globalThis as { indexedDB?: unknown }).indexedDB).toBe("undefined");
    await mark("registered");
    expect(await markedAt("registered")).toBeNull();
    await unmark("registered");
  });

  it("wait for an IndexedDB that never answers once in a page, not at every step", async () => {
    vi.useFakeTimers();
    vi.stubGlobal("indexedDB", { open: () => ({}) }); // opening never succeeds nor fails
    vi.resetModules();
    const marks = await import("../src/storage");
    let read: number | null | undefined;
    void marks.markedAt("registered").then((at) => (read = at));
    await vi.advanceTimersByTimeAsync(1999);
    expect(read).toBeUndefined(); // waited for
    await vi.advanceTimersByTimeAsync(1);
    expect(read).toBeNull();
    let marked = false;
    void marks.mark("registered").then(() => (marked = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(marked).toBe(true); // not waited for again
  });
});
