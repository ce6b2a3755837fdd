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

/*
 * Moments another tab must see at once. A tab's copy of localStorage takes in
 * another tab's change by a message of its own, which may come after the other
 * tab has released a Web Lock and this one been granted it (Chromium, under
 * load: seen in more than half of 300 hand-overs). A write to IndexedDB that has
 * completed is seen by every read begun after it, so what a tab marks here
 * before it releases a lock, the lock's next holder reads. A browser without
 * IndexedDB (refused, a private mode) marks nothing and reads nothing; no step
 * waits on IndexedDB longer than MARK_WAIT_MS, and once it has not answered in
 * that time, no later step of the page waits on it (`marksLate`) until it answers.
 */
const MARKS_DB = "scorpion";
const MARKS = "marks";
const MARK_WAIT_MS = 2000;
/** IndexedDB has let a step of this page wait MARK_WAIT_MS and not answered since: asked, not waited for. */
let marksLate = false;

/** Runs `use` on the object store of marks, or gives null (no IndexedDB, refused, or not done in time). */
function withMarks<T>(mode: IDBTransactionMode, use: (marks: IDBObjectStore) => IDBRequest<T>): Promise<T | null> {
  return new Promise((resolve) => {
    const done = (value: T | null) => {
      marksLate = false; // it answers
      clearTimeout(late);
      resolve(value);
    };
    const late = setTimeout(
      () => {
        marksLate = true;
        resolve(null);
      },
      marksLate ? 0 : MARK_WAIT_MS,
    );
    try {
      const opening = indexedDB.open(MARKS_DB, 1);
      opening.onupgradeneeded = () => opening.result.createObjectStore(MARKS);
      opening.onerror = () => done(null);
      opening.onsuccess = () => {
        const db = opening.result;
        try {
          const transaction = db.transaction(MARKS, mode);
          const request = use(transaction.objectStore(MARKS));
          // a write counts once committed, which is when another tab's read sees it
          transaction.oncomplete = () => (db.close(), done(request.result ?? null));
          transaction.onerror = transaction.onabort = () => (db.close(), done(null));
        } catch {
          db.close();
          done(null);
        }
      };
    } catch {
      done(null); // no IndexedDB here
    }
  });
}

/** Marks `key` as happening now, for every tab; resolves once another tab would read it. */
export async function mark(key: string): Promise<void> {
  await withMarks("readwrite", (marks) => marks.put(Date.now(), key));
}

/** When `key` was last marked (`Date.now()`), or null. */
export async function markedAt(key: string): Promise<number | null> {
  const at = await withMarks<unknown>("readonly", (marks) => marks.get(key));
  return typeof at === "number" ? at : null;
}

/** Forgets the mark of `key`. */
export async function unmark(key: string): Promise<void> {
  await withMarks("readwrite", (marks) => marks.delete(key));
}
