// The build goes into the server package (server/web/), which serves it on its
// own port and ships it in the wheel; hashed names under assets/.
import { fileURLToPath } from "node:url";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

/** protocol/schema.json, which src/checks.ts reads, without its prose: no page shows it. */
const schemaWithoutProse: Plugin = {
  name: "schema-without-prose",
  enforce: "pre",
  transform(code, id) {
    if (!id.endsWith("/protocol/schema.json")) return null;
    const prose = (key: string, value: unknown) => (typeof value === "string" && (key === "description" || key === "title") ? undefined : value);
    return { code: JSON.stringify(JSON.parse(code), prose), map: null };
  },
};

export default defineConfig({
  plugins: [schemaWithoutProse],
  build: {
    outDir: fileURLToPath(new URL("../../server/web", import.meta.url)),
    emptyOutDir: true,
    assetsDir: "assets",
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
