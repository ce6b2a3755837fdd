/**
 * The game's keyboard shortcuts, read from a key press on any keyboard layout.
 *
 * A letter is the one the key types when it types a Latin letter (so on any
 * Latin layout, Dvorak's included, D is the key marked D); on a layout that
 * types other letters (Russian: the key of D types "в") it is the physical
 * key's, `event.code` (`KeyD`), so the same keys work there too. A column's
 * number is likewise the digit typed, else the digit key pressed (`Digit1`,
 * `Numpad1`: AZERTY types "&" there unshifted).
 */

/** What the shortcuts look at in a key press. */
export type KeyPress = Pick<KeyboardEvent, "key" | "code">;

/** The shortcut letter of a key press, in lower case ("d"), or null when it is no letter. */
export function shortcutLetter(press: KeyPress): string | null {
  if (/^[a-z]$/i.test(press.key)) return press.key.toLowerCase();
  const physical = /^Key([A-Z])$/.exec(press.code);
  // a key that types a letter of another alphabet (or nothing of its own: a dead key)
  if (physical && (press.key.length === 1 || press.key === "Dead") && !/^[0-9]$/.test(press.key)) {
    return physical[1].toLowerCase();
  }
  return null;
}

/**
 * The column a digit key names (1-9, and 0 for 10), or null when it is no digit.
 * A digit key that types no character of its own is none: the numpad with
 * NumLock off gives arrows, End or Home on `Numpad2`, `Numpad1`, `Numpad7`.
 */
export function columnKey(press: KeyPress): number | null {
  const printing = press.key.length === 1 || press.key === "Dead";
  const physical = printing ? /^(?:Digit|Numpad)([0-9])$/.exec(press.code)?.[1] : undefined;
  const typed = /^[0-9]$/.test(press.key) ? press.key : physical;
  if (typed === undefined) return null;
  return typed === "0" ? 10 : Number(typed);
}
