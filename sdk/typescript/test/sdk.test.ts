// @dsh-rs/sdk against `dsh app-server` and the scripted model server.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Dsh, DshError, EVENT_TYPES, type DshEvent } from "../src/index.js";
import { Scripted, escalated, toolResults } from "./scripted.js";

// dist/test/ -> the package -> the repository.
const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ROOT = resolve(PACKAGE, "..", "..");

const servers: Scripted[] = [];
async function scripted(turns: unknown[]): Promise<Scripted> {
  const server = new Scripted();
  servers.push(server);
  return server.start(turns);
}
after(async () => {
  for (const server of servers) await server.close();
});

test("two turns, then a resume in another process", async () => {
  const server = await scripted([{ text: "first answer" }, { text: "second answer" }, { text: "third answer" }]);
  const run = await Dsh.open({ cwd: server.ws, bin: server.bin, env: server.env });
  const events: DshEvent[] = [];
  for await (const event of run.send("one")) events.push(event);
  const last = events[events.length - 1];
  assert.equal(last.type, "final");
  assert.equal(last.type === "final" && last.text, "first answer");
  assert.ok(events.some((e) => e.type === "text" && e.text === "first answer"));
  assert.equal(run.result?.reason.kind, "completed");
  assert.equal((await run.run("two")).text, "second answer");
  const session = run.sessionId;
  await run.close();
  const again = await Dsh.open({ cwd: server.ws, bin: server.bin, env: server.env, resume: session });
  assert.equal(again.sessionId, session);
  assert.equal((await again.run("three")).text, "third answer");
  await again.close();
  const sent = JSON.stringify((await server.requests())[2].messages);
  assert.ok(sent.includes("one") && sent.includes("second answer"), sent);
});

test("an unknown session is an error with its code", async () => {
  const server = await scripted([]);
  await assert.rejects(
    Dsh.open({ cwd: server.ws, bin: server.bin, env: server.env, resume: "session-nope" }),
    (error: unknown) => error instanceof DshError && error.code === "SESSION_NOT_FOUND",
  );
});

test("approvals allowed and denied by the host", async () => {
  const server = await scripted([
    escalated("echo allowed-run"),
    { text: "ran it" },
    escalated("echo denied-run"),
    { text: "understood" },
  ]);
  const asked: string[] = [];
  const run = await Dsh.open({
    cwd: server.ws,
    bin: server.bin,
    env: server.env,
    onApproval: async (request) => {
      asked.push(request.callId);
      assert.equal(request.tool, "bash");
      return asked.length === 1 ? "once" : { choice: "deny", reason: "not today" };
    },
  });
  const events: DshEvent[] = [];
  for await (const event of run.send("do it")) events.push(event);
  const call = events.find((e) => e.type === "tool_call");
  assert.equal(call?.type === "tool_call" && call.callId, asked[0]);
  assert.equal(run.result?.text, "ran it");
  assert.equal((await run.run("again")).text, "understood");
  await run.close();
  const requests = await server.requests();
  assert.ok(toolResults(requests[1])[0].includes("allowed-run"));
  const denied = toolResults(requests[3]).at(-1) ?? "";
  assert.ok(denied.includes("rejected") && denied.includes("not today"), denied);
});

test("a question is answered by the host", async () => {
  const server = await scripted([
    {
      calls: [
        [
          "ask_user_question",
          {
            questions: [
              {
                id: "db",
                question: "Which database?",
                header: "Storage",
                options: [{ label: "SQLite" }, { label: "Postgres" }],
              },
            ],
          },
        ],
      ],
    },
    { text: "Postgres it is." },
  ]);
  const run = await Dsh.open({
    cwd: server.ws,
    bin: server.bin,
    env: server.env,
    onQuestions: (request) => {
      assert.deepEqual(
        request.questions[0].options.map((o) => o.label),
        ["SQLite", "Postgres"],
      );
      return { db: "Postgres" };
    },
  });
  assert.equal((await run.run("pick one")).text, "Postgres it is.");
  await run.close();
  assert.ok(toolResults((await server.requests())[1])[0].includes("Postgres"));
});

test("an interrupt stops the turn and the session goes on", async () => {
  // The turn is stopped while it waits for an approval: by then the model's answer has been
  // read whole, so the next turn's request gets the next answer of the script.
  const server = await scripted([escalated("echo never-run"), { text: "after" }]);
  const interrupted: boolean[] = [];
  const run: Dsh = await Dsh.open({
    cwd: server.ws,
    bin: server.bin,
    env: server.env,
    onApproval: async () => {
      interrupted.push(await run.interrupt());
      return "once" as const; // too late: the request was withdrawn with its turn
    },
  });
  await run.run("wait for me");
  assert.deepEqual(interrupted, [true]);
  assert.deepEqual(run.result?.reason, { kind: "aborted", reason: { kind: "user" } });
  assert.equal((await run.run("again")).text, "after");
  await run.close();
});

test("a malformed message is refused and the session goes on", async () => {
  const server = await scripted([{ text: "still here" }]);
  const run = await Dsh.open({ cwd: server.ws, bin: server.bin, env: server.env });
  await assert.rejects(run.call({ type: "dance" }), (e: unknown) => e instanceof DshError && e.code === "BAD_REQUEST");
  await assert.rejects(
    run.call({ type: "set", mode: "yolo" }),
    (e: unknown) => e instanceof DshError && e.code === "BAD_REQUEST" && e.message.includes("yolo"),
  );
  assert.equal((await run.set({ mode: "plan" })).mode, "plan");
  assert.equal((await run.run("hello")).text, "still here");
  await run.close();
});

