#!/usr/bin/env python3
"""Writes a dsh home holding 1,000 sessions recorded in one workspace, for the benchmarks of
what grows with the history (`dsh sessions list`, `dsh resume`'s picker, the web app's
sidebar, resuming a long session). The same bytes on every machine: contents, ids and times
come from a fixed seed.

The sessions are what real use leaves: turns of a task, answers that call tools (`read`,
`bash`, `grep`, `edit`) and their results, step and turn ends with usage, and in a long
session the compaction summaries that keep its history inside the context window. Their
lengths vary as use does: most are a few turns (tens of KB), some run for hours (1-5 MB), a
few for days (10-30 MB), and one is 100 MB. Some have a title the user gave them; 40 more
are subagents' sessions (which lists leave out or mark).

Usage: sessions_home.py DIR   (DIR must not exist; DIR/home is the home, DIR/ws the
workspace, DIR/manifest.json names the sessions and the 100 MB one)
"""

import json
import os
import random
import sys
import uuid

SESSIONS = 1_000
CHILDREN = 40
BIG_BYTES = 100 * 1000 * 1000
# History (bytes of messages) a session holds before it compacts: about 300,000 tokens.
COMPACT_AFTER = 1_200_000
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

WORDS = (
    "session config request response handler client server index buffer parse render "
    "update delete create fetch store cache token user account order item price total "
    "count offset limit cursor stream error retry timeout write read open close flush "
    "lock queue event state model view route table"
).split()
TASKS = [
    "fix the failing test in {a}_{b}",
    "add a {a} option to the {b} command",
    "why does {a} time out when the {b} is empty?",
    "refactor the {a} {b} module so it has one entry point",
    "write tests for {a}::{b}",
    "review the change to {a} and say what could break",
    "rename {a}_{b} to {b}_{a} everywhere",
    "the {a} handler leaks a {b}; find where",
]


def cwd_slug(cwd):
    """The folder name dsh gives a working directory (dsh-core's `log::cwd_slug`)."""
    readable = ""
    for c in cwd:
        if (c.isascii() and c.isalnum()) or c in "._":
            readable += c
        elif not readable.endswith("-"):
            readable += "-"
    readable = readable.strip("-")
    readable = readable[max(0, len(readable) - 80):]
    h = 0xCBF29CE484222325
    for byte in cwd.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%s-%016x" % (readable or "root", h)


