// End-to-end tests: Debian's Chromium (no browser download) against a real
// server each test file starts (e2e/server.ts). One worker: the machine is small.
import { defineConfig } from "@playwright/test";

export const CHROMIUM = process.env.SCORPION_CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results/output",
  workers: 1,
  timeout: 90_000,
  expect: { timeout: 10_000 },
  reporter: [["list"]],
  use: {
    viewport: { width: 1280, height: 800 },
    trace: "off",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});
