#!/usr/bin/env python3
"""What grows with the repository or the history, at real size: the Git view a run takes
before its first command, instruction discovery, the terminal UI's first frame and its `@`
index in the 50,000-file repository of bench/bigrepo_tree.py; `dsh sessions list`, `dsh
resume`'s picker and the web app's sidebar with the 1,000 sessions of bench/sessions_home.py;
resuming its 100 MB session headless, in the terminal UI and in the web app. Glob and grep
against ripgrep are quoted from the Search section (bench/search.sh, 100,000 files).

A model server written here answers at once (so a run's time is dsh's own) and notes when each
request arrived. Checkpoints are off in every run (bench/bigrepo.sh measures them); each figure
is a median of whole-process runs on a warm page cache.

Usage: growth.py DSH_BINARY BIGREPO SESSIONS_DIR [PART...]
  (bench/growth.sh builds them; PART: git instructions tui search sessions resume)
Prints a markdown section for docs/performance.md."""

import fcntl
import http.server
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULE = ("─" * 20).encode()
READY = b"workspace-write"


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def span(xs, digits=0):
    f = "%%.%df" % digits
    return (f + " (" + f + "–" + f + ")") % (median(xs), min(xs), max(xs))


class Model(http.server.BaseHTTPRequestHandler):
    """Answers `done` at once; a server with `calls` first asks for one `bash true` (the
    request carries no tool result yet). Each request's arrival time is kept."""

    def do_POST(self):
        arrived = time.monotonic()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.arrivals.append((arrived, len(body)))
        request = json.loads(body)
        answered = any(m.get("role") == "tool" for m in request.get("messages", []))
        if self.server.calls and not answered:
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(
                        {"command": "true", "description": "true"})}}
            delta, reason = {"tool_calls": [call]}, "tool_calls"
        else:
            delta, reason = {"content": "done"}, "stop"
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        out = ("data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def serve(calls=False):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    server.calls, server.arrivals = calls, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Bench:
    def __init__(self, binary, bigrepo, sessions):
        self.binary, self.bigrepo = binary, bigrepo
        self.manifest = json.loads((Path(sessions) / "manifest.json").read_text())
        self.scratch = tempfile.mkdtemp(prefix="dsh-bench-growth-")
        self.patch = os.path.join(self.scratch, "off.toml")
        with open(self.patch, "w") as f:
            f.write("[checkpoints]\nenabled = false\n")
        self.home = os.path.join(self.scratch, "home")
        os.makedirs(self.home)
        # A one-file repository, for what the same run costs where the tree is small.
        self.small = os.path.join(self.scratch, "small")
        os.makedirs(self.small)
        with open(os.path.join(self.small, "README.md"), "w") as f:
            f.write("small\n")
        for args in (["init", "-q"], ["add", "-A"],
                     ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"]):
            subprocess.run(["git", "-C", self.small, *args], check=True)
        self.rows = []

    def env(self, server, home=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
        env.update({"DSH_HOME": home or self.home, "HOME": home or self.home,
                    "DEEPSEEK_API_KEY": "bench", "TERM": "xterm-256color",
                    "DEEPSEEK_BASE_URL": "http://127.0.0.1:%d" % server.server_address[1]})
        return env

    def row(self, what, measured, goal="—", verdict="reported"):
        self.rows.append((what, goal, measured, verdict))

    def headless(self, server, cwd, args, home=None):
        """One run: exec → first request (ms), wall (ms), the requests' arrivals."""
        server.arrivals.clear()
        started = time.monotonic()
        child = subprocess.Popen([self.binary, "--patch", self.patch, *args], cwd=cwd,
                                 env=self.env(server, home), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, _ = os.wait4(child.pid, 0)
        ended = time.monotonic()
        err = child.stderr.read().decode(errors="replace")
        child.stderr.close()
        if status != 0:
            sys.exit("growth.py: dsh %s failed in %s: %s" % (args, cwd, err[-1000:]))
        first = (server.arrivals[0][0] - started) * 1000 if server.arrivals else float("nan")
        return first, (ended - started) * 1000, list(server.arrivals)


class Screen:
    """Just enough of a terminal to read what a frame drawn as differences shows: cursor moves
    (`ESC [ row ; col H`) and printed text; other sequences are passed over."""

    SEQUENCE = re.compile(rb"\x1b\[([0-9;?]*)([@-~])|\x1b[^\[]|([^\x1b\r\n]+)|(\r)|(\n)")

    def __init__(self):
        self.rows, self.row, self.col = {}, 0, 0

    def feed(self, data):
        for m in self.SEQUENCE.finditer(data):
            if m.group(2) == b"H":
                parts = (m.group(1).decode() or "1;1").split(";")
                self.row = int(parts[0] or 1) - 1
                self.col = int(parts[1] or 1) - 1 if len(parts) > 1 else 0
            elif m.group(3):
                text = m.group(3).decode("utf-8", "replace")
                line = self.rows.setdefault(self.row, [])
                line.extend(" " * (self.col + len(text) - len(line)))
                line[self.col:self.col + len(text)] = text
                self.col += len(text)
            elif m.group(4):
                self.col = 0
            elif m.group(5):
                self.row += 1

    def shows(self, text):
        return any(text in "".join(line) for line in self.rows.values())


def peak_rss(argv, cwd, env, after=None):
    """dsh's peak memory (MiB) in a run of its own, as `/usr/bin/time` reports it: the
    resource usage a parent as large as this script reads with `wait4` counts the parent's
    own pages, copied at the fork. `after` is called once the run has ended."""
    with tempfile.NamedTemporaryFile(mode="r") as out:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *argv], cwd=cwd, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        if after:
            after()
        return int(out.read().split()[-1]) / 1024


def pty_run(binary, argv, cwd, env, until, typed=(), deadline=20.0, settle=False):
    """Runs dsh on an 80x24 pseudo-terminal, answering its cursor queries; `until` is a list
    of (name, predicate on the bytes so far, what was typed where, the screen); `typed`
    (after, bytes): written once `after` was seen. With `settle`, reading goes on until the
    UI has written nothing for 0.3 s: `settled` is when it last wrote. Returns {name: ms from
    exec} and the bytes written."""
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.chdir(cwd)
        os.execve(binary, [binary, *argv], env)
    started = time.monotonic()
    seen = bytearray()
    screen = Screen()
    marks, pending = {}, list(typed)
    sent = {}
    end = started + deadline
    try:
        while any(name not in marks for name, _ in until) and time.monotonic() < end:
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                break
            now = time.monotonic()
            seen += chunk
            screen.feed(chunk)
            for _ in range(chunk.count(b"\x1b[6n")):
                os.write(fd, b"\x1b[1;1R")
            for name, test in until:
                if name not in marks and test(seen, sent, screen):
                    marks[name] = (now - started) * 1000
            for after, data in list(pending):
                if after in marks:
                    pending.remove((after, data))
                    sent[data] = len(seen)
                    marks["sent " + data.decode()] = (time.monotonic() - started) * 1000
                    os.write(fd, data)
        last = time.monotonic()
        while settle and time.monotonic() < end:
            if not select.select([fd], [], [], 0.3)[0]:
                break
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                break
            last = time.monotonic()
            seen += chunk
            for _ in range(chunk.count(b"\x1b[6n")):
                os.write(fd, b"\x1b[1;1R")
        marks["settled"] = (last - started) * 1000
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    missing = [name for name, _ in until if name not in marks]
    if missing:
        sys.exit("growth.py: the UI never showed %s; it wrote: %r" % (missing, bytes(seen[-800:])))
    return marks, len(seen)


# -- the repository -------------------------------------------------------------------------

def git_view(b):
    """What the repository's size adds to a run's first command: Git's view of the workspace
    (crates/dsh-sandbox git_view.rs) is taken before it runs."""
    server = serve(calls=True)
    firsts = {"big": [], "small": []}
    # Taken in turn, so that what else the machine does falls on each alike.
    for _ in range(9):
        for name, cwd in (("big", b.bigrepo), ("small", b.small)):
            arrivals = b.headless(server, cwd, ["run true"])[2]
            # The first request's answer asks for the call; the second carries its result.
            firsts[name].append((arrivals[1][0] - arrivals[0][0]) * 1000)
    big, small = firsts["big"], firsts["small"]
    extra = median(big) - median(small)
    b.row("a run's first command (`bash true`, sandboxed; Git view, sandbox start, the call), "
          "50,000-file repository", "%s ms" % span(big, 1))
    b.row("the same in a one-file repository (the first command)", "%s ms" % span(small, 1))
    b.row("what the repository's size adds to the first command", "%+.1f ms" % extra,
          "≤ 20 ms", "met" if extra <= 20 else "missed")
    server.shutdown()


def instructions(b):
    """Exec → first request of a run of no step (instruction discovery is on its way), at the
    repository's root, four folders down, and in the one-file repository."""
    server = serve()
    nested = os.path.join(b.bigrepo, "services", "service00", "src", "m000")
    got = {"root": [], "nested": [], "small": []}
    # Taken in turn, so that what else the machine does falls on each alike.
    for _ in range(15):
        for name, cwd in (("root", b.bigrepo), ("nested", nested), ("small", b.small)):
            got[name].append(b.headless(server, cwd, ["go"])[0])
    extra = max(median(got["root"]), median(got["nested"])) - median(got["small"])
    b.row("exec → first request, 50,000-file repository (at its root / four folders down)",
          "%s / %s ms" % (span(got["root"], 1), span(got["nested"], 1)))
    b.row("the same in a one-file repository (exec → first request)",
          "%s ms" % span(got["small"], 1))
    b.row("what the repository's size adds before the first request (instruction discovery "
          "looks only at the folders from the root to the working directory)", "%+.1f ms" % extra,
          "≤ 5 ms", "met" if extra <= 5 else "missed")
    server.shutdown()


def tui(b):
    """The terminal UI in the 50,000-file repository: its first frame, then `@` typed at
    once, and the time until the popup shows a match; then one more key."""
    server = serve()
    env = b.env(server)
    firsts, ready, keyed = [], [], []
    # `@f0123` lists f01230 to f01235 (six of the ten that match as well, the shortest
    # paths first, then by name); one more `9` brings f01239 to the top.
    query, key = b"@f0123", b"9"
    for _ in range(5):
        marks, _ = pty_run(
            b.binary, ["--patch", b.patch], b.bigrepo, env,
            until=[("frame", lambda t, s, v: RULE in t),
                   ("ready", lambda t, s, v: READY in t),
                   ("matched", lambda t, s, v: query in s and b"f01230." in t[s[query]:]),
                   ("narrowed", lambda t, s, v: key in s and v.shows("f01239."))],
            typed=[("ready", query), ("matched", key)])
        firsts.append(marks["frame"])
        ready.append(marks["matched"] - marks["sent @f0123"])
        keyed.append(marks["narrowed"] - marks["sent 9"])
    small = []
    for _ in range(5):
        marks, _ = pty_run(b.binary, ["--patch", b.patch], b.small, env,
                           until=[("frame", lambda t, s, v: RULE in t)])
        small.append(marks["frame"])
    b.row("terminal UI: exec → first frame, 50,000-file repository", "%s ms" % span(firsts, 1),
          "< 30 ms", "met" if median(firsts) < 30 else "missed")
    b.row("the same in a one-file repository (first frame)", "%s ms" % span(small, 1))
    b.row("terminal UI: `@` typed once the session is ready → the first match shown (the "
          "index of the workspace's files built)", "%s ms" % span(ready),
          "≤ 1000 ms", "met" if median(ready) <= 1000 else "missed")
    b.row("terminal UI: one more key in the mention → the matches redrawn (50,000 paths)",
          "%s ms" % span(keyed, 1), "< 50 ms", "met" if median(keyed) < 50 else "missed")
    server.shutdown()


def search(b):
    """Glob and grep against ripgrep: quoted from the Search section (bench/search.sh)."""
    doc = (ROOT / "docs" / "performance.md").read_text()
    for kind in ("glob", "grep"):
        found = re.search(r"^\| `%s` over ([\d,]+) files, against rg \| ([^|]+) \| ([^|]+) \| (\w+) \|"
                          % kind, doc, re.M)
        if found:
            b.row("`%s` over %s files against ripgrep (quoted from Search, `bench/search.sh`)"
                  % (kind, found.group(1)), found.group(3).strip(), found.group(2).strip(),
                  found.group(4))


# -- the history ----------------------------------------------------------------------------

def listing_files(folder):
    """Files a listing may have kept beside a session's log (anything but the log, its lock
    and its title)."""
    return [p for p in Path(folder).glob("*/*/*") if p.name not in (
        "session.jsonl", "session.jsonl.zst", "session.lock", "title")]


def sessions(b):
    m = b.manifest
    home, cwd = m["home"], m["cwd"]
    server = serve()
    env = b.env(server, home)
    kept = listing_files(Path(home) / "sessions")
    # The first listing of logs no listing has seen (what a dsh from before an index finds),
    # then every later one.
    for p in kept:
        p.unlink()
    first = []
    started = time.monotonic()
    subprocess.run([b.binary, "sessions", "list"], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    first.append((time.monotonic() - started) * 1000)
    later = []
    for _ in range(9):
        started = time.monotonic()
        subprocess.run([b.binary, "sessions", "list"], cwd=cwd, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        later.append((time.monotonic() - started) * 1000)
    rss = [peak_rss([b.binary, "sessions", "list"], cwd, env) for _ in range(3)]
    b.row("`dsh sessions list`, 1,000 sessions (%d MB of logs), the first listing after an "
          "upgrade (no index yet)" % (m["bytes"] // 1_000_000), "%.0f ms" % first[0])
    b.row("`dsh sessions list`, 1,000 sessions, every later listing", "%s ms (%.0f MiB)"
          % (span(later, 1), median(rss)), "< 100 ms", "met" if median(later) < 100 else "missed")
    picked = []
    for _ in range(5):
        marks, _ = pty_run(b.binary, ["resume", "--patch", b.patch], cwd, env,
                           until=[("picker", lambda t, s, v: b"Resume a session" in t)])
        picked.append(marks["picker"])
    b.row("`dsh resume`: exec → the picker drawn, 1,000 sessions", "%s ms" % span(picked, 1),
          "< 100 ms", "met" if median(picked) < 100 else "missed")
    web, base, token = start_web(b.binary, cwd, env)
    sidebar = []
    for _ in range(9):
        started = time.monotonic()
        api(base, token, "GET", "/api/sessions")
        sidebar.append((time.monotonic() - started) * 1000)
    stop_web(web)
    b.row("web app: `GET /api/sessions` (the sidebar), 1,000 sessions", "%s ms" % span(sidebar, 1),
          "< 100 ms", "met" if median(sidebar) < 100 else "missed")
    server.shutdown()


def start_web(binary, cwd, env):
    web = subprocess.Popen([binary, "web", "--port", "0"], env=env, cwd=cwd,
                           stdout=subprocess.PIPE, text=True)
    url = web.stdout.readline().strip().removeprefix("dsh web: open ")
    base, token = url.split("/#token=")
    return web, base, token


def stop_web(web):
    web.terminate()
    web.wait()
    web.stdout.close()


def api(base, token, method, path, body=None, raw=False):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": "Bearer " + token, "Origin": base, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return answer.read() if raw else json.load(answer)


class Restored:
    """Puts the session's folder back as it was after each run: the log cut to its length,
    files made since removed, files changed put back."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.log = self.folder / "session.jsonl"
        self.size = self.log.stat().st_size
        self.files = {p.name: p.read_bytes() for p in self.folder.iterdir()
                      if p.is_file() and p.name != "session.jsonl"}

    def restore(self):
        os.truncate(self.log, self.size)
        for p in self.folder.iterdir():
            if p.name == "session.jsonl":
                continue
            if p.name not in self.files:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            elif p.read_bytes() != self.files[p.name]:
                p.write_bytes(self.files[p.name])


def resume(b):
    m = b.manifest
    home, cwd, big = m["home"], m["cwd"], m["big"]["id"]
    folder = next((Path(home) / "sessions").glob("*/" + big))
    saved = Restored(folder)
    mb = saved.size / 1e6
    server = serve()
    env = b.env(server, home)
    firsts, walls, rss, sent = [], [], [], []
    try:
        args = ["--session-id", big, "one more"]
        for _ in range(3):
            first, wall, arrivals = b.headless(server, cwd, args, home)
            saved.restore()
            firsts.append(first)
            walls.append(wall)
            sent.append(arrivals[0][1])
            rss.append(peak_rss([b.binary, "--patch", b.patch, *args], cwd, env, saved.restore))
        b.row("resume the %.0f MB session headless (`--session-id`, one turn): exec → first "
              "request" % mb, "%s ms" % span(firsts), "< 1000 ms",
              "met" if median(firsts) < 1000 else "missed")
        b.row("the same: wall time; dsh's peak memory; the first request's size",
              "%.0f ms; %.0f MiB; %.1f MB" % (median(walls), median(rss), median(sent) / 1e6),
              "memory < 30 MiB", "met" if median(rss) < 30 else "missed")
        opened, wrote = [], []
        for _ in range(3):
            marks, written = pty_run(
                b.binary, ["--patch", b.patch, "--session-id", big], cwd, env,
                until=[("frame", lambda t, s, v: RULE in t),
                       ("resumed", lambda t, s, v: b"resumed session" in t and READY in t)],
                deadline=120, settle=True)
            saved.restore()
            opened.append(marks["settled"])
            wrote.append(written)
        b.row("terminal UI: exec → the %.0f MB session open and drawn" % mb,
              "%s ms (%.1f MB written to the terminal)" % (span(opened), median(wrote) / 1e6),
              "< 1000 ms", "met" if median(opened) < 1000 else "missed")
        web_open, backlog = [], []
        for _ in range(3):
            web, base, token = start_web(b.binary, cwd, env)
            try:
                started = time.monotonic()
                api(base, token, "POST", "/api/sessions", {"cwd": cwd, "resume": big})
                events = events_until_ready(base, token, big)
                web_open.append((time.monotonic() - started) * 1000)
                backlog.append(events)
            finally:
                stop_web(web)
                saved.restore()
        b.row("web app: open the %.0f MB session (`POST /api/sessions`, then its events until "
              "`ready`)" % mb, "%s ms (%.1f MB of events)" % (span(web_open), median(backlog) / 1e6),
              "< 1000 ms", "met" if median(web_open) < 1000 else "missed")
    finally:
        saved.restore()
        server.shutdown()


def events_until_ready(base, token, sid):
    """Reads the session's event stream until its `ready` report; the bytes read."""
    request = urllib.request.Request(base + "/api/sessions/%s/events?token=%s" % (sid, token),
                                     headers={"Origin": base})
    read = 0
    with urllib.request.urlopen(request, timeout=600) as stream:
        for line in stream:
            read += len(line)
            if line.startswith(b"data:") and b'"kind":"ready"' in line:
                return read
    return read


BEFORE = ROOT / "bench" / "growth-before.json"


def measure(binary, bigrepo, sessions_dir, parts):
    b = Bench(binary, bigrepo, sessions_dir)
    try:
        for part in parts:
            {"git": git_view, "instructions": instructions, "tui": tui, "search": search,
             "sessions": sessions, "resume": resume}[part](b)
    finally:
        shutil.rmtree(b.scratch, ignore_errors=True)
    return b


def main():
    args = sys.argv[1:]
    before_binary = None
    if "--before" in args:
        at = args.index("--before")
        before_binary = os.path.realpath(args[at + 1])
        del args[at:at + 2]
    binary, bigrepo, sessions_dir = (os.path.realpath(a) for a in args[:3])
    parts = args[3:] or ["git", "instructions", "tui", "search", "sessions", "resume"]
    # The figures of a build from before this benchmark's fixes, kept beside it: measured
    # once (`--before OLD_BINARY`), shown beside every later run's.
    before = json.loads(BEFORE.read_text()) if BEFORE.exists() else {}
    if before_binary:
        old = measure(before_binary, bigrepo, sessions_dir, parts)
        before.update({what: measured for what, _, measured, _ in old.rows})
        BEFORE.write_text(json.dumps(before, indent=1, ensure_ascii=False) + "\n")
    b = measure(binary, bigrepo, sessions_dir, parts)
    files = subprocess.run(["git", "-C", bigrepo, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.count("\n")
    print("## What grows with the repository or the history (`bench/growth.sh`)\n")
    print("In the committed %s-file repository of `bench/bigrepo_tree.py`, and with the home of "
          "`bench/sessions_home.py`: 1,000 sessions (and 40 subagents' sessions) in one "
          "workspace, %d MB of logs, the longest 100 MB (%s turns, compacted as it went). A "
          "model server that answers at once; checkpoints off; release build; median "
          "(fastest–slowest) of 3 to 9 runs. *Before* is the build this benchmark was first "
          "run on, before the fixes of issue 49 (`bench/growth-before.json`).\n"
          % (format(files, ","), b.manifest["bytes"] // 1_000_000,
             format(b.manifest["big"]["turns"], ",")))
    print("| measure | goal | before | now | |")
    print("|---|---|---|---|---|")
    for what, goal, measured, verdict in b.rows:
        print("| %s | %s | %s | %s | %s |" % (what, goal, before.get(what, "—"), measured, verdict))
    print("\nWhat changed since *before*: each session's log has a listing beside it "
          "(`listing.json`, kept by the run at each turn's end), which lists read instead of "
          "the log, reading only records a listing does not cover (a log written by an older "
          "dsh is read whole once: the first listing above); a resume reads the log a record "
          "at a time and holds only the history it leaves; the terminal UI and the web app "
          "show a resumed session's last 50 turns, read from where they start; the Git view "
          "reads the index's gitlinks itself instead of asking `git ls-files --stage` for "
          "every entry. Instruction discovery, the first frame and the `@` index (built in the "
          "background at the first `@`) did not grow with the repository; glob and grep are "
          "measured at 100,000 files in Search.")


if __name__ == "__main__":
    main()
