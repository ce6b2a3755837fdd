// The build goes into the server package (server/web/), which serves it on its
// own port and ships it in the wheel; hashed names under assets/.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
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
