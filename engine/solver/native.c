/*
 * The solver's search in C: the same search as engine/solver/search.py and
 * engine/solver/prune.py, step for step, about 20 times faster.
 *
 * Theory of operation
 * -------------------
 * This file is a translation, not a second design. Every function below names
 * the Python function it mirrors; the soundness arguments live in prune.py's
 * docstring and apply here unchanged. The search generates the same moves in
 * the same order, applies the same pruning rules, treats the same positions as
 * equal and counts nodes the same way, so on a node budget (no clock) both
 * searches give the same verdict, the same node count and the same winning
 * line: tests/engine/solver/test_native.py checks exactly that over many
 * deals and positions on every level. Python stays the reference.
 *
 * Cards are 0..51 (suit * 13 + rank - 1), as in engine/cards.py. Python loads
 * this file as a plain shared library with ctypes (engine/solver/native.py),
 * so building it needs a C compiler only, no Python headers:
 *     cc -O2 -shared -fPIC -o engine/solver/_native.so engine/solver/native.c
 * (`make native`; every make target builds it when it can).
 *
 * Memory: positions searched are kept as their canonical keys (a few dozen
 * bytes each) in one arena and an open-addressing table of offsets; the
 * caller bounds their number (max_positions), as in Python.
 */

#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_COLS 10
#define COL_CAP 64 /* a column never holds more than 52 cards */
#define RESERVE (-1)
#define DEAL_SRC (-2)
#define CLOCK_EVERY 256

/* Events of prune._events (see prune.py, rule 5). */
#define KING_PICK 52
#define REMOVAL 56
#define EMPTY_EVENT 60
#define APART 61
#define EVENTS (61 + 52)
#define WAITERS 64 /* at most 54 events wait on one event (48 "apart" ones) */

/* Results, as returned by scorpion_solve. */
#define RESULT_LOST 0
#define RESULT_WON 1
#define RESULT_UNKNOWN 2
#define RESULT_NO_MEMORY (-1)
#define RESULT_BAD_INPUT (-2)

typedef struct {
    int ncols;
    int len[MAX_COLS];
    int down[MAX_COLS];
    uint8_t cols[MAX_COLS][COL_CAP];
    int nstock;
    uint8_t stock[3];
    int nres;
    uint8_t reserve[3];
    int nfound;
    uint8_t found[4];
} State;

typedef struct {
    int8_t src, index, dst;
} Move;

/* engine.state's undo record: (kind, src, index, dst, count, flipped, removals). */
typedef struct {
    int8_t deal;
    int8_t src, index, dst, count, flipped;
    int8_t nrem;
    int8_t rem_col[4];
    int8_t rem_flipped[4];
} Record;

typedef struct {
    Record record;
    Move move;
    int8_t card; /* the card the move picked; -1 for the deal */
} Applied;

typedef struct {
    int kings_only;
    int any_suit;
    int prune;
} Rules;

/* ------------------------------------------------------------------ state */

static int is_king(int card) { return card % 13 == 12; }
static int is_ace(int card) { return card % 13 == 0; }
static int top_of(const State *s, int column) { return s->cols[column][s->len[column] - 1]; }

/* state._set_on_top */
static int set_on_top(const State *s, int column) {
    int len = s->len[column];
    if (len - s->down[column] < 13 || !is_ace(s->cols[column][len - 1])) return -1;
    int suit = s->cols[column][len - 1] / 13;
    const uint8_t *run = &s->cols[column][len - 13];
    for (int i = 0; i < 13; i++)
        if (run[i] != suit * 13 + 12 - i) return -1;
    return suit;
}

/* state._remove_sets */
static void remove_sets(State *s, int column, Record *r) {
    int suit = set_on_top(s, column);
    while (suit >= 0) {
        s->len[column] -= 13;
        s->found[s->nfound++] = (uint8_t)suit;
        int flipped = s->len[column] > 0 && s->down[column] == s->len[column];
        if (flipped) s->down[column]--;
        r->rem_col[r->nrem] = (int8_t)column;
        r->rem_flipped[r->nrem] = (int8_t)flipped;
        r->nrem++;
        suit = set_on_top(s, column);
    }
}

/* state.apply_move */
static void apply_move(State *s, int src, int index, int dst, Record *r) {
    memset(r, 0, sizeof *r);
    r->src = (int8_t)src;
    r->index = (int8_t)index;
    r->dst = (int8_t)dst;
    if (src < 0) {
        s->cols[dst][s->len[dst]++] = s->reserve[index];
        memmove(&s->reserve[index], &s->reserve[index + 1], (size_t)(s->nres - index - 1));
        s->nres--;
        r->count = 1;
    } else {
        int count = s->len[src] - index;
        memcpy(&s->cols[dst][s->len[dst]], &s->cols[src][index], (size_t)count);
        s->len[dst] += count;
        s->len[src] = index;
        r->count = (int8_t)count;
        if (index && s->down[src] == index) {
            s->down[src] = index - 1;
            r->flipped = 1;
        }
    }
    if (s->len[dst] >= 13 && is_ace(top_of(s, dst))) remove_sets(s, dst, r);
    if (src >= 0 && !r->flipped && index >= 13) remove_sets(s, src, r);
}

/* state.apply_deal */
static void apply_deal(State *s, Record *r) {
    memset(r, 0, sizeof *r);
    r->deal = 1;
    int count = s->nstock;
    for (int column = 0; column < count; column++)
        s->cols[column][s->len[column]++] = s->stock[column];
    s->nstock = 0;
    r->count = (int8_t)count;
    for (int column = 0; column < count; column++) remove_sets(s, column, r);
}

