// A scripted model server (SCRIPTED_SERVER_BIN) playing a list of turns, and a home and
// workspace for dsh (DSH_BIN): scripts/sdk-tests builds both and sets them. Without them every
// test fails; none is skipped.

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run scripts/sdk-tests, which builds it and sets it`);
  return value;
}

export class Scripted {
  readonly dir = mkdtempSync(join(tmpdir(), "dsh-sdk-ts-"));
  readonly home = join(this.dir, "home");
  readonly ws = join(this.dir, "ws");
  readonly bin = required("DSH_BIN");
  env: NodeJS.ProcessEnv = {};
  private readonly log = join(this.dir, "requests.log");
  private model?: ChildProcessByStdio<Writable, Readable, null>;
  private stopped?: Promise<void>;

  /** Starts the server with `turns` (docs of dsh_testkit::Turn::script_from_json). */
  async start(turns: unknown[]): Promise<this> {
    mkdirSync(this.home);
    mkdirSync(this.ws);
    const script = join(this.dir, "turns.json");
    writeFileSync(script, JSON.stringify(turns));
    this.model = spawn(required("SCRIPTED_SERVER_BIN"), ["--turns", script], {
      env: { ...process.env, SCRIPTED_SERVER_LOG: this.log },
      stdio: ["pipe", "pipe", "inherit"],
    });
    const model = this.model;
    this.stopped = new Promise((done) => model.on("close", () => done()));
    const base = await new Promise<string>((resolve, reject) => {
      createInterface({ input: model.stdout }).once("line", resolve);
      model.once("error", reject);
    });
    const env: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (!name.startsWith("DSH_") && !name.startsWith("DEEPSEEK_")) env[name] = value;
    }
    this.env = { ...env, DSH_HOME: this.home, DEEPSEEK_BASE_URL: base, DEEPSEEK_API_KEY: "test-key", HOME: this.dir };
    return this;
  }

  /** The request bodies the model was sent, once the server has stopped. */
  async requests(): Promise<any[]> {
    await this.stop();
    return readFileSync(this.log, "utf8")
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line.slice(line.indexOf(" ") + 1)));
  }

  async stop(): Promise<void> {
    this.model?.stdin.end();
    await this.stopped;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function toolResults(body: any): string[] {
  return body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
}

export function escalated(command: string): unknown {
  return {
    calls: [
      [
        "bash",
        {
          command,
          description: "print a word",
          sandbox_permissions: "danger-full-access",
          justification: "needs the whole machine",
        },
      ],
    ],
  };
}
