// The client: one `dsh app-server` process, one session open at a time. One reader takes the
// server's lines: responses settle the message they answer, requests go to the host's
// handlers, events go to the turn being iterated.

import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";

import type { DshEvent, FinalEvent } from "./events.js";
import {
  DshError,
  TurnError,
  type ApprovalHandler,
  type ApprovalRequest,
  type FormHandler,
  type FormRequest,
  type HostTool,
  type QuestionsHandler,
  type QuestionsRequest,
  type RewindOptions,
  type RewindReport,
  type TurnResult,
} from "./requests.js";

export type Mode = "read-only" | "workspace-write" | "danger-full-access" | "plan" | "auto";

export type DshOptions = {
  /** Where the session runs (default: the process's working directory). */
  cwd?: string;
  mode?: Mode;
  model?: string;
  /** Resume, or fork, this session of the folder. */
  resume?: string;
  fork?: string;
  /** The dsh binary (default: $DSH_BIN, `dsh` on PATH, then the npm platform package). */
  bin?: string;
  /** The server's command-line options (`--approval-policy`, `--patch`...). */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  onApproval?: ApprovalHandler;
  onQuestions?: QuestionsHandler;
  onForm?: FormHandler;
  /** The client's own tools, offered to the model in every session this client opens. */
  tools?: HostTool[];
};

type Wire = Record<string, any>;

/** dsh app-server refuses a line over 16 MiB: a host tool's output is kept under it, with room
 * for the rest of the answer. */
const OUTPUT_LIMIT = 16 * 1024 * 1024 - 1024;

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The dsh binary: `given`, $DSH_BIN, `dsh` on PATH, or the one the npm platform package
 * (`@dsh-rs/dsh-linux-x64`, `-arm64`) holds. */
export function findBinary(given?: string, env: NodeJS.ProcessEnv = process.env): string {
  const named = given ?? env.DSH_BIN;
  if (named) return named;
  for (const folder of (env.PATH ?? "").split(delimiter)) {
    if (folder && executable(join(folder, "dsh"))) return join(folder, "dsh");
  }
  try {
    const require = createRequire(import.meta.url);
    const manifest = require.resolve(`@dsh-rs/dsh-${process.platform}-${process.arch}/package.json`);
    const bin = join(dirname(manifest), "bin", "dsh");
    if (executable(bin)) return bin;
  } catch {
    // Not installed: said below.
  }
  throw new DshError(
    "BINARY_NOT_FOUND",
    "no dsh binary: pass bin, set DSH_BIN, put dsh on PATH, or install @dsh-rs/dsh",
  );
}

/** A queue a turn's lines go through, read by its async iterator. */
class Lines {
  private items: (Wire | Error)[] = [];
  private waiting?: (item: Wire | Error) => void;

  push(item: Wire | Error): void {
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting(item);
    } else {
      this.items.push(item);
    }
  }

  next(): Promise<Wire | Error> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/** dsh driven from Node: `const run = await Dsh.open({cwd, mode})`, then `for await (const
 * event of run.send(task))`, and `run.result` for how the turn ended. */
export class Dsh {
  sessionId?: string;
  result?: TurnResult;
  version?: string;
  private readonly child: ChildProcessByStdio<Writable, Readable, null>;
  private readonly waiting = new Map<number, { resolve: (m: Wire) => void; reject: (e: Error) => void }>();
  private turn?: { id: number; lines: Lines };
  private nextId = 0;
  private exited?: DshError;
  private readonly closed: Promise<void>;
  private handlerError?: unknown;
  private onReady?: { resolve: (m: Wire) => void; reject: (e: Error) => void };