/* state.undo */
static void undo(State *s, const Record *r) {
    for (int i = r->nrem - 1; i >= 0; i--) {
        int column = r->rem_col[i];
        if (r->rem_flipped[i]) s->down[column]++;
        int suit = s->found[--s->nfound];
        for (int rank = 12; rank >= 0; rank--)
            s->cols[column][s->len[column]++] = (uint8_t)(suit * 13 + rank);
    }
    if (r->deal) {
        for (int column = 0; column < r->count; column++)
            s->stock[column] = s->cols[column][--s->len[column]];
        s->nstock = r->count;
        return;
    }
    int dst = r->dst;
    if (r->src < 0) {
        memmove(&s->reserve[r->index + 1], &s->reserve[r->index], (size_t)(s->nres - r->index));
        s->reserve[r->index] = s->cols[dst][--s->len[dst]];
        s->nres++;
        return;
    }
    int src = r->src;
    if (r->flipped) s->down[src]++;
    s->len[dst] -= r->count;
    memcpy(&s->cols[src][s->len[src]], &s->cols[dst][s->len[dst]], (size_t)r->count);
    s->len[src] += r->count;
}

/* ------------------------------------------------------------ position keys */

/* One column's part of a key: its face-down count, length and cards. */
static int column_cmp(const State *s, int a, int b) {
    if (s->down[a] != s->down[b]) return s->down[a] - s->down[b];
    int shorter = s->len[a] < s->len[b] ? s->len[a] : s->len[b];
    int c = memcmp(s->cols[a], s->cols[b], (size_t)shorter);
    if (c) return c;
    return s->len[a] - s->len[b];
}

/* prune.canonical_key (with ``canonical``) or State.key: equal keys for the same
 * positions as in Python. Columns that still receive a stock card keep their
 * place; the others are sorted when ``canonical``; so is the reserve. */
static int make_key(const State *s, int canonical, uint8_t *out) {
    int n = 0;
    int order[MAX_COLS];
    for (int i = 0; i < s->ncols; i++) order[i] = i;
    if (canonical) {
        for (int i = s->nstock + 1; i < s->ncols; i++) { /* insertion sort, few columns */
            int column = order[i], j = i;
            while (j > s->nstock && column_cmp(s, order[j - 1], column) > 0) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = column;
        }
    }
    out[n++] = (uint8_t)s->nstock;
    for (int i = 0; i < s->nstock; i++) out[n++] = s->stock[i];
    uint8_t reserve[3];
    memcpy(reserve, s->reserve, (size_t)s->nres);
    for (int i = 1; canonical && i < s->nres; i++) {
        for (int j = i; j > 0 && reserve[j - 1] > reserve[j]; j--) {
            uint8_t t = reserve[j];
            reserve[j] = reserve[j - 1];
            reserve[j - 1] = t;
        }
    }
    out[n++] = (uint8_t)s->nres;
    for (int i = 0; i < s->nres; i++) out[n++] = reserve[i];
    for (int i = 0; i < s->ncols; i++) {
        int column = order[i];
        out[n++] = (uint8_t)s->down[column];
        out[n++] = (uint8_t)s->len[column];
        memcpy(&out[n], s->cols[column], (size_t)s->len[column]);
        n += s->len[column];
    }
    return n;
}

#define KEY_CAP (8 + 3 + 3 + MAX_COLS * 2 + 52)

/* The positions searched: keys in an arena, an open-addressing table of offsets. */
typedef struct {
    uint64_t *slots; /* arena offset + 1, 0 when free */
    uint32_t *hashes;
    size_t cap, count;
    uint8_t *arena;
    size_t used, arena_cap;
} Seen;

static uint32_t hash_key(const uint8_t *key, int n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a final mix */
    for (int i = 0; i < n; i++) h = (h ^ key[i]) * 1099511628211ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return (uint32_t)h;
}

static int seen_init(Seen *t) {
    memset(t, 0, sizeof *t);
    t->cap = 1 << 12;
    t->slots = calloc(t->cap, sizeof *t->slots);
    t->hashes = calloc(t->cap, sizeof *t->hashes);
    t->arena_cap = 1 << 16;
    t->arena = malloc(t->arena_cap);
    return t->slots && t->hashes && t->arena;
}

static void seen_free(Seen *t) {
    free(t->slots);
    free(t->hashes);
    free(t->arena);
}

static int seen_grow(Seen *t) {
    size_t cap = t->cap * 2;
    uint64_t *slots = calloc(cap, sizeof *slots);
    uint32_t *hashes = calloc(cap, sizeof *hashes);
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return 0;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    free(t->slots);
    free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->cap = cap;
    return 1;
}

/* Add a key; 1 when new, 0 when already there, -1 when out of memory. */
static int seen_add(Seen *t, const uint8_t *key, int n) {
    uint32_t h = hash_key(key, n);
    size_t mask = t->cap - 1, i = h & mask;
    while (t->slots[i]) {
        if (t->hashes[i] == h) {
            const uint8_t *stored = t->arena + (t->slots[i] - 1);
            if (stored[0] == n && !memcmp(stored + 1, key, (size_t)n)) return 0;
        }
        i = (i + 1) & mask;
    }
    if (t->used + (size_t)n + 1 > t->arena_cap) {
        size_t cap = t->arena_cap * 2;
        uint8_t *arena = realloc(t->arena, cap);
        if (!arena) return -1;
        t->arena = arena;
        t->arena_cap = cap;
    }
    t->arena[t->used] = (uint8_t)n;
    memcpy(t->arena + t->used + 1, key, (size_t)n);
    t->slots[i] = t->used + 1;
    t->hashes[i] = h;
    t->used += (size_t)n + 1;
    t->count++;
    if (t->count * 2 > t->cap && !seen_grow(t)) return -1;
    return 1;
}

/* ------------------------------------------- prune: the derivation of rule 5 */

