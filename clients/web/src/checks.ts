/**
 * What the server sends, checked where it enters the client (`src/conn.ts`),
 * against protocol/schema.json, the schema `src/wire.ts` is generated from.
 * It is read the way PROTOCOL.md section 2 asks a client to read: leniently. A
 * field, an event type, a message type or an error code this client does not
 * know is let through (a later version-1 server may send them, section 11); a
 * declared field that is missing or of the wrong type, range, length or
 * pattern is not. The error is a `ProtocolError` naming the field as the
 * terminal client does (`game.view.columns[0].down must be ...`).
 *
 * On top of the schema's types the counts the page draws and loops over are
 * bounded, so that no message can make it build a huge column or run through
 * a huge count: no count may pass `MAX_CARDS`. So a column holds at most that
 * many cards (face down and face up), a table (a view, a `restarted` event)
 * at most that many in its columns, stock and reserve, in at most that many
 * columns, and a move or an undone deal moves at most that many.
 */
import schema from "../../../protocol/schema.json";
import type { Column, ServerMessage } from "./wire";

/** The part of JSON Schema protocol/schema.json uses. */
interface Schema {
  $ref?: string;
  type?: "object" | "array" | "integer" | "number" | "string" | "boolean" | "null";
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  /** A tagged union (options that are `$ref`s told apart by their `type`), or a set of codes. */
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
}

const DEFS = (schema as unknown as { $defs: Record<string, Schema> }).$defs;

/**
 * A bound on the cards one message may count, the terminal client's: every
 * level deals one pack of 52, and twice that leaves room for a later level with two.
 */
export const MAX_CARDS = 104;

/** Count fields (by definition) that the schema leaves open, bounded by MAX_CARDS. */
const CEILINGS: Record<string, string[]> = {
  column: ["down"],
  view: ["stock"],
  "event-restarted": ["stock"],
  "event-moved": ["count"],
  "event-undealt": ["count"],
};

type Fields = Record<string, unknown>;

