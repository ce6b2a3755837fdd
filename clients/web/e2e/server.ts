/**
 * A real Scorpion server for the browser tests: `python -m server` on
 * 127.0.0.1 at a free port, SQLite in a fresh temporary directory. `restart`
 * stops it and starts it again on the same port and database, as an operator
 * restarting the server would. The Python is SCORPION_PYTHON, else the
 * project's .venv, else python3. The client it serves is SCORPION_WEB_DIR (the
 * server reads it), else the build `make web` put in server/web/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

function python(): string {
  if (process.env.SCORPION_PYTHON) return process.env.SCORPION_PYTHON;
  const venv = join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface ServerOptions {
  /** The solver's budget for proving a position lost (0, the default here: never). */
  lostBudgetMs?: number;
  /** Winnable deals per level to find in the background (the server's default when absent). */
  winnablePool?: number;
  /** How long a connection may send nothing before the server closes it (the server's default when absent). */
  idleTimeoutMs?: number;
}

export class TestServer {
  port = 0;
  private readonly dataDir = mkdtempSync(join(tmpdir(), "scorpion-web-"));
  private child: ChildProcess | null = null;
  private log = "";

  constructor(private readonly options: ServerOptions = {}) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const args = ["-m", "server", "--host", "127.0.0.1", "--port", String(this.port), "--data-dir", this.dataDir];
    args.push("--workers", "1", "--easy-pool", "0", "--lost-budget-ms", String(this.options.lostBudgetMs ?? 0));
    if (this.options.winnablePool !== undefined) args.push("--winnable-pool", String(this.options.winnablePool));
    if (this.options.idleTimeoutMs !== undefined) args.push("--idle-timeout-ms", String(this.options.idleTimeoutMs));
    // Every test of a file registers its players from 127.0.0.1 on this one server: past
    // the address's burst (20) the server refuses registrations, as it should. That limit
    // is tested in tests/server/test_limits.py, not here.
    args.push("--rate-registrations", "off");
    // Nor its new connections (pages loaded, reloaded and reconnected all the run long).
    args.push("--rate-connections", "off");
    const child = spawn(python(), args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (chunk) => (this.log += chunk));
    child.stderr?.on("data", (chunk) => (this.log += chunk));
    this.child = child;
    await this.ready();
    const page = await fetch(this.url);
    if (!(page.headers.get("content-type") ?? "").startsWith("text/html")) {
      throw new Error("the web client is not built: run `make web` (or set SCORPION_WEB_DIR)");
    }
  }

  private async ready(): Promise<void> {
    for (let attempt = 0; attempt < 150; attempt++) {
      if (this.child?.exitCode !== null) throw new Error(`the server exited:\n${this.log}`);
      try {
        const reply = await fetch(`${this.url}readyz`);
        if (reply.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the server did not become ready:\n${this.log}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** The solver's winning line for a deal: `scorpion-engine solve --json`. */
export async function winningLine(level: string, deal: number): Promise<{ type: string; card?: string; to?: number }[]> {
  const child = spawn(python(), ["-m", "engine", "solve", "--level", level, "--number", String(deal), "--json"], { cwd: ROOT });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  await new Promise((resolve) => child.once("exit", resolve));
  const verdict = JSON.parse(out) as { result: string; actions: { type: string; card?: string; to?: number }[] };
  if (verdict.result !== "won") throw new Error(`deal ${deal} is not won: ${out}`);
  return verdict.actions;
}

/** The first deal shipped as winnable on easy (easy = medium rules, solver-chosen deals). */
export function knownDeal(): number {
  const text = readFileSync(join(ROOT, "engine", "solver", "easy_deals.txt"), "utf8");
  const line = text.split("\n").find((each) => each.trim() && !each.startsWith("#"));
  return Number(line);
}
