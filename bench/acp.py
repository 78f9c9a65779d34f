#!/usr/bin/env python3
"""`dsh acp`'s own cost: the round trip of a `session/prompt` whose model answers at once (the
scripted server on loopback), so the time is the agent's (request built and sent, stream read,
updates told, the turn logged), plus `session/new` and the agent's memory. The client is this
script, speaking JSON-RPC lines on the agent's stdio as an editor does.

Usage: bench/acp.py [PROMPTS] (bench/acp.sh builds the release binaries first). Prints a
markdown section; with DSH_BENCH_SUMMARY set, also appends the figures for the targets table."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DSH = ROOT / "target" / "release" / "dsh"
SERVER = ROOT / "target" / "release" / "scripted-server"
PROMPTS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
# Fresh agents timed from exec to a session.
STARTS = 10


class Agent:
    def __init__(self, base_url, home, ws):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "DSH_HOME": home,
            "DEEPSEEK_BASE_URL": base_url,
            "DEEPSEEK_API_KEY": "bench-key",
        }
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(DSH), "acp"], cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.next_id = 0

    def call(self, method, params):
        self.next_id += 1
        ident = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method} failed: {message['error']}")
                return message["result"]

    def peak_rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main():
    # One step: the scripted server answers every request with "done" at once.
    server = subprocess.Popen(
        [str(SERVER), "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    base_url = server.stdout.readline().strip()
    home = tempfile.mkdtemp(prefix="dsh-bench-home-")
    ws = tempfile.mkdtemp(prefix="dsh-bench-ws-")
    # Start-up: fresh agents, the first one only warming the page cache.
    inits, opens = [], []
    for start in range(STARTS + 1):
        agent = Agent(base_url, home, ws)
        agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        initialized = (time.perf_counter() - agent.started) * 1000
        started = time.perf_counter()
        session = agent.call("session/new", {"cwd": ws, "mcpServers": []})["sessionId"]
        opened = (time.perf_counter() - started) * 1000
        if start > 0:
            inits.append(initialized)
            opens.append(opened)
        if start < STARTS:
            agent.close()
    trips = []
    for i in range(PROMPTS):
        started = time.perf_counter()
        result = agent.call(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": f"prompt {i}"}]},
        )
        trips.append((time.perf_counter() - started) * 1000)
        assert result["stopReason"] == "end_turn", result
    rss = agent.peak_rss_mib()
    agent.close()
    server.stdin.close()
    server.wait(timeout=30)

    trips.sort()
    median = statistics.median(trips)
    p90 = trips[int(len(trips) * 0.9)]
    print("## `dsh acp` (`bench/acp.sh`)")
    print()
    print(
        f"An editor's round trip through `dsh acp` on loopback, the model answering at once "
        f"(the scripted server), {PROMPTS} prompts in one session: the time is the agent's own."
    )
    print()
    print("| measure | median | p90 |")
    print("|---|---|---|")
    print(f"| exec to `initialize` answered ({STARTS} agents) | {statistics.median(inits):.1f} ms | {sorted(inits)[-1]:.1f} ms (slowest) |")
    print(f"| `session/new` ({STARTS} agents) | {statistics.median(opens):.1f} ms | {sorted(opens)[-1]:.1f} ms (slowest) |")
    print(f"| `session/prompt` round trip (a one-step answer) | {median:.2f} ms | {p90:.2f} ms |")
    print(f"| peak RSS after {PROMPTS} prompts | {rss:.1f} MiB | |")
    summary = os.environ.get("DSH_BENCH_SUMMARY")
    if summary:
        with open(summary, "a") as f:
            for metric, value in (("acp_prompt_ms", median), ("acp_rss_mib", rss)):
                f.write(json.dumps({"metric": metric, "value": value}) + "\n")


if __name__ == "__main__":
    main()
