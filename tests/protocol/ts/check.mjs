// The protocol tests' bridge to two npm tools (tests/protocol/test_tools.py runs it):
//   node check.mjs typescript SCHEMA.json   prints the TypeScript declarations
//                                           json-schema-to-typescript makes of
//                                           every definition in it
//   node check.mjs asyncapi ASYNCAPI.json   prints the @asyncapi/parser diagnostics
//                                           as JSON; exit status 1 when any is an error
import { readFile } from "node:fs/promises";

const [command, path] = process.argv.slice(2);
const document = JSON.parse(await readFile(path, "utf8"));

if (command === "typescript") {
  // The root names every definition, so each gets its declaration (the replay
  // and verify definitions are not wire messages, so not under the root's union).
  document.anyOf = Object.keys(document.$defs).map((key) => ({ $ref: `#/$defs/${key}` }));
  const { compile } = await import("json-schema-to-typescript");
  const declarations = await compile(document, "ScorpionMessage", {
    bannerComment: "",
    unreachableDefinitions: true,
    additionalProperties: false,
    format: false,
  });
  process.stdout.write(declarations);
} else if (command === "asyncapi") {
  const { Parser } = await import("@asyncapi/parser");
  const { diagnostics } = await new Parser().parse(JSON.stringify(document));
  const found = diagnostics.map((d) => ({
    severity: d.severity,
    code: d.code,
    message: d.message,
    path: d.path.join("/"),
  }));
  process.stdout.write(JSON.stringify(found, null, 2) + "\n");
  process.exitCode = found.some((d) => d.severity === 0) ? 1 : 0;
} else {
  process.stderr.write(`unknown command ${command}\n`);
  process.exitCode = 2;
}
