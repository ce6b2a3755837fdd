import { describe, expect, it } from "vitest";
import { mark, markedAt, unmark } from "../src/storage";

describe("marks", () => {
  it("keep and read nothing, and never fail, where there is no IndexedDB", async () => {
    expect(typeof (globalThis as { indexedDB?: unknown }).indexedDB).toBe("undefined");
    await mark("registered");
    expect(await markedAt("registered")).toBeNull();
    await unmark("registered");
  });
});
