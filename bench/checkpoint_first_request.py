#!/usr/bin/env python3
"""How long a run takes to send its first request, and to finish, in a 10,000-file workspace,
with checkpoints on (the first checkpoint of a new store: every file read and stored) and off.
A model server written here answers at once and notes when each request arrived.

Usage: checkpoint_first_request.py DSH_BINARY  (bench/checkpoint-first-request.sh builds one)
Prints a markdown section for docs/performance.md."""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

FILES = 10_000
RUNS = 3


class Model(http.server.BaseHTTPRequestHandler):
    arrivals = []

    def do_POST(self):
        Model.arrivals.append(time.monotonic())
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        chunk = {"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        body = ("data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def workspace():
    ws = tempfile.mkdtemp(prefix="dsh-bench-ws-")
    for i in range(FILES):
        folder = os.path.join(ws, "src", "m%03d" % (i // 100))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "f%d.rs" % i), "w") as f:
            f.write("// file %d\n" % i + "fn f() { let x = 1; }\n" * 90)
    return ws


def new_home(checkpoints):
    home = tempfile.mkdtemp(prefix="dsh-bench-home-")
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write("[checkpoints]\nenabled = %s\n" % ("true" if checkpoints else "false"))
    return home


def run(binary, ws, port, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_HOME": home, "DEEPSEEK_BASE_URL": "http://127.0.0.1:%d" % port,
                "DEEPSEEK_API_KEY": "x"})
    Model.arrivals.clear()
    started = time.monotonic()
    subprocess.run([binary, "go"], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, check=True)
    ended = time.monotonic()
    return (Model.arrivals[0] - started) * 1000, (ended - started) * 1000


def main():
    binary = os.path.realpath(sys.argv[1])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    ws = workspace()
    rows = []
    warm = new_home(True)
    run(binary, ws, port, warm)
    cases = [("off", lambda: new_home(False)),
             ("on, a new store each run", lambda: new_home(True)),
             ("on, the store of an earlier run (nothing changed)", lambda: warm)]
    for name, home in cases:
        first, total = [], []
        for _ in range(RUNS):
            f, t = run(binary, ws, port, home())
            first.append(f)
            total.append(t)
        med = lambda xs: sorted(xs)[len(xs) // 2]
        rows.append((name, med(first), med(total)))
    server.shutdown()
    print("## Checkpoints and the first request (`bench/checkpoint-first-request.sh`)\n")
    print("One answer-at-once run in a workspace of %d files (19 MiB), median of %d; the model "
          "server answers at once, so the run's time is dsh's own. A new store reads and stores "
          "every file (once per workspace); a later run reads only what changed. The turn's "
          "start checkpoint is taken while the first request goes out; the run waits for it "
          "at its end.\n"
          % (FILES, RUNS))
    print("| checkpoints | first request sent after (ms) | run done after (ms) |")
    print("|---|---|---|")
    for name, first, total in rows:
        print("| %s | %.0f | %.0f |" % (name, first, total))


if __name__ == "__main__":
    main()