typedef struct {
    int16_t missing[EVENTS];
    uint8_t nwait[EVENTS];
    uint8_t waiting[EVENTS][WAITERS];
    uint8_t ready[EVENTS * 4];
    int nready;
    int suits;
    int empty;
    int overflow;
} Chain;

static void wait_on(Chain *c, int event, int waiter) {
    if (c->nwait[event] >= WAITERS) {
        c->overflow = 1; /* cannot happen (see WAITERS); the caller then prunes nothing */
        return;
    }
    c->waiting[event][c->nwait[event]++] = (uint8_t)waiter;
}

static int index_in(const State *s, int column, int card) {
    for (int i = 0; i < s->len[column]; i++)
        if (s->cols[column][i] == card) return i;
    return -1;
}

static int in_reserve(const State *s, int card) {
    for (int i = 0; i < s->nres; i++)
        if (s->reserve[i] == card) return 1;
    return 0;
}

/* prune._events */
static void events(const State *s, Chain *c) {
    int on[52], below[52], hidden[52], column_of[52];
    for (int i = 0; i < 52; i++) {
        on[i] = -1;
        below[i] = -2;
        hidden[i] = 0;
        column_of[i] = -1;
    }
    memset(c->missing, 0, sizeof c->missing);
    memset(c->nwait, 0, sizeof c->nwait);
    c->nready = 0;
    c->suits = 0;
    c->empty = 0;
    c->overflow = 0;
    for (int column = 0; column < s->ncols; column++) {
        const uint8_t *col = s->cols[column];
        int len = s->len[column];
        if (!len) {
            c->empty = 1;
            continue;
        }
        below[col[0]] = -1;
        for (int i = 0; i < len; i++) column_of[col[i]] = column;
        for (int i = 0; i < s->down[column]; i++) hidden[col[i]] = 1;
        for (int i = 1; i < len; i++) {
            on[col[i - 1]] = col[i];
            below[col[i]] = col[i - 1];
        }
    }
    c->missing[EMPTY_EVENT] = 1;
    for (int suit = 0; suit < 4; suit++) {
        int removed = 0;
        for (int i = 0; i < s->nfound; i++) removed |= s->found[i] == suit;
        if (removed) continue;
        c->suits++;
        int removal = REMOVAL + suit;
        int needs = 0;
        for (int card = suit * 13; card < suit * 13 + 12; card++) {
            int under = below[card];
            int count = 0;
            if (under != -2) {
                if (under == card + 1) {
                    if (hidden[card]) {
                        wait_on(c, on[card], removal);
                        needs++;
                    }
                    continue;
                }
                if (hidden[card]) {
                    wait_on(c, on[card], card);
                    count++;
                }
                int column = column_of[card];
                if (column_of[card + 1] == column) {
                    int start = index_in(s, column, card);
                    int end = index_in(s, column, card + 1);
                    if (end > start) {
                        int apart = APART + card;
                        c->missing[apart] = 1;
                        for (int i = start + 1; i <= end; i++)
                            wait_on(c, s->cols[column][i], apart);
                        wait_on(c, apart, card);
                        count++;
                    }
                }
                if (under == -1) wait_on(c, card, EMPTY_EVENT);
                wait_on(c, card, removal);
                needs++;
            } else if (in_reserve(s, card)) {
                wait_on(c, card, removal);
                needs++;
            }
            int covering = on[card + 1];
            if (covering >= 0) {
                wait_on(c, covering, card);
                count++;
            }
            c->missing[card] = (int16_t)count;
            if (!count) c->ready[c->nready++] = (uint8_t)card;
        }
        int king = suit * 13 + 12;
        int pick = KING_PICK + suit;
        c->missing[king] = 1;
        wait_on(c, pick, king);
        wait_on(c, removal, king);
        wait_on(c, removal, EMPTY_EVENT);
        int under = below[king];
        if (under >= 0 || in_reserve(s, king)) {
            wait_on(c, EMPTY_EVENT, pick);
            c->missing[pick] = 1;
            if (hidden[king]) {
                wait_on(c, on[king], pick);
                c->missing[pick] = 2;
            }
            if (under < 0) {
                wait_on(c, pick, removal);
                needs++;
            }
        }
        if (hidden[king]) {
            wait_on(c, on[king], removal);
            needs++;
        }
        c->missing[removal] = (int16_t)needs;
        if (!needs) c->ready[c->nready++] = (uint8_t)removal;
    }
}

/* prune._derive: forward chaining from ``ready`` (a stack, consumed). */
static void derive(const Chain *c, int16_t *missing, uint8_t *ready, int nready, uint8_t *derived) {
    while (nready) {
        int event = ready[--nready];
        if (derived[event]) continue;
        derived[event] = 1;
        for (int i = 0; i < c->nwait[event]; i++) {
            int waiter = c->waiting[event][i];
            if (!--missing[waiter]) ready[nready++] = (uint8_t)waiter;
        }
    }
}

/* Each event is pushed onto the ready stack at most once per decrement to zero,
 * and a counter reaches zero once per derivation, so EVENTS * 4 bounds it. */
#define READY_CAP (EVENTS * 4)

static int removals_derived(const uint8_t *derived) {
    int n = 0;
    for (int suit = 0; suit < 4; suit++) n += derived[REMOVAL + suit];
    return n;
}

/* prune.is_blocked */
static int is_blocked(const State *s) {
    Chain c;
    events(s, &c);
    if (c.overflow) return 0;
    if (c.empty) c.ready[c.nready++] = EMPTY_EVENT;
    uint8_t derived[EVENTS] = {0};
    derive(&c, c.missing, c.ready, c.nready, derived);
    return removals_derived(derived) < c.suits;
}

