/**
 * What the page keeps in the browser (the token, the language, the level and
 * the kind of deal chosen): `localStorage`, read through these three. A
 * browser may refuse it (a private mode, storage switched off: every access
 * throws) or be out of room; then the values live in this page's memory alone,
 * so the page works the same and forgets them on the next load. What is read
 * is checked by the caller: it may be another version's data, or garbage.
 */
const memory = new Map<string, string | null>();

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** The value kept under `key`, or null. */
export function load(key: string): string | null {
  if (memory.has(key)) return memory.get(key) ?? null;
  try {
    return storage()?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

/**
 * The value kept under `key` as the browser has it now, another tab's change
 * included even before its `storage` event has come; or `load`'s when the
 * browser refuses storage.
 */
export function loadShared(key: string): string | null {
  try {
    const shared = storage();
    if (shared) return shared.getItem(key);
  } catch {
    // refused: this page's own
  }
  return load(key);
}

/** Keeps `value` under `key` (in memory at least). */
export function save(key: string, value: string): void {
  memory.set(key, value);
  try {
    storage()?.setItem(key, value);
  } catch {
    // refused or full: this page keeps it
  }
}

/** Forgets `key`. */
export function forget(key: string): void {
  memory.set(key, null);
  try {
    storage()?.removeItem(key);
  } catch {
    // refused: this page has forgotten it
  }
}

/**
 * Calls `changed` with the value (null: forgotten) whenever another page of
 * this origin (another tab) changes `key`; this page's own changes are not told
 * (browsers send the `storage` event to the other pages only). The value is the
 * one kept now, not the event's: events come late, and one tab's removal told
 * after another tab's newer value was kept would read as "forgotten". `cleared`:
 * the other page cleared the whole storage (`localStorage.clear()`), rather than
 * change or forget this key.
 */
export function watchKey(key: string, changed: (value: string | null, cleared: boolean) => void): void {
  window.addEventListener("storage", (event) => {
    if (event.storageArea !== storage() || (event.key !== key && event.key !== null)) return;
    memory.delete(key); // read what the browser keeps now
    const value = loadShared(key);
    memory.set(key, value);
    changed(value, event.key === null);
  });
}
