// The wire types, generated from protocol/schema.json (the server's own catalogue):
//   node scripts/wire.mjs write   writes src/wire.ts
//   node scripts/wire.mjs check   exits 1 when src/wire.ts is not what the schema gives
// Every definition gets its declaration (the schema's titles name each one once).
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const schemaPath = fileURLToPath(new URL("../../../protocol/schema.json", import.meta.url));
const wirePath = fileURLToPath(new URL("../src/wire.ts", import.meta.url));
const banner =
  "// Generated from protocol/schema.json by `npm run wire` (scripts/wire.mjs): do not edit.\n" +
  "/* eslint-disable */\n";

async function generate() {
  const schema = JSON.parse(await readFile(schemaPath, "utf8"));
  schema.anyOf = Object.keys(schema.$defs).map((key) => ({ $ref: `#/$defs/${key}` }));
  const body = await compile(schema, "ScorpionMessage", {
    bannerComment: "",
    unreachableDefinitions: true,
    additionalProperties: false,
    format: false,
  });
  return banner + body;
}

const command = process.argv[2];
const fresh = await generate();
if (command === "write") {
  await writeFile(wirePath, fresh);
} else if (command === "check") {
  const current = await readFile(wirePath, "utf8").catch(() => "");
  if (current !== fresh) {
    process.stderr.write("src/wire.ts is stale: run `npm run wire` in clients/web\n");
    process.exitCode = 1;
  }
} else {
  process.stderr.write("usage: node scripts/wire.mjs write|check\n");
  process.exitCode = 2;
}