/* Derive the events of ``s`` into ``c`` and ``derived`` with no empty column
 * given; 1 when "a column is empty" is not derived (0 as well when the chain
 * could not be built, so that nothing is pruned). */
static int cannot_empty(const State *s, Chain *c, uint8_t *derived) {
    events(s, c);
    if (c->overflow) return 0;
    memset(derived, 0, EVENTS);
    derive(c, c->missing, c->ready, c->nready, derived);
    return !derived[EMPTY_EVENT];
}

/* prune.never_empties */
static int never_empties(const State *s) {
    int top[52] = {0};
    for (int column = 0; column < s->ncols; column++) {
        if (!s->len[column]) return 0;
        top[top_of(s, column)] = 1;
    }
    for (int column = 0; column < s->ncols; column++) {
        int bottom = s->cols[column][0];
        if (!s->down[column] && !is_king(bottom) && top[bottom + 1] &&
            top_of(s, column) != bottom + 1)
            return 0;
    }
    Chain c;
    uint8_t derived[EVENTS];
    return cannot_empty(s, &c, derived);
}

/* prune.fillings_that_never_empty: marks ``never[card]`` for the cards of
 * ``picks`` that would leave no column able to empty by taking the only
 * empty column. */
static void fillings_that_never_empty(const State *s, const int *picks, int npicks,
                                      uint8_t *never) {
    Chain c;
    uint8_t derived[EVENTS];
    if (!cannot_empty(s, &c, derived)) return;
    int below[52];
    for (int i = 0; i < 52; i++) below[i] = -1;
    for (int column = 0; column < s->ncols; column++)
        for (int i = 1; i < s->len[column]; i++) below[s->cols[column][i]] = s->cols[column][i - 1];
    for (int p = 0; p < npicks; p++) {
        int card = picks[p];
        int king = is_king(card);
        if (!king && below[card] == card + 1) continue;
        uint8_t after[EVENTS];
        int16_t left[EVENTS];
        uint8_t queue[READY_CAP];
        int nqueue = 0;
        memcpy(after, derived, sizeof after);
        memcpy(left, c.missing, sizeof left);
        after[card] = 1;
        int placement = king ? -1 : REMOVAL + card / 13;
        for (int i = 0; i < c.nwait[card]; i++) {
            int waiter = c.waiting[card][i];
            if (waiter == placement) {
                placement = -1;
                continue;
            }
            if (!--left[waiter]) queue[nqueue++] = (uint8_t)waiter;
        }
        derive(&c, left, queue, nqueue, after);
        if (!after[EMPTY_EVENT] && (king || left[card] > 0)) never[card] = 1;
    }
}

/* prune.kings_that_block: marks ``blocking[king]`` for the kings that would
 * make the position blocked by taking its only empty column. */
static void kings_that_block(const State *s, const int *kings, int nkings, uint8_t *blocking) {
    Chain c;
    uint8_t derived[EVENTS];
    if (!cannot_empty(s, &c, derived)) return;
    for (int k = 0; k < nkings; k++) {
        int king = kings[k];
        uint8_t after[EVENTS];
        int16_t left[EVENTS];
        uint8_t queue[READY_CAP];
        memcpy(after, derived, sizeof after);
        memcpy(left, c.missing, sizeof left);
        queue[0] = (uint8_t)king;
        queue[1] = (uint8_t)(KING_PICK + king / 13);
        derive(&c, left, queue, 2, after);
        if (removals_derived(after) < c.suits) blocking[king] = 1;
    }
}

/* --------------------------- prune: the derivation of rule 9 (any suit) */

/* Events of prune._any_suit_events: those of rule 5 (0..60), then 61 + x "some
 * card one rank above x is free for x", 113 + 4x + t "the card of suit t one rank
 * above x is free for x", 321 + 4x + t "that card, above x in x's column, has
 * left that column". Waiters are kept as linked lists of edges; the order in
 * which the derivation meets them does not change what it derives. */
#define FREE_ANY 61
#define FREE_ONE 113
#define APART_ONE 321
#define ANY_EVENTS (321 + 208)
#define ANY_EDGES 16384 /* at most 52 * 4 * 55 + 52 * 4 + 32 edges: never reached */

typedef struct {
    int16_t missing[ANY_EVENTS];
    int16_t head[ANY_EVENTS];
    int16_t next[ANY_EDGES];
    int16_t to[ANY_EDGES];
    int nedges;
    int16_t ready[ANY_EVENTS * 4];
    int nready;
    int suits;
    int overflow;
} AnyChain;

static void any_wait(AnyChain *c, int event, int waiter) {
    if (c->nedges >= ANY_EDGES) {
        c->overflow = 1; /* cannot happen (see ANY_EDGES); the caller then prunes nothing */
        return;
    }
    c->to[c->nedges] = (int16_t)waiter;
    c->next[c->nedges] = c->head[event];
    c->head[event] = (int16_t)c->nedges++;
}

static void any_ready(AnyChain *c, int event) {
    if (c->nready >= ANY_EVENTS * 4) {
        c->overflow = 1;
        return;
    }
    c->ready[c->nready++] = (int16_t)event;
}

typedef struct {
    int on[52], below[52], hidden[52], column_of[52], height[52], loose[52];
} Layout;

