import { describe, expect, it } from "vitest";
import { columnKey, shortcutLetter } from "../src/keys";

describe("the game's shortcuts on any keyboard layout", () => {
  it("reads the letter typed on a Latin layout, as before", () => {
    expect(shortcutLetter({ key: "d", code: "KeyD" })).toBe("d");
    expect(shortcutLetter({ key: "U", code: "KeyU" })).toBe("u"); // shift or caps lock
    expect(shortcutLetter({ key: "d", code: "KeyH" })).toBe("d"); // Dvorak: the key marked D
    expect(shortcutLetter({ key: "h", code: "KeyJ" })).toBe("h");
  });

  it("reads the physical key on a layout of another alphabet", () => {
    // Russian ЙЦУКЕН: D, U, H and P type в, г, р and з
    expect(shortcutLetter({ key: "в", code: "KeyD" })).toBe("d");
    expect(shortcutLetter({ key: "г", code: "KeyU" })).toBe("u");
    expect(shortcutLetter({ key: "р", code: "KeyH" })).toBe("h");
    expect(shortcutLetter({ key: "З", code: "KeyP" })).toBe("p");
  });

  it("is no letter for other keys", () => {
    expect(shortcutLetter({ key: "Enter", code: "Enter" })).toBeNull();
    expect(shortcutLetter({ key: "1", code: "Digit1" })).toBeNull();
    expect(shortcutLetter({ key: "ArrowLeft", code: "ArrowLeft" })).toBeNull();
    expect(shortcutLetter({ key: "Shift", code: "ShiftLeft" })).toBeNull();
  });

  it("reads a column's number from the digit typed or the digit key", () => {
    expect(columnKey({ key: "1", code: "Digit1" })).toBe(1);
    expect(columnKey({ key: "9", code: "Numpad9" })).toBe(9);
    expect(columnKey({ key: "0", code: "Digit0" })).toBe(10);
    expect(columnKey({ key: "&", code: "Digit1" })).toBe(1); // AZERTY, unshifted
    expect(columnKey({ key: "d", code: "KeyD" })).toBeNull();
    expect(columnKey({ key: "Enter", code: "NumpadEnter" })).toBeNull();
  });

  it("is no column for the numpad's keys with NumLock off: arrows, End, Home, Clear", () => {
    expect(columnKey({ key: "ArrowDown", code: "Numpad2" })).toBeNull();
    expect(columnKey({ key: "ArrowLeft", code: "Numpad4" })).toBeNull();
    expect(columnKey({ key: "End", code: "Numpad1" })).toBeNull();
    expect(columnKey({ key: "Home", code: "Numpad7" })).toBeNull();
    expect(columnKey({ key: "Clear", code: "Numpad5" })).toBeNull();
    expect(columnKey({ key: "Insert", code: "Numpad0" })).toBeNull();
  });
});
