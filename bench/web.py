#!/usr/bin/env python3
"""dsh web's numbers: start to page served, first paint of a 1,000-message session, the
latency of an event from the model to the browser, and the server's memory with 10 sessions
open. A model server written here answers at once (and stamps the time it sent each answer);
the browser is Debian's Chromium driven by Playwright.

Usage: web.py DSH_BINARY  (bench/web.sh builds a release binary)
Prints a markdown section for docs/performance.md."""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STEPS = 500  # each step an answer with a call and its result: about 1,000 messages
SESSIONS = 10


class Model(http.server.BaseHTTPRequestHandler):
    """Calls `todo_write` until the request holds STEPS results, then answers; a task that
    says `ping` is answered at once with the time it was sent."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        messages = body.get("messages", [])
        results = sum(1 for m in messages if m.get("role") == "tool")
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = json.dumps(last_user.get("content", ""))
        if "ping" in text:
            delta = {"content": "sent-at %.6f" % time.time()}
            finish = "stop"
        elif "long" in text and results < STEPS:
            call = {"index": 0, "id": "call_%d" % results, "type": "function",
                    "function": {"name": "todo_write", "arguments": json.dumps(
                        {"todos": [{"content": "step %d" % results, "status": "in_progress"}]})}}
            delta = {"tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta = {"content": "done"}
            finish = "stop"
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        out = ("data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def environment(home, port):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_HOME": home, "DEEPSEEK_BASE_URL": "http://127.0.0.1:%d" % port,
                "DEEPSEEK_API_KEY": "bench"})
    return env


def start_web(binary, env, ws):
    started = time.monotonic()
    web = subprocess.Popen([binary, "web", "--port", "0"], env=env, cwd=ws,
                           stdout=subprocess.PIPE, text=True)
    url = web.stdout.readline().strip().removeprefix("dsh web: open ")
    base, token = url.split("/#token=")
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
    return web, url, base, token, (time.monotonic() - started) * 1000


def api(base, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": "Bearer " + token, "Origin": base, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    binary = os.path.abspath(sys.argv[1])
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    port = model.server_address[1]
    home = tempfile.mkdtemp(prefix="dsh-bench-web-home-")
    ws = tempfile.mkdtemp(prefix="dsh-bench-web-ws-")
    env = environment(home, port)

    # A long session, made by a headless run.
    made = subprocess.run([binary, "--max-steps", str(STEPS + 10), "a long session"],
                          env=env, cwd=ws, capture_output=True, text=True)
    if made.returncode != 0:
        sys.exit("the long session failed: " + made.stderr[-2000:])

    served = []
    for _ in range(5):
        web, url, base, token, took = start_web(binary, env, ws)
        served.append(took)
        web.terminate()
        web.wait()
        web.stdout.close()

    web, url, base, token, _ = start_web(binary, env, ws)
    paints, latencies = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(3):
            page = browser.new_page()
            page.goto(url)
            link = page.locator("#sessions a", has_text="a long session")
            link.wait_for()
            began = time.monotonic()
            link.click()
            page.locator("#transcript .message.assistant", has_text="done").last.wait_for(timeout=120_000)
            paints.append((time.monotonic() - began) * 1000)
            page.close()
        page = browser.new_page()
        page.goto(url)
        # The first screen's composer starts a session with its first message.
        page.locator("#welcome").wait_for()
        page.fill("#prompt", "start")
        page.press("#prompt", "Enter")
        page.locator("#transcript .message.assistant").first.wait_for()
        page.wait_for_function("() => document.getElementById('stop').disabled")
        page.evaluate("""() => {
            window.arrivals = [];
            const id = new URLSearchParams(location.hash.slice(1)).get("session");
            const token = localStorage.getItem("dsh-token");
            const source = new EventSource(`/api/sessions/${id}/events?token=${token}`);
            source.onmessage = (m) => {
                const found = m.data.match(/sent-at ([0-9.]+)/);
                if (found && m.data.includes('"kind":"delta"')) window.arrivals.push([Date.now() / 1000, +found[1]]);
            };
        }""")
        for i in range(20):
            page.fill("#prompt", "ping %d" % i)
            page.press("#prompt", "Enter")
            page.wait_for_function("n => window.arrivals.length > n", arg=i)
            page.locator("#stop").wait_for(state="attached")
            page.wait_for_function("() => document.getElementById('stop').disabled")
        latencies = [(arrived - sent) * 1000 for arrived, sent in page.evaluate("window.arrivals")]
        browser.close()

    web.terminate()
    web.wait()
    web.stdout.close()

    # Memory: a fresh server, then with SESSIONS new sessions open.
    web, url, base, token, _ = start_web(binary, env, ws)
    before = rss_mib(web.pid)
    for _ in range(SESSIONS):
        api(base, token, "POST", "/api/sessions", {"cwd": ws})
    with_sessions = rss_mib(web.pid)
    weight, weight_gzip, files = page_weight(base)
    web.terminate()
    web.wait()
    web.stdout.close()

    med = statistics.median
    print("## dsh web\n")
    print("Measured by `bench/web.sh` (release build, Debian Chromium via Playwright, a model "
          "server on loopback that answers at once; %s).\n" % time.strftime("%Y-%m-%d"))
    print("| what | result |")
    print("|---|---|")
    print("| start to page served (`dsh web` started, `GET /` answered; median of %d) | %.0f ms |"
          % (len(served), med(served)))
    print("| first paint of a %d-message session (click in the sidebar to its last answer drawn; median of %d) | %.0f ms |"
          % (STEPS * 2, len(paints), med(paints)))
    print("| event latency, model to browser (answer sent to its first piece in the page; median of %d, max %.1f ms) | %.1f ms |"
          % (len(latencies), max(latencies), med(latencies)))
    print("| server memory, no session open | %.1f MiB |" % before)
    print("| server memory, %d sessions open | %.1f MiB |" % (SESSIONS, with_sessions))
    print("| the page's weight: `/` and the %d files it loads, as served (and gzip -9 of each) "
          "| %.1f KB (%.1f KB) |" % (files, weight / 1000, weight_gzip / 1000))


def page_weight(base):
    """The bytes of the page and of each script, style sheet and icon it names, as the server
    sends them, and what gzip -9 makes of each; and how many files it names."""
    import gzip
    import re

    def fetch(path):
        with urllib.request.urlopen(base + path, timeout=10) as answer:
            return answer.read()

    page = fetch("/")
    named = sorted(set(re.findall(rb'(?:src|href)="(/[^"#?]+)"', page)))
    bodies = [page] + [fetch(path.decode()) for path in named]
    return (sum(len(b) for b in bodies), sum(len(gzip.compress(b, 9)) for b in bodies),
            len(named))


if __name__ == "__main__":
    main()