class Writer:
    """One session's log, record by record, with the history's size tracked for compaction."""

    def __init__(self, path, header, rng, lines, start_ms):
        self.file = open(path, "w")
        self.file.write(json.dumps(header, separators=(",", ":")) + "\n")
        self.rng, self.lines, self.time = rng, lines, start_ms
        self.seq = 0
        self.written = 0
        self.history = 0  # messages since the last compaction
        self.history_bytes = 0

    def record(self, kind, data):
        self.seq += 1
        self.time += self.rng.randint(5, 4000)
        line = json.dumps({"seq": self.seq, "time": self.time, "type": kind, "data": data},
                          separators=(",", ":")) + "\n"
        self.file.write(line)
        self.written += len(line)
        if kind in ("user/message", "assistant/message", "tool/result"):
            self.history += 1
            self.history_bytes += len(line)

    def usage(self, tokens_in, tokens_out):
        cached = tokens_in * 9 // 10
        return {"inputTokens": tokens_in, "outputTokens": tokens_out,
                "cacheReadTokens": cached, "cacheWriteTokens": 0, "reasoningTokens": 0,
                "totalTokens": tokens_in + tokens_out,
                "costUsd": round(tokens_in * 1.4e-7 + tokens_out * 2.8e-7, 6)}

    def source(self, at_least):
        """Lines of source, as a `read` or `grep` returns them, about `at_least` bytes."""
        start = self.rng.randrange(len(self.lines))
        out, size, n = [], 0, start
        while size < at_least:
            text = "%6d\t%s" % (n - start + 1, self.lines[n % len(self.lines)])
            out.append(text)
            size += len(text) + 1
            n += 1
        return "\n".join(out)

    def result_size(self):
        # Most results are small; a few reads and builds are long.
        roll = self.rng.random()
        if roll < 0.6:
            return self.rng.randint(80, 2_000)
        if roll < 0.95:
            return self.rng.randint(2_000, 16_000)
        return self.rng.randint(16_000, 120_000)

    def turn(self, number):
        r = self.rng
        self.record("turn/start", {"turn": number})
        if self.history_bytes > COMPACT_AFTER:
            summary = "Summary of the conversation so far: " + " ".join(
                r.choice(WORDS) for _ in range(r.randint(300, 900)))
            before = self.history_bytes // 4
            self.record("compaction/summary", {
                "turn": number, "replaced": self.history,
                "message": {"role": "user", "content": [{"type": "text", "text": summary}]},
                "reason": "threshold", "tokensBefore": before, "tokensAfter": len(summary) // 4,
                "model": "deepseek-v4-flash", "usage": self.usage(before, 1200)})
            self.history, self.history_bytes = 1, len(summary)
        task = r.choice(TASKS).format(a=r.choice(WORDS), b=r.choice(WORDS))
        self.record("user/message", {"turn": number, "message": {
            "role": "user", "content": [{"type": "text", "text": task}]}})
        steps = r.choice((1, 2, 3, 4, 6, 9, 14))
        context = min(self.history_bytes // 4, 900_000) + 6_000
        for step in range(1, steps + 1):
            self.record("step/start", {"turn": number, "step": step})
            usage = self.usage(context, r.randint(20, 900))
            if step == steps:
                text = " ".join(r.choice(WORDS) for _ in range(r.randint(15, 250)))
                self.record("assistant/message", {
                    "turn": number, "step": step,
                    "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
                    "finish": "stop", "provider": "deepseek", "model": "deepseek-v4-flash",
                    "usage": usage})
            else:
                call_id = "call_%d_%d" % (number, step)
                name, arguments, output = self.call(call_id)
                self.record("assistant/message", {
                    "turn": number, "step": step,
                    "message": {"role": "assistant", "content": [
                        {"type": "tool-call", "id": call_id, "name": name,
                         "arguments": arguments}]},
                    "finish": "tool-calls", "provider": "deepseek",
                    "model": "deepseek-v4-flash", "usage": usage})
                self.record("tool/call", {"turn": number, "step": step, "callId": call_id,
                                          "name": name, "arguments": arguments})
                result = {"turn": number, "step": step, "message": {"role": "user", "content": [
                    {"type": "tool-result", "toolCallId": call_id,
                     "content": [{"type": "text", "text": output}], "isError": False}]}}
                if name == "bash":
                    result["command"] = {"exitCode": 0}
                self.record("tool/result", result)
                context += len(output) // 4
            self.record("step/end", {"turn": number, "step": step, "usage": usage})
        self.record("turn/end", {"turn": number, "reason": {"kind": "completed"}})

    def call(self, call_id):
        r = self.rng
        path = "src/%s/%s_%s.rs" % (r.choice(WORDS), r.choice(WORDS), r.choice(WORDS))
        kind = r.random()
        if kind < 0.45:
            return ("read", json.dumps({"file_path": path}), self.source(self.result_size()))
        if kind < 0.7:
            command = "cargo test -p %s %s" % (r.choice(WORDS), r.choice(WORDS))
            out = self.source(self.result_size()) + "\ntest result: ok. 12 passed; 0 failed"
            return ("bash", json.dumps({"command": command, "description": "Run the tests"}), out)
        if kind < 0.9:
            pattern = "%s_%s" % (r.choice(WORDS), r.choice(WORDS))
            return ("grep", json.dumps({"pattern": pattern}), self.source(self.result_size() // 2))
        old, new = r.choice(WORDS), r.choice(WORDS)
        return ("edit", json.dumps({"file_path": path, "old_string": old, "new_string": new}),
                "The file %s has been updated." % path)

    def close(self):
        self.file.close()


def target_size(rng, index):
    """How long session `index` runs, in bytes of log."""
    if index == 0:
        return BIG_BYTES
    if index <= 4:
        return rng.randint(10_000_000, 30_000_000)
    if index <= 49:
        return rng.randint(1_000_000, 5_000_000)
    return int(min(max(rng.lognormvariate(10.4, 1.1), 3_000), 900_000))


def write_session(sessions_dir, rng, lines, cwd, created, size, parent=None):
    sid = "session-%s" % uuid.UUID(int=rng.getrandbits(128), version=4)
    folder = os.path.join(sessions_dir, sid)
    os.makedirs(folder, mode=0o700)
    header = {"type": "session", "version": 1, "id": sid, "createdAt": created, "cwd": cwd,
              "dsh": "0.1.0"}
    if parent:
        header["parentSession"] = parent
        header["delegationDepth"] = 1
    path = os.path.join(folder, "session.jsonl")
    log = Writer(path, header, rng, lines, created)
    log.record("permission/mode", {"mode": "workspace-write", "approval": "ask",
                                   "source": "default"})
    turn = 0
    while log.written < size:
        turn += 1
        log.turn(turn)
    log.close()
    if parent is None and rng.random() < 0.15:
        with open(os.path.join(folder, "title"), "w") as f:
            f.write("%s %s work" % (rng.choice(WORDS), rng.choice(WORDS)))
    # The log was last written when its last record was.
    os.utime(path, ns=(log.time * 1_000_000, log.time * 1_000_000))
    return sid, log.written, turn


def main():
    out = sys.argv[1]
    if os.path.exists(out):
        sys.exit("sessions_home.py: %s exists" % out)
    rng = random.Random(1000)
    ws = os.path.join(out, "ws")
    os.makedirs(ws)
    cwd = os.path.realpath(ws)
    sessions_dir = os.path.join(out, "home", "sessions", cwd_slug(cwd))
    os.makedirs(sessions_dir)
    with open(os.path.join(ws, "README.md"), "w") as f:
        f.write("The workspace the benchmark's sessions were recorded in.\n")
    lines = []
    for n in range(4000):
        a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
        lines.append("    let %s = %s_%s(&%s, %d)?;" % (c, a, b, c, rng.randint(0, 99999)))
    # One session every five hours or so, over most of a year; the 100 MB one in the middle.
    order = list(range(SESSIONS))
    rng.shuffle(order)
    made, total = [], 0
    for index in range(SESSIONS):
        created = BASE_MS + order[index] * 18_000_000
        sid, size, turns = write_session(sessions_dir, rng, lines, cwd, created,
                                         target_size(rng, index))
        made.append({"id": sid, "bytes": size, "turns": turns, "createdAt": created})
        total += size
    for n in range(CHILDREN):
        parent = made[rng.randrange(SESSIONS)]
        _, size, _ = write_session(sessions_dir, rng, lines, cwd, parent["createdAt"] + 60_000,
                                   rng.randint(5_000, 200_000), parent=parent["id"])
        total += size
    manifest = {"cwd": cwd, "home": os.path.realpath(os.path.join(out, "home")),
                "sessions": SESSIONS, "children": CHILDREN, "bytes": total,
                "big": made[0]}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote %d sessions and %d subagents' sessions, %d MB, the largest %d MB"
          % (SESSIONS, CHILDREN, total // 1_000_000, made[0]["bytes"] // 1_000_000),
          file=sys.stderr)


if __name__ == "__main__":
    main()