/** A server message that breaks the protocol: `path` names the field, `problem` what is wrong with it. */
export class ProtocolError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path} ${problem}`);
    this.name = "ProtocolError";
  }
}

/** A short, safe rendering of the server's value for an error message. */
function show(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "boolean") return "a boolean";
  if (value instanceof Uint8Array) return "binary data";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "a map";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return text.length <= 40 ? text : text.slice(0, 37) + "...";
}

function isMap(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** The message, typed, when it keeps to the protocol; throws ProtocolError otherwise. */
export function checkServerMessage(message: unknown): ServerMessage {
  if (!isMap(message)) throw new ProtocolError("message", `must be a map, got ${show(message)}`);
  if (typeof message.type !== "string") throw new ProtocolError("type", `must be a string, got ${show(message.type)}`);
  check({ $ref: "#/$defs/server_message" }, message, message.type);
  return message as unknown as ServerMessage;
}

function check(kind: Schema, value: unknown, path: string): void {
  if (kind.$ref !== undefined) {
    const name = kind.$ref.slice("#/$defs/".length);
    check(DEFS[name], value, path);
    bound(name, value as Fields, path);
  } else if (kind.oneOf !== undefined) {
    checkOneOf(kind.oneOf, value, path);
  } else if (kind.anyOf !== undefined) {
    const failures: ProtocolError[] = [];
    if (!kind.anyOf.some((option) => fits(option, value, path, failures))) {
      // a map or nil given a map that is wrong inside: what is wrong inside it (a name too long),
      // not that it is no map
      const inside = isMap(value) || Array.isArray(value);
      const alike = kind.anyOf.flatMap((option, index) => (sameKind(option, value) ? [failures[index]] : []));
      if (inside && alike.length === 1) throw alike[0];
      throw new ProtocolError(path, `must be ${kind.anyOf.map(describe).join(" or ")}, got ${show(value)}`);
    }
  } else if (kind.const !== undefined || kind.enum !== undefined) {
    const choices = kind.enum ?? [kind.const];
    if (!choices.includes(value)) throw new ProtocolError(path, `must be ${describe(kind)}, got ${show(value)}`);
  } else if (kind.type === "object") {
    checkMap(kind, value, path);
  } else if (kind.type === "array") {
    if (!Array.isArray(value)) throw new ProtocolError(path, `must be an array, got ${show(value)}`);
    if (kind.items !== undefined) value.forEach((item, index) => check(kind.items as Schema, item, `${path}[${index}]`));
  } else if (!fitsScalar(kind, value)) {
    throw new ProtocolError(path, `must be ${describe(kind)}, got ${show(value)}`);
  }
}

function fits(kind: Schema, value: unknown, path: string, failures: ProtocolError[]): boolean {
  try {
    check(kind, value, path);
    return true;
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    failures.push(error);
    return false;
  }
}

/** Whether `value` is of the kind `option` takes (a map, an array, nil, a string, a number, a bool). */
function sameKind(option: Schema, value: unknown): boolean {
  const kind = definition(option);
  if (kind.anyOf !== undefined) return kind.anyOf.some((each) => sameKind(each, value));
  if (kind.oneOf !== undefined) return kind.oneOf.some((each) => sameKind(each, value));
  const constant = kind.const ?? kind.enum?.[0];
  if (constant !== undefined) return constant === null ? value === null : typeof constant === typeof value;
  switch (kind.type) {
    case "object":
      return isMap(value);
    case "array":
      return Array.isArray(value);
    case "null":
      return value === null;
    case "integer":
    case "number":
      return typeof value === "number";
    default:
      return typeof value === kind.type;
  }
}

/**
 * A tagged union (a server message, an event): the option its `type` names,
 * none when it names one this client does not know. Else a set of codes (an
 * error's `code`): any string, since a later server may add codes.
 */
function checkOneOf(options: Schema[], value: unknown, path: string): void {
  const tagged = options.every((option) => option.$ref !== undefined);
  if (!tagged) {
    if (typeof value !== "string") throw new ProtocolError(path, `must be a string, got ${show(value)}`);
    return;
  }
  if (!isMap(value)) throw new ProtocolError(path, `must be a map, got ${show(value)}`);
  if (typeof value.type !== "string") throw new ProtocolError(`${path}.type`, `must be a string, got ${show(value.type)}`);
  const chosen = options.find((option) => definition(option).properties?.type?.const === value.type);
  if (chosen !== undefined) check(chosen, value, path);
}

function definition(kind: Schema): Schema {
  return kind.$ref === undefined ? kind : DEFS[kind.$ref.slice("#/$defs/".length)];
}

/** The declared fields of a map (any others are ignored). */
function checkMap(kind: Schema, value: unknown, path: string): void {
  if (!isMap(value)) throw new ProtocolError(path, `must be a map, got ${show(value)}`);
  for (const [name, field] of Object.entries(kind.properties ?? {})) {
    if (Object.hasOwn(value, name)) check(field, value[name], `${path}.${name}`);
    else if (kind.required?.includes(name)) throw new ProtocolError(`${path}.${name}`, "is required");
  }
}

/** The counts of a definition's value, its types already checked, within MAX_CARDS. */
function bound(name: string, value: Fields, path: string): void {
  for (const field of CEILINGS[name] ?? []) {
    const count = value[field];
    if (typeof count === "number" && count > MAX_CARDS) {
      const least = DEFS[name].properties?.[field]?.minimum ?? 0;
      throw new ProtocolError(`${path}.${field}`, `must be an integer in ${least}..${MAX_CARDS}, got ${show(count)}`);
    }
  }
  if (name === "column") {
    const held = cardsIn(value as unknown as Column);
    if (held > MAX_CARDS) throw new ProtocolError(path, `holds ${held} cards; a column holds at most ${MAX_CARDS}`);
  }
  if (name === "view" || name === "event-restarted") {
    const table = value as unknown as { columns: Column[]; stock: number; reserve: string[] };
    if (table.columns.length > MAX_CARDS) {
      throw new ProtocolError(`${path}.columns`, `has ${table.columns.length} columns; a table has at most ${MAX_CARDS}`);
    }
    const held = table.columns.reduce((sum, column) => sum + cardsIn(column), table.stock + table.reserve.length);
    if (held > MAX_CARDS) throw new ProtocolError(path, `has ${held} cards in play; a game has at most ${MAX_CARDS}`);
  }
}

function cardsIn(column: Column): number {
  return column.down + column.cards.length;
}

function fitsScalar(kind: Schema, value: unknown): boolean {
  switch (kind.type) {
    case "integer":
    case "number":
      return (
        typeof value === "number" &&
        (kind.type === "integer" ? Number.isInteger(value) : Number.isFinite(value)) &&
        value >= (kind.minimum ?? -Infinity) &&
        value <= (kind.maximum ?? Infinity)
      );
    case "string": {
      if (typeof value !== "string") return false;
      const length = [...value].length; // code points, as JSON Schema counts
      if (length < (kind.minLength ?? 0) || length > (kind.maxLength ?? Infinity)) return false;
      return kind.pattern === undefined || pattern(kind.pattern).test(value);
    }
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    default:
      return true;
  }
}

const patterns = new Map<string, RegExp>();

function pattern(source: string): RegExp {
  let compiled = patterns.get(source);
  if (compiled === undefined) patterns.set(source, (compiled = new RegExp(source, "u")));
  return compiled;
}

/** 2^53-1, the bound of every count the protocol leaves open, is said so. */
function limit(n: number): string {
  return n === Number.MAX_SAFE_INTEGER ? "2^53-1" : n === -Number.MAX_SAFE_INTEGER ? "-(2^53-1)" : String(n);
}

/** What a schema asks for, in a few words. */
function describe(kind: Schema): string {
  const found = definition(kind);
  if (found.const !== undefined) return show(found.const);
  if (found.enum !== undefined) return "one of " + found.enum.map(show).join(", ");
  if (found.anyOf !== undefined) return found.anyOf.map(describe).join(" or ");
  switch (found.type) {
    case "integer":
    case "number": {
      const range = found.minimum !== undefined && found.maximum !== undefined ? ` in ${limit(found.minimum)}..${limit(found.maximum)}` : "";
      return (found.type === "integer" ? "an integer" : "a number") + range;
    }
    case "string":
      return found.pattern !== undefined ? `a string matching ${found.pattern}` : "a string";
    case "boolean":
      return "a boolean";
    case "null":
      return "nil";
    case "array":
      return "an array";
    default:
      return "a map";
  }
}