/* prune._free_hosts */
static void free_hosts(const State *s, int card, const Layout *l, AnyChain *c) {
    int free_event = FREE_ANY + card;
    c->missing[free_event] = 1;
    any_wait(c, free_event, card);
    for (int suit = 0; suit < 4; suit++) {
        int host = suit * 13 + card % 13 + 1;
        int removed = 0;
        for (int i = 0; i < s->nfound; i++) removed |= s->found[i] == suit;
        if (removed) continue;
        if (l->loose[host]) {
            any_ready(c, free_event);
            continue;
        }
        if (l->on[host] == card) continue;
        int one = FREE_ONE + 4 * card + suit;
        int count = 0;
        if (l->on[host] >= 0) {
            any_wait(c, l->on[host], one);
            count++;
        }
        int column = l->column_of[card];
        if (column >= 0 && l->column_of[host] == column && l->height[host] > l->height[card]) {
            int apart = APART_ONE + 4 * card + suit;
            c->missing[apart] = 1;
            for (int i = l->height[card] + 1; i <= l->height[host]; i++)
                any_wait(c, s->cols[column][i], apart);
            any_wait(c, apart, one);
            count++;
        }
        c->missing[one] = (int16_t)count;
        any_wait(c, one, free_event);
        if (!count) any_ready(c, one);
    }
}

/* prune._any_suit_events */
static void any_suit_events(const State *s, AnyChain *c, Layout *l) {
    for (int i = 0; i < 52; i++) {
        l->on[i] = -1;
        l->below[i] = -2;
        l->hidden[i] = 0;
        l->column_of[i] = -1;
        l->height[i] = -1;
        l->loose[i] = 0;
    }
    memset(c->missing, 0, sizeof c->missing);
    memset(c->head, -1, sizeof c->head);
    c->nedges = 0;
    c->nready = 0;
    c->suits = 0;
    c->overflow = 0;
    c->missing[EMPTY_EVENT] = 1;
    for (int column = 0; column < s->ncols; column++) {
        const uint8_t *col = s->cols[column];
        int len = s->len[column];
        if (!len) {
            any_ready(c, EMPTY_EVENT);
            continue;
        }
        l->below[col[0]] = -1;
        for (int i = 0; i < len; i++) {
            l->column_of[col[i]] = column;
            l->height[col[i]] = i;
        }
        for (int i = 0; i < s->down[column]; i++) l->hidden[col[i]] = 1;
        for (int i = 1; i < len; i++) {
            l->on[col[i - 1]] = col[i];
            l->below[col[i]] = col[i - 1];
        }
    }
    for (int i = 0; i < s->nstock; i++) l->loose[s->stock[i]] = 1;
    for (int i = 0; i < s->nres; i++) l->loose[s->reserve[i]] = 1;
    for (int suit = 0; suit < 4; suit++) {
        int removed = 0;
        for (int i = 0; i < s->nfound; i++) removed |= s->found[i] == suit;
        if (removed) continue;
        c->suits++;
        int removal = REMOVAL + suit;
        int needs = 0;
        for (int card = suit * 13; card < suit * 13 + 12; card++) {
            int under = l->below[card];
            int reserved = in_reserve(s, card);
            if (under == card + 1) {
                if (l->hidden[card]) {
                    any_wait(c, l->on[card], removal);
                    needs++;
                }
            } else if (under != -2 || reserved) {
                any_wait(c, card, removal);
                needs++;
            }
            if (under == -2 && !reserved) continue;
            int count = 1;
            if (l->hidden[card]) {
                any_wait(c, l->on[card], card);
                count++;
            }
            if (under == -1) any_wait(c, card, EMPTY_EVENT);
            c->missing[card] = (int16_t)count;
            free_hosts(s, card, l, c);
        }
        int king = suit * 13 + 12;
        int pick = KING_PICK + suit;
        c->missing[king] = 1;
        any_wait(c, pick, king);
        any_wait(c, removal, king);
        any_wait(c, removal, EMPTY_EVENT);
        int under = l->below[king];
        if (under >= 0 || in_reserve(s, king)) {
            any_wait(c, EMPTY_EVENT, pick);
            c->missing[pick] = 1;
            if (l->hidden[king]) {
                any_wait(c, l->on[king], pick);
                c->missing[pick] = 2;
            }
            if (under < 0) {
                any_wait(c, pick, removal);
                needs++;
            }
        }
        if (l->hidden[king]) {
            any_wait(c, l->on[king], removal);
            needs++;
        }
        c->missing[removal] = (int16_t)needs;
        if (!needs) any_ready(c, removal);
    }
}

/* prune.is_blocked_any_suit */
static int is_blocked_any_suit(const State *s) {
    AnyChain c;
    Layout l;
    any_suit_events(s, &c, &l);
    if (c.overflow) return 0;
    uint8_t derived[ANY_EVENTS] = {0};
    while (c.nready) {
        int event = c.ready[--c.nready];
        if (derived[event]) continue;
        derived[event] = 1;
        for (int e = c.head[event]; e >= 0; e = c.next[e]) {
            int waiter = c.to[e];
            if (!--c.missing[waiter]) any_ready(&c, waiter);
        }
    }
    return !c.overflow && removals_derived(derived) < c.suits;
}

/* ------------------------------------------------------- search: the moves */

/* search.ANY_SUIT_DEAL */
#define ANY_SUIT_DEAL (-10)

/* search._score */
static int score(const State *s, int src, int index, int empty_target) {
    if (src == RESERVE) return 20;
    int value = empty_target ? -30 : 10;
    if (!index) return empty_target ? -90 : value + 50;
    if (index == s->down[src]) value += 100;
    int card = s->cols[src][index];
    if (s->cols[src][index - 1] == card + 1 && !is_king(card)) value -= 60;
    return value;
}

/* search._settled: col[lowest..end] are king-rooted runs. */
static int settled(const State *s, int column, int lowest, int end) {
    const uint8_t *col = s->cols[column];
    if (!is_king(col[lowest])) return 0;
    for (int index = end; index > lowest; index--) {
        int card = col[index];
        if (!is_king(card) && col[index - 1] != card + 1) return 0;
    }
    return 1;
}

