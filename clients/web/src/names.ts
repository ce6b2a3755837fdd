/**
 * A player's name as the server takes it, checked before `register` is sent:
 * a name the server refuses is answered `bad_request`, which the server counts
 * as a strike against the address (PROTOCOL.md section 10: a correct client
 * earns none), so the page says what is wrong and sends nothing.
 *
 * The rule is PROTOCOL.md's (the `register` request, and section 13): the
 * name is a "printable string of 1..32 chars", `str.isprintable()`: no
 * control, format or separator characters but the space (no character of
 * Unicode's categories C* and Z* but U+0020), counted in code points as Python
 * counts them, not in UTF-16 units; the server stores it "trimmed of leading
 * and trailing space and in Unicode NFC", and it compares names in their
 * NFKC case fold, which may be at most 128 characters long (the server's
 * `check_name`: a name of 32 such ligatures as U+FDFA, 18 letters each, is
 * refused). No character of it may show as nothing: Unicode's default
 * ignorable code points and the blank ones (`INVISIBLE`). The page sends the
 * name trimmed and in NFC, so the server's own trimming and normalising change
 * nothing, and checks that.
 *
 * What this cannot know is the Unicode version of the server's Python: a
 * character assigned after it (new in Unicode 15, say, for a server on Python
 * 3.11, which has Unicode 14) is printable here and not there. Such a name is
 * sent once, refused and said; the page does not send it again.
 */

export const MAX_NAME_CHARS = 32;
/** The longest a name's compared form (NFKC case fold) may be, in characters. */
export const MAX_NAME_KEY_CHARS = 128;

/** Why a name cannot be sent: nothing left once trimmed, more than 32 characters, a character no name may have, or a compared form over 128 (ligatures spelled out). */
export type NameProblem = { problem: "empty" } | { problem: "long"; chars: number } | { problem: "chars" } | { problem: "spelled" };

/** What `register` sends, or why nothing is sent. */
export type CheckedName = { name: string } | NameProblem;

/** Python's non-printable characters: Unicode's "Other" (Cc, Cf, Cs, Co, Cn) and "Separator" (Zs, Zl, Zp) but the space. */
const NOT_PRINTABLE = /(?! )[\p{C}\p{Z}]/u;

/**
 * Printable characters a name may not have, as the server's `protocol/names.py`
 * lists them: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt
 * of Unicode 14.0, the same in 17.0; spelled out, so that no browser's own
 * Unicode version changes it), then the blank Hangul fillers and U+2800 BRAILLE
 * PATTERN BLANK.
 */
const INVISIBLE =
  /[\u00AD\u034F\u061C\u115F-\u1160\u17B4-\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}\u115F\u1160\u3164\uFFA0\u2800]/u;

/**
 * A variation selector that changes the visible character before it, as the
 * server's `_VARIANT`: right after a character past U+052F (beyond the Latin,
 * Greek and Cyrillic letters: an emoji, a kanji, a Mongolian letter) that is
 * not itself invisible, or in a keycap ("1\uFE0F\u20E3"). "Anna ❤️" is a name;
 * "admin\uFE0F" would be a second "admin".
 */
const VARIANT =
  /(?<=[^\u0000-\u052F\u00AD\u034F\u061C\u115F-\u1160\u17B4-\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}\u2800])[\u180B-\u180D\u180F\uFE00-\uFE0F\u{E0100}-\u{E01EF}]|(?<=[0-9#*])\uFE0F(?=\u20E3)/gu;

/** Whether `text` has a character that shows as nothing (`INVISIBLE`), a variation selector that changes the character before it (`VARIANT`) aside. */
export function hasInvisible(text: string): boolean {
  return INVISIBLE.test(text.replace(VARIANT, ""));
}

/** `str.isprintable()`: every character printable (the empty string is). */
export function isPrintable(text: string): boolean {
  return !NOT_PRINTABLE.test(text);
}

/** How Python counts a string's length: in code points. */
export function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * The form the server compares names in: NFKC, case folded, NFKC again. The
 * page has no case folding; lower, upper then lower case gives a string of
 * the same length for every character (ß and ẞ fold to ss, ŉ to ʼn), and only
 * the length is checked here.
 */
export function nameKey(name: string): string {
  return name.normalize("NFKC").toLowerCase().toUpperCase().toLowerCase().normalize("NFKC");
}

/** The name to send for what was typed, or why none is sent. */
export function checkName(typed: string): CheckedName {
  const name = typed.trim().normalize("NFC").trim();
  if (name === "") return { problem: "empty" };
  const chars = codePoints(name);
  if (chars > MAX_NAME_CHARS) return { problem: "long", chars };
  if (!isPrintable(name) || hasInvisible(name)) return { problem: "chars" };
  if (codePoints(nameKey(name)) > MAX_NAME_KEY_CHARS) return { problem: "spelled" };
  return { name };
}