test("a host tool is called and its result seen by the model", async () => {
  const server = await scripted([
    { calls: [["lookup", { key: "answer" }]] },
    { calls: [["lookup", { key: "missing" }]] },
    { text: "it is forty-two" },
  ]);
  const called: unknown[] = [];
  const run = await Dsh.open({
    cwd: server.ws,
    bin: server.bin,
    env: server.env,
    tools: [
      {
        name: "lookup",
        description: "Looks a key up.",
        inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
        run: async ({ key }) => {
          called.push(key);
          if (key !== "answer") throw new RangeError(`no key ${String(key)}`);
          return "forty-two";
        },
      },
    ],
  });
  assert.equal((await run.run("what is the answer?")).text, "it is forty-two");
  await run.close();
  assert.deepEqual(called, ["answer", "missing"]);
  const requests = await server.requests();
  assert.ok(requests[0].tools.some((t: any) => t.function.name === "lookup"));
  assert.ok(toolResults(requests[1])[0].includes("forty-two"));
  assert.ok((toolResults(requests[2]).at(-1) ?? "").includes("RangeError"));
});

test("every event type of the schema is in the union", () => {
  const schema = JSON.parse(readFileSync(join(ROOT, "docs", "events.schema.json"), "utf8"));
  const kinds = schema.oneOf.map((ref: { $ref: string }) => ref.$ref.split("/").at(-1)).sort();
  assert.deepEqual(kinds, [...EVENT_TYPES].sort());
});

test("the supervisor example in docs/sdk.md runs", async () => {
  const doc = readFileSync(join(ROOT, "docs", "sdk.md"), "utf8");
  const code = /```ts\n(\/\/ supervisor\.ts.*?)```/s.exec(doc)?.[1];
  assert.ok(code, "docs/sdk.md has no supervisor.ts block");
  const server = await scripted([{ text: "did task one" }, { text: "did task two" }]);
  const git = ["-c", "user.name=t", "-c", "user.email=t@t", "-C", server.ws];
  execFileSync("git", ["init", "-q", server.ws]);
  writeFileSync(join(server.ws, "README"), "hi\n");
  execFileSync("git", [...git, "add", "README"]);
  execFileSync("git", [...git, "commit", "-q", "-m", "start"]);
  // The example as a user's own project would hold it, the SDK installed beside it.
  const project = join(server.dir, "supervisor");
  mkdirSync(join(project, "node_modules", "@dsh-rs"), { recursive: true });
  mkdirSync(join(project, "node_modules", "@types"), { recursive: true });
  symlinkSync(PACKAGE, join(project, "node_modules", "@dsh-rs", "sdk"));
  symlinkSync(join(PACKAGE, "node_modules", "@types", "node"), join(project, "node_modules", "@types", "node"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", strict: true, types: ["node"], skipLibCheck: true },
    }),
  );
  writeFileSync(join(project, "supervisor.ts"), code);
  execFileSync(process.execPath, [join(PACKAGE, "node_modules", "typescript", "bin", "tsc"), "-p", project]);
  const out = execFileSync(process.execPath, [join(project, "supervisor.js"), server.ws, "task one", "task two"], {
    env: { ...server.env, DSH_BIN: server.bin },
    encoding: "utf8",
  });
  const lines = out.trim().split("\n");
  assert.ok(lines[0].endsWith("did task one") && lines[1].endsWith("did task two"), out);
  const trees = execFileSync("git", [...git, "worktree", "list"], { encoding: "utf8" });
  assert.equal(trees.trim().split("\n").length, 3, trees);
});

test("a rewind previews, applies, refuses a turn it cannot reach and undoes", async () => {
  const server = await scripted([
    { calls: [["write", { file_path: "notes.txt", content: "alpha\n" }]] },
    { text: "wrote it" },
    { text: "second answer" },
    { text: "after the rewind" },
  ]);
  const notes = join(server.ws, "notes.txt");
  const run = await Dsh.open({ cwd: server.ws, bin: server.bin, env: server.env, mode: "workspace-write" });
  await run.run("write the notes");
  await run.run("remember beta");
  const preview = await run.rewind({ turn: 1, apply: false });
  assert.equal(preview.applied, null);
  assert.deepEqual(preview.plan.remove, ["notes.txt"]);
  assert.ok(existsSync(notes));
  await assert.rejects(run.rewind({ turn: 9 }), (e: unknown) => e instanceof DshError && e.code === "REWIND_TARGET");
  const done = await run.rewind({ turn: 1 });
  assert.equal(done.applied?.toTurn, 1);
  assert.equal(done.applied?.removed, 1);
  assert.ok(!existsSync(notes));
  const undone = await run.rewind();
  assert.equal(undone.applied?.undo, true);
  assert.equal(readFileSync(notes, "utf8"), "alpha\n");
  const talk = await run.rewind({ turn: 2, files: false });
  assert.equal(talk.applied?.files, false);
  assert.ok(existsSync(notes));
  assert.equal((await run.run("what do you remember?")).text, "after the rewind");
  await run.close();
  const sent = JSON.stringify((await server.requests())[3].messages);
  assert.ok(sent.includes("write the notes") && !sent.includes("remember beta"), sent);
});

test("a host tool's output past what the server reads is the call's error", async () => {
  const server = await scripted([{ calls: [["dump", {}]] }, { text: "too much" }]);
  const run = await Dsh.open({
    cwd: server.ws,
    bin: server.bin,
    env: server.env,
    tools: [
      { name: "dump", description: "Returns 17 MiB", inputSchema: { type: "object" }, run: () => "x".repeat(17 << 20) },
    ],
  });
  assert.equal((await run.run("dump it")).text, "too much");
  await run.close();
  const seen = toolResults((await server.requests())[1]).at(-1) ?? "";
  assert.ok(seen.includes("over the") && seen.includes("write it to a file"), seen.slice(0, 300));
});
