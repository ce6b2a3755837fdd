import type { View } from "../src/wire";

/** Hard deal 1's view at the deal, with `overrides`: the units' starting board. */
export function view(overrides: Partial<View> = {}): View {
  return {
    level: "hard",
    deal: 1,
    columns: [
      { down: 3, cards: ["AS", "4H", "TH", "8D"] },
      { down: 3, cards: ["AH", "AC", "8H", "QS"] },
      { down: 3, cards: ["3C", "4D", "2C", "6C"] },
      { down: 3, cards: ["4C", "7S", "JH", "3D"] },
      { down: 0, cards: ["5D", "5S", "9D", "5C", "3S", "7D", "8C"] },
      { down: 0, cards: ["7H", "AD", "QD", "TS", "TD", "6D", "TC"] },
      { down: 0, cards: ["7C", "QC", "JS", "QH", "4S", "8S", "6S"] },
    ],
    stock: 3,
    reserve: [],
    foundations: [],
    score: 0,
    moves: 0,
    undos: 0,
    hints: 0,
    time_ms: 0,
    running: false,
    undo_depth: 0,
    won: false,
    stuck: false,
    status: "active",
    scoring: "timed",
    earned: 0,
    ...overrides,
  };
}