  private constructor(private readonly options: DshOptions) {
    const cwd = resolve(options.cwd ?? process.cwd());
    this.child = spawn(findBinary(options.bin, options.env ?? process.env), ["app-server", ...(options.args ?? [])], {
      cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: this.child.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => {
      let message: Wire;
      try {
        message = JSON.parse(line);
      } catch {
        return;
      }
      this.dispatch(message);
    });
    this.closed = new Promise((done) => {
      const gone = (how: string) => {
        this.exited ??= new DshError("PROCESS_EXITED", `dsh app-server ${how}`);
        this.onReady?.reject(this.exited);
        for (const { reject } of this.waiting.values()) reject(this.exited);
        this.waiting.clear();
        this.turn?.lines.push(this.exited);
        done();
      };
      this.child.on("error", (e) => gone(`could not start: ${e.message}`));
      this.child.on("close", (code, signal) => gone(`exited (${signal ?? `status ${code}`})`));
    });
  }

  /** Starts `dsh app-server` and opens a session (new, `resume`d or `fork`ed). */
  static async open(options: DshOptions = {}): Promise<Dsh> {
    const dsh = new Dsh(options);
    try {
      const ready = await new Promise<Wire>((resolve, reject) => (dsh.onReady = { resolve, reject }));
      dsh.version = ready.version;
      await dsh.openSession(options);
    } catch (error) {
      await dsh.close();
      throw error;
    }
    return dsh;
  }

  /** Opens a session, closing the one open. Returns its id. */
  async openSession(session: Pick<DshOptions, "resume" | "fork" | "mode" | "model" | "cwd"> = {}): Promise<string> {
    const message: Wire = { type: "open", cwd: resolve(session.cwd ?? this.options.cwd ?? process.cwd()) };
    if (this.options.tools?.length) {
      message.tools = this.options.tools.map(({ name, description, inputSchema }) => ({
        name,
        description,
        inputSchema,
      }));
    }
    for (const name of ["resume", "fork", "mode", "model"] as const) {
      if (session[name] !== undefined) message[name] = session[name];
    }
    const result = await this.call(message);
    this.sessionId = result.sessionId;
    return result.sessionId;
  }

  /** Runs a turn, yielding its events; `result` holds how it ended. A failed turn throws a
   * `TurnError`; leaving the loop early interrupts the turn. */
  async *send(text: string): AsyncGenerator<DshEvent, TurnResult, undefined> {
    if (this.turn) throw new DshError("BUSY", "a turn is running: finish iterating it first");
    const lines = new Lines();
    const id = this.write({ type: "send", text });
    this.turn = { id, lines };
    this.handlerError = undefined;
    let final: FinalEvent | undefined;
    let done = false;
    try {
      for (;;) {
        const item = await lines.next();
        if (item instanceof Error) throw item;
        if (item.type === "response") {
          done = true;
          if (item.error) throw new DshError(item.error.code, item.error.message, item.error.hint);
          this.result = { reason: item.result.reason, text: item.result.text, final };
          break;
        }
        if (item.type === "final") final = item as FinalEvent;
        yield item as DshEvent;
      }
    } finally {
      if (!done && !this.exited) {
        // Left early: the turn is stopped, and its lines read to its end.
        this.write({ type: "interrupt" });
        for (;;) {
          const item = await lines.next();
          if (item instanceof Error || item.type === "response") break;
        }
      }
      this.turn = undefined;
    }
    if (this.handlerError !== undefined) throw this.handlerError;
    const result = this.result;
    if (result.reason.kind === "error") {
      const error = (result.reason.error ?? {}) as { code?: string; message?: string };
      throw new TurnError(error.code ?? "ERROR", error.message ?? "", result);
    }
    return result;
  }

  /** Runs a turn to its end. */
  async run(text: string): Promise<TurnResult> {
    for await (const _ of this.send(text)) {
      // Only the end is wanted.
    }
    return this.result as TurnResult;
  }

  /** Stops the running turn; false when none ran. */
  async interrupt(): Promise<boolean> {
    return Boolean((await this.call({ type: "interrupt" })).interrupted);
  }

  /** Another permission mode or model for the next turns (between turns). */
  async set(change: { mode?: Mode; model?: string }): Promise<Wire> {
    return this.call({ type: "set", ...change });
  }

  /** Takes the session back to the start of `turn` (its files, its conversation or both),
   * between turns; without `turn`, undoes the last rewind. A turn it cannot go back to
   * rejects with a `DshError` coded REWIND_TARGET, files changed outside CHANGED_OUTSIDE. */
  async rewind(options: RewindOptions = {}): Promise<RewindReport> {
    const message: Wire = { type: "rewind" };
    for (const name of ["turn", "files", "conversation", "force", "apply"] as const) {
      if (options[name] !== undefined) message[name] = options[name];
    }
    return (await this.call(message)) as RewindReport;
  }

  /** Sends one message and resolves with its response's result; an error response rejects
   * with a `DshError`. */
  call(message: Wire): Promise<Wire> {
    return new Promise((resolve, reject) => {
      let id: number;
      try {
        id = this.write(message);
      } catch (error) {
        return reject(error);
      }
      this.waiting.set(id, {
        resolve: (response) =>
          response.error
            ? reject(new DshError(response.error.code, response.error.message, response.error.hint))
            : resolve(response.result ?? {}),
        reject,
      });
    });
  }

  /** Closes stdin (the server stops what runs and exits) and waits for the process. */
  async close(): Promise<void> {
    if (!this.child.stdin.destroyed) this.child.stdin.end();
    await this.closed;
  }

  private write(message: Wire): number {
    if (this.exited) throw this.exited;
    const id = ++this.nextId;
    this.child.stdin.write(JSON.stringify({ ...message, id }) + "\n");
    return id;
  }

  private dispatch(message: Wire): void {
    switch (message.type) {
      case "ready":
        this.onReady?.resolve(message);
        this.onReady = undefined;
        return;
      case "response": {
        if (this.turn && message.id === this.turn.id) return this.turn.lines.push(message);
        const waiter = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        return waiter?.resolve(message);
      }
      case "request":
        void this.answer(message);
        return;
      case "withdrawn":
        return;
      default:
        this.turn?.lines.push(message);
    }
  }

  private async runTool(request: Wire): Promise<void> {
    let reply: Wire;
    try {
      const tool = this.options.tools?.find((t) => t.name === request.tool);
      if (!tool) throw new Error(`this client has no tool "${request.tool}"`);
      const result = await tool.run(request.input ?? {});
      const output = typeof result === "string" ? result : JSON.stringify(result);
      const size = Buffer.byteLength(JSON.stringify(output));
      if (size > OUTPUT_LIMIT) {
        throw new RangeError(
          `the tool's output is ${size} bytes, over the ${OUTPUT_LIMIT} one answer may carry: ` +
            "return less, or write it to a file and return its path",
        );
      }
      reply = { output };
    } catch (error) {
      // The model reads the failure as the call's error.
      reply = { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
    if (!this.exited) this.write({ type: "answer", request: request.id, ...reply });
  }

  private async answer(request: Wire): Promise<void> {
    if (request.kind === "tool") return this.runTool(request);
    let reply: Wire;
    try {
      reply = await this.reply(request);
    } catch (error) {
      // The handler's failure is thrown from the turn's iteration once it ends.
      this.handlerError ??= error;
      reply =
        request.kind === "approval"
          ? { choice: "deny", reason: "the host's approval handler failed" }
          : request.kind === "questions"
            ? { cancel: true }
            : { action: "cancel" };
    }
    if (!this.exited) this.write({ type: "answer", request: request.id, ...reply });
  }

  private async reply(request: Wire): Promise<Wire> {
    const { onApproval, onQuestions, onForm } = this.options;
    if (request.kind === "approval") {
      if (!onApproval) return { choice: "deny", reason: "the host has no approval handler" };
      const chosen = await onApproval(request as ApprovalRequest);
      return typeof chosen === "string" ? { choice: chosen } : { ...chosen };
    }
    if (request.kind === "questions") {
      const given = onQuestions ? await onQuestions(request as QuestionsRequest) : null;
      if (!given) return { cancel: true };
      const answers = Object.entries(given).map(([id, chosen]) =>
        typeof chosen === "string"
          ? { id, selected: [chosen] }
          : Array.isArray(chosen)
            ? { id, selected: chosen }
            : { id, ...chosen },
      );
      return { answers };
    }
    const content = onForm ? await onForm(request as FormRequest) : null;
    return content ? { action: "accept", content } : { action: "decline" };
  }
}