/* search._on_finished_run */
static int on_finished_run(const State *s, int src, int index) {
    const uint8_t *col = s->cols[src];
    int card = col[index];
    if (col[index - 1] != card + 1 || is_king(card)) return 0;
    int lowest = s->down[src];
    return lowest < index && settled(s, src, lowest, index - 1);
}

/* search._safe_build: a build onto the top of king-rooted runs, or 0. */
static int safe_build(const State *s, Move *out) {
    for (int dst = 0; dst < s->ncols; dst++) {
        int lowest = s->down[dst];
        int len = s->len[dst];
        if (len <= lowest || !is_king(s->cols[dst][lowest]) || is_ace(top_of(s, dst))) continue;
        if (!settled(s, dst, lowest, len - 1)) continue;
        int card = top_of(s, dst) - 1;
        int found = 0;
        for (int src = 0; src < s->ncols && !found; src++) {
            int index = index_in(s, src, card);
            if (index < 0) continue;
            found = 1;
            if (index >= s->down[src]) {
                *out = (Move){(int8_t)src, (int8_t)index, (int8_t)dst};
                return 1;
            }
        }
        if (!found) {
            for (int i = 0; i < s->nres; i++) {
                if (s->reserve[i] == card) {
                    *out = (Move){RESERVE, (int8_t)i, (int8_t)dst};
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* search._outside */
static int outside(const State *s, Move m) {
    int dealt_onto = s->nstock;
    return dealt_onto && m.src >= dealt_onto && m.dst >= dealt_onto;
}

typedef struct {
    int value;
    Move move;
} Scored;

/* The face-up cards in the order of search._column_of: columns in order, each
 * bottom to top, then the reserve. */
typedef struct {
    int n;
    int8_t src[52], index[52];
    uint8_t card[52];
    int8_t where[52]; /* the column of each face-up card, RESERVE, or -2 */
} FaceUp;

static void face_up(const State *s, FaceUp *f) {
    f->n = 0;
    memset(f->where, -2, sizeof f->where);
    for (int column = 0; column < s->ncols; column++) {
        for (int i = s->down[column]; i < s->len[column]; i++) {
            int card = s->cols[column][i];
            f->src[f->n] = (int8_t)column;
            f->index[f->n] = (int8_t)i;
            f->card[f->n++] = (uint8_t)card;
            f->where[card] = (int8_t)column;
        }
    }
    for (int i = 0; i < s->nres; i++) {
        f->src[f->n] = RESERVE;
        f->index[f->n] = (int8_t)i;
        f->card[f->n++] = s->reserve[i];
        f->where[s->reserve[i]] = RESERVE;
    }
}

static int column_index(const State *s, int src, int card) {
    if (src == RESERVE) {
        for (int i = 0; i < s->nres; i++)
            if (s->reserve[i] == card) return i;
        return -1;
    }
    return index_in(s, src, card);
}

/* The most moves one position can have: builds (4 per column), every card into
 * each empty column (all of them without pruning), and the deal. */
#define MOVES_CAP (MAX_COLS * 4 + 52 * MAX_COLS + 1)

/* search._ordered_moves: the moves worth searching, best LAST; returns how many. */
static int ordered_moves(const State *s, const Rules *rules, int deal, Move *out) {
    Scored scored[MOVES_CAP];
    int n = 0;
    FaceUp f;
    face_up(s, &f);
    for (int dst = 0; dst < s->ncols; dst++) { /* builds (R8) */
        if (!s->len[dst] || is_ace(top_of(s, dst))) continue;
        int top = top_of(s, dst);
        int nwanted = rules->any_suit ? 4 : 1;
        for (int w = 0; w < nwanted; w++) {
            int card = rules->any_suit ? w * 13 + top % 13 - 1 : top - 1;
            int src = f.where[card];
            if (src == -2 || src == dst) continue;
            int index = column_index(s, src, card);
            int value = score(s, src, index, 0);
            scored[n++] = (Scored){card == top - 1 ? value : value - 10,
                                   {(int8_t)src, (int8_t)index, (int8_t)dst}};
        }
    }
    /* search._empty_targets */
    int targets[MAX_COLS], ntargets = 0, nempty = 0, general_taken = 0;
    int special = s->nstock;
    for (int column = 0; column < s->ncols; column++) nempty += !s->len[column];
    for (int column = 0; column < s->ncols; column++) {
        if (s->len[column]) continue;
        if (rules->prune && nempty >= 2 && column >= special) {
            if (general_taken) continue;
            general_taken = 1;
        }
        targets[ntargets++] = column;
    }
    if (ntargets) { /* into empty columns (R9) */
        int dealt_onto = s->nstock;
        uint8_t blocking[52] = {0};
        int same_suit = !rules->any_suit;
        int keep_on_runs = rules->prune && !rules->kings_only && same_suit && !s->nstock;
        if (rules->prune && same_suit && nempty == 1) {
            int picks[52], npicks = 0;
            for (int i = 0; i < f.n; i++) {
                int card = f.card[i];
                if (rules->kings_only && !is_king(card)) continue;
                if (f.src[i] == RESERVE || s->cols[f.src[i]][0] != card) picks[npicks++] = card;
            }
            if (rules->kings_only) {
                if (npicks) kings_that_block(s, picks, npicks, blocking);
            } else {
                fillings_that_never_empty(s, picks, npicks, blocking);
            }
        }
        /* the sources, in the order of search._ordered_moves */
        int src_of[52], card_of[52], nsources = 0;
        if (rules->kings_only) {
            for (int i = 0; i < f.n; i++) {
                if (!is_king(f.card[i])) continue;
                src_of[nsources] = f.src[i];
                card_of[nsources++] = f.card[i];
            }
        } else {
            for (int i = 0; i < s->nres; i++) {
                src_of[nsources] = RESERVE;
                card_of[nsources++] = s->reserve[i];
            }
            for (int column = 0; column < s->ncols; column++) {
                int start = s->down[column] ? s->down[column] : (dealt_onto ? 0 : 1);
                for (int i = start; i < s->len[column]; i++) {
                    src_of[nsources] = column;
                    card_of[nsources++] = s->cols[column][i];
                }
            }
        }
        for (int k = 0; k < nsources; k++) {
            int src = src_of[k], card = card_of[k];
            int index = column_index(s, src, card);
            if (blocking[card] && (index || src == RESERVE)) continue; /* rules 5 and 8 */
            if (keep_on_runs && index && on_finished_run(s, src, index)) continue; /* rule 7 */
            int value = score(s, src, index, 1);
            for (int t = 0; t < ntargets; t++) {
                int dst = targets[t];
                if (!index && src >= dealt_onto && dst >= dealt_onto) continue;
                scored[n++] = (Scored){value, {(int8_t)src, (int8_t)index, (int8_t)dst}};
            }
        }
    }
    /* any-suit building: the deal among the moves, after the builds (search.ANY_SUIT_DEAL) */
    int deal_scored = rules->any_suit && s->nstock && deal;
    if (deal_scored) scored[n++] = (Scored){ANY_SUIT_DEAL, {DEAL_SRC, 0, 0}};
    /* Python's stable sort, best first */
    for (int i = 1; i < n; i++) {
        Scored item = scored[i];
        int j = i;
        while (j > 0 && scored[j - 1].value < item.value) {
            scored[j] = scored[j - 1];
            j--;
        }
        scored[j] = item;
    }
    int count = 0;
    if (s->nstock && deal && !deal_scored) out[count++] = (Move){DEAL_SRC, 0, 0};
    for (int i = n - 1; i >= 0; i--) out[count++] = scored[i].move;
    return count;
}

/* ------------------------------------------------------------- the search */

typedef struct {
    size_t move_base; /* this frame's moves are moves[move_base .. move_base + left) */
    int left;
    size_t applied_base; /* the step: what was applied to enter this frame */
} Frame;

typedef struct {
    State s;
    Rules rules;
    int deadlocks, emptying, closing, stranding;
    Seen seen;
    Applied *applied;
    size_t napplied, applied_cap;
    Move *moves;
    size_t moves_cap;
    Frame *frames;
    size_t nframes, frames_cap;
    int64_t nodes, max_nodes, max_positions;
    double deadline;
    int clock, exhausted, no_memory;
} Search;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int out_of_budget(const Search *x) {
    if (x->max_nodes >= 0 && x->nodes >= x->max_nodes) return 1;
    if ((int64_t)x->seen.count >= x->max_positions) return 1;
    return x->clock && x->nodes % CLOCK_EVERY == 0 && now() > x->deadline;
}

static int grow(void **array, size_t *cap, size_t need, size_t item) {
    if (need <= *cap) return 1;
    size_t cap2 = *cap ? *cap : 256;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(*array, cap2 * item);
    if (!p) return 0;
    *array = p;
    *cap = cap2;
    return 1;
}

/* search._Search._apply */
static int apply(Search *x, Move m) {
    if (!grow((void **)&x->applied, &x->applied_cap, x->napplied + 1, sizeof(Applied))) {
        x->no_memory = 1;
        return 0;
    }
    Applied *a = &x->applied[x->napplied++];
    a->move = m;
    if (m.src == DEAL_SRC) {
        a->card = -1;
        apply_deal(&x->s, &a->record);
    } else {
        a->card = (int8_t)(m.src == RESERVE ? x->s.reserve[m.index] : x->s.cols[m.src][m.index]);
        apply_move(&x->s, m.src, m.index, m.dst, &a->record);
    }
    return 1;
}

/* search._Search._take_back: undo everything applied since ``base``. */
static void take_back(Search *x, size_t base) {
    while (x->napplied > base) undo(&x->s, &x->applied[--x->napplied].record);
}

/* search._Search._remember: 1 when new, 0 when searched already. */
static int remember(Search *x) {
    uint8_t key[KEY_CAP];
    int n = make_key(&x->s, x->rules.prune, key);
    int added = seen_add(&x->seen, key, n);
    if (added < 0) x->no_memory = 1;
    return added > 0;
}

/* search._Search._play_builds */
static int play_builds(Search *x) {
    Move build;
    while (safe_build(&x->s, &build) && x->s.nfound < 4) {
        if (!apply(x, build) || !remember(x)) return 0;
    }
    return 1;
}

/* search._Search._enter */
static int enter(Search *x, Move m) {
    int dealt = m.src == DEAL_SRC;
    if (!apply(x, m)) return 0;
    if (x->s.nfound == 4) return 1;
    if (!remember(x)) return 0;
    if (x->closing && !x->s.nstock && !play_builds(x)) return 0;
    if (x->stranding) return !is_blocked_any_suit(&x->s);
    if (x->deadlocks) return !(dealt && is_blocked(&x->s));
    return !(x->emptying && dealt && never_empties(&x->s));
}

/* A frame for the position now reached, entered by what was applied since
 * ``applied_base``: the moves to try from it (only ``forced_move`` when ``forced``). */
static int push_frame(Search *x, size_t applied_base, int deal, int forced, Move forced_move) {
    if (!grow((void **)&x->frames, &x->frames_cap, x->nframes + 1, sizeof(Frame))) return 0;
    size_t base = 0;
    if (x->nframes) {
        const Frame *top = &x->frames[x->nframes - 1];
        base = top->move_base + (size_t)top->left;
    }
    if (!grow((void **)&x->moves, &x->moves_cap, base + MOVES_CAP, sizeof(Move))) return 0;
    Frame *f = &x->frames[x->nframes++];
    f->move_base = base;
    f->applied_base = applied_base;
    if (forced) {
        x->moves[base] = forced_move;
        f->left = 1;
    } else {
        f->left = ordered_moves(&x->s, &x->rules, deal, &x->moves[base]);
    }
    return 1;
}

/* search._Search.run: RESULT_WON (the line in x->applied), LOST or UNKNOWN. */
static int run(Search *x) {
    const Rules *r = &x->rules;
    x->deadlocks = r->prune && r->kings_only && !r->any_suit;
    x->emptying = r->prune && !r->kings_only && !r->any_suit;
    x->closing = r->prune && !r->any_suit;
    x->stranding = r->prune && r->kings_only && r->any_suit;
    if ((x->deadlocks && is_blocked(&x->s)) || (x->emptying && never_empties(&x->s)) ||
        (x->stranding && is_blocked_any_suit(&x->s)))
        return RESULT_LOST;
    remember(x);
    int closing_now = x->closing && !x->s.nstock;
    if (closing_now) play_builds(x);
    Move forced;
    int has_forced = closing_now && safe_build(&x->s, &forced);
    /* the root's frame: its own safe builds (applied from 0) belong to it */
    if (!push_frame(x, 0, 1, has_forced, forced)) return RESULT_NO_MEMORY;
    while (x->nframes) {
        if (x->no_memory) return RESULT_NO_MEMORY;
        if (x->s.nfound == 4) return RESULT_WON;
        Frame *f = &x->frames[x->nframes - 1];
        if (!f->left) {
            take_back(x, f->applied_base);
            x->nframes--;
            continue;
        }
        if (out_of_budget(x)) {
            x->exhausted = 1;
            return RESULT_UNKNOWN;
        }
        Move m = x->moves[f->move_base + (size_t)--f->left];
        size_t step = x->napplied;
        if (!enter(x, m)) {
            take_back(x, step);
            continue;
        }
        x->nodes++;
        if (!push_frame(x, step, !(r->prune && outside(&x->s, m)), 0, m)) return RESULT_NO_MEMORY;
    }
    return x->no_memory ? RESULT_NO_MEMORY : RESULT_LOST;
}

/* ------------------------------------------------------------------ the API */

static int read_cards(const int *position, int *p, int most, int *count, uint8_t *into,
                      int below) {
    *count = position[(*p)++];
    if (*count < 0 || *count > most) return 0;
    for (int i = 0; i < *count; i++) {
        int card = position[(*p)++];
        if (card < 0 || card >= below) return 0;
        into[i] = (uint8_t)card;
    }
    return 1;
}

/* The layout scorpion_solve describes; 0 when a count or card is out of range
 * (the caller's encoding is then wrong: nothing is searched). */
static int read_position(const int *position, State *s) {
    int p = 0;
    s->ncols = position[p++];
    if (s->ncols < 1 || s->ncols > MAX_COLS) return 0;
    for (int column = 0; column < s->ncols; column++) {
        s->down[column] = position[p++];
        if (!read_cards(position, &p, 52, &s->len[column], s->cols[column], 52)) return 0;
        if (s->down[column] < 0 || (s->len[column] && s->down[column] >= s->len[column]) ||
            (!s->len[column] && s->down[column]))
            return 0;
    }
    return read_cards(position, &p, 3, &s->nstock, s->stock, 52) &&
           read_cards(position, &p, 3, &s->nres, s->reserve, 52) &&
           read_cards(position, &p, 4, &s->nfound, s->found, 4);
}

/*
 * Decide a position. ``position`` is:
 *   ncols, then per column: down, length, cards...; nstock, stock...;
 *   nreserve, reserve...; nfound, found suits...
 * ``flags``: 1 kings only to empty columns, 2 any-suit building, 4 prune.
 * ``budget_s`` < 0 means no clock; ``max_nodes`` < 0 means no node limit.
 * Returns a RESULT_ code and sets ``*nodes``; when won, ``*line`` (free it with
 * scorpion_free) holds ``*line_len`` moves of four numbers each: source column
 * (-1 reserve, -2 the deal), index, destination column, card (-1 for the deal).
 */
int scorpion_solve(const int *position, int flags, double budget_s, int64_t max_nodes,
                   int64_t max_positions, int64_t *nodes, int **line, int *line_len) {
    Search *x = calloc(1, sizeof *x);
    if (!x) return RESULT_NO_MEMORY;
    *nodes = 0;
    *line = NULL;
    *line_len = 0;
    State *s = &x->s;
    if (!read_position(position, s)) {
        free(x);
        return RESULT_BAD_INPUT;
    }
    x->rules = (Rules){flags & 1, (flags & 2) != 0, (flags & 4) != 0};
    x->max_nodes = max_nodes;
    x->max_positions = max_positions;
    x->clock = budget_s >= 0;
    x->deadline = now() + budget_s;
    int result = seen_init(&x->seen) ? run(x) : RESULT_NO_MEMORY;
    *nodes = x->nodes;
    if (result == RESULT_WON) {
        int *out = malloc(sizeof(int) * 4 * (x->napplied ? x->napplied : 1));
        if (!out) {
            result = RESULT_NO_MEMORY;
        } else {
            for (size_t i = 0; i < x->napplied; i++) {
                const Applied *a = &x->applied[i];
                out[4 * i] = a->move.src;
                out[4 * i + 1] = a->move.index;
                out[4 * i + 2] = a->move.dst;
                out[4 * i + 3] = a->card;
            }
            *line = out;
            *line_len = (int)x->napplied;
        }
    }
    seen_free(&x->seen);
    free(x->applied);
    free(x->moves);
    free(x->frames);
    free(x);
    return result;
}

void scorpion_free(int *line) { free(line); }
