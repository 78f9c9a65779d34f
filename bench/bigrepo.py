#!/usr/bin/env python3
"""What dsh costs in a real-size repository: the 50,000-file Git tree of bench/bigrepo_tree.py
(about 550 MB, committed), with checkpoints on (the default) and off, against a model server
written here that answers at once (so a run's time is dsh's own): a run of no step, and a run
of one step whose one call is `bash touch`. Each figure is the median of RUNS whole-process
runs, with the same run with checkpoints off beside it, and dsh's peak memory.

With SESSIONS (the home of bench/sessions_home.py), it also times the run on which the day's
prune of the checkpoint store falls, beside a thousand sessions of the workspace, all used
within the days a checkpoint is kept (so each is read), against the same run on another day.

Usage: bigrepo.py DSH_BINARY TREE [SESSIONS]  (bench/bigrepo.sh builds them)
Prints a markdown section for docs/performance.md."""

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

RUNS = 5


class Model(http.server.BaseHTTPRequestHandler):
    """Answers `done` at once; a server started with `calls = True` first asks for one
    `bash touch` (its request carries no tool result yet)."""

    calls = False

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        answered = any(m.get("role") == "tool" for m in request.get("messages", []))
        if self.server.calls and not answered:
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(
                        {"command": "touch bench-touched.txt", "description": "touch"})}}
            delta, reason = {"tool_calls": [call]}, "tool_calls"
        else:
            delta, reason = {"content": "done"}, "stop"
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        body = ("data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(calls):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    server.calls = calls
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def new_home(checkpoints):
    home = tempfile.mkdtemp(prefix="dsh-bench-home-")
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write("[checkpoints]\nenabled = %s\n" % ("true" if checkpoints else "false"))
    return home


def run(binary, tree, server, home):
    """One run; its wall time (ms) and dsh's peak memory (MiB), as `/usr/bin/time` reports it
    (`wait4` in this script would count this script's own pages, copied at the fork)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_HOME": home, "DEEPSEEK_BASE_URL": "http://127.0.0.1:%d" % server.server_address[1],
                "DEEPSEEK_API_KEY": "x"})
    with tempfile.NamedTemporaryFile(mode="r") as out:
        started = time.monotonic()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, binary, "go"],
                              cwd=tree, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL)
        ended = time.monotonic()
        if done.returncode != 0:
            sys.exit("bigrepo.py: dsh failed in %s (status %d)" % (tree, done.returncode))
        return (ended - started) * 1000, int(out.read().split()[-1]) / 1024


def median(xs):
    return sorted(xs)[len(xs) // 2]


def du(path, apparent=False):
    """Bytes `path` takes on disk (whole blocks), or, `apparent`, the bytes its files hold."""
    flags = ["-sb", "--apparent-size"] if apparent else ["-sk"]
    out = subprocess.run(["du", *flags, path], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * (1 if apparent else 1024)


def git_status_ms(tree):
    times = []
    for _ in range(RUNS):
        started = time.monotonic()
        subprocess.run(["git", "-C", tree, "status", "--porcelain"], stdout=subprocess.DEVNULL,
                       check=True)
        times.append((time.monotonic() - started) * 1000)
    return median(times)


def prune_rows(binary, tree, talk, touch, sessions):
    """A run of no step with the day's prune due, and the same run with it done that day; the
    run waits for the prune when it ends, so its time is the prune's too."""
    home = new_home(True)
    for _ in range(3):
        run(binary, tree, touch, home)
    [folder] = os.listdir(os.path.join(home, "sessions"))
    folder = os.path.join(home, "sessions", folder)
    [source] = os.listdir(os.path.join(sessions, "home", "sessions"))
    source = os.path.join(sessions, "home", "sessions", source)
    now = time.time()
    copied = 0
    for name in os.listdir(source):
        shutil.copytree(os.path.join(source, name), os.path.join(folder, name))
        log = os.path.join(folder, name, "session.jsonl")
        os.utime(log, (now, now))
        copied += 1
    logs = du(folder, True)
    [marker] = [os.path.join(root, "last-prune") for root, _, files in
                os.walk(os.path.join(home, "checkpoints")) if "last-prune" in files]
    due, done, peak_due, peak_done = [], [], [], []
    for _ in range(RUNS):
        day_before = time.time() - 2 * 86400
        os.utime(marker, (day_before, day_before))
        t, m = run(binary, tree, talk, home)
        due.append(t)
        peak_due.append(m)
        t, m = run(binary, tree, talk, home)
        done.append(t)
        peak_done.append(m)
    shutil.rmtree(home)
    return copied, logs, (median(due), median(done), median(peak_due), median(peak_done))


def main():
    binary, tree = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    sessions = os.path.realpath(sys.argv[3]) if len(sys.argv) > 3 else None
    talk, touch = serve(False), serve(True)
    files = int(subprocess.run(["git", "-C", tree, "ls-files"], capture_output=True,
                               text=True, check=True).stdout.count("\n"))
    tree_bytes = du(tree, True) - du(os.path.join(tree, ".git"), True)
    rows = []
    # The first run ever in the repository: a new home each time, so a new store.
    for name, server in (("first run ever, no step", talk), ("first run ever, one `bash touch`", touch)):
        on, off, peak, peak_off = [], [], [], []
        grew = []
        for _ in range(RUNS):
            home = new_home(True)
            t, m = run(binary, tree, server, home)
            on.append(t)
            peak.append(m)
            grew.append(du(os.path.join(home, "checkpoints")) if os.path.isdir(
                os.path.join(home, "checkpoints")) else 0)
            shutil.rmtree(home)
            home = new_home(False)
            t, m = run(binary, tree, server, home)
            off.append(t)
            peak_off.append(m)
            shutil.rmtree(home)
        rows.append((name, median(on), median(off), median(peak), median(peak_off), median(grew)))
    # Later runs: the store of an earlier run.
    warm_on, warm_off = new_home(True), new_home(False)
    run(binary, tree, touch, warm_on)
    run(binary, tree, touch, warm_off)
    for name, server in (("later run, no step", talk), ("later run, one `bash touch`", touch)):
        on, off, peak, peak_off = [], [], [], []
        before = du(os.path.join(warm_on, "checkpoints"))
        for _ in range(RUNS):
            t, m = run(binary, tree, server, warm_on)
            on.append(t)
            peak.append(m)
            t, m = run(binary, tree, server, warm_off)
            off.append(t)
            peak_off.append(m)
        grew = (du(os.path.join(warm_on, "checkpoints")) - before) // RUNS
        rows.append((name, median(on), median(off), median(peak), median(peak_off), grew))
    for home in (warm_on, warm_off):
        shutil.rmtree(home)
    pruned = prune_rows(binary, tree, talk, touch, sessions) if sessions else None
    os.remove(os.path.join(tree, "bench-touched.txt"))
    status = git_status_ms(tree)
    print("## A 50,000-file repository (`bench/bigrepo.sh`)\n")
    print("The committed tree of `bench/bigrepo_tree.py`: %d files, %.0f MB (Git's own folder "
          "aside), on this machine; `git status` takes %.0f ms there. A model server that "
          "answers at once, so a run's time is dsh's own; median of %d runs each, checkpoints "
          "on (the default) against the same run with them off. A first run has a new home "
          "(a new checkpoint store); a later run the store of an earlier one.\n"
          % (files, tree_bytes / 1e6, status, RUNS))
    print("| run | checkpoints on (ms) | off (ms) | on − off (ms) | dsh's peak memory, on; off "
          "(MiB) | store growth (MB; % of the tree) |")
    print("|---|---|---|---|---|---|")
    for name, on, off, peak, peak_off, grew in rows:
        print("| %s | %.0f | %.0f | %+.0f | %.1f; %.1f | %.2f; %.2f%% |"
              % (name, on, off, on - off, peak, peak_off, grew / 1e6, 100 * grew / tree_bytes))
    if pruned:
        count, logs, (due, done, peak_due, peak_done) = pruned
        print("\nThe run on which the day's prune of the store falls (a later run, no step), "
              "beside %d sessions of the workspace (%.0f MB of logs), all used within "
              "`checkpoints.keep_days`, so each is read; the run waits for the prune when it "
              "ends. Median of %d runs.\n" % (count, logs / 1e6, RUNS))
        print("| run | ms | dsh's peak memory (MiB) |")
        print("|---|---|---|")
        print("| the day's prune due | %.0f | %.1f |" % (due, peak_due))
        print("| pruned earlier that day | %.0f | %.1f |" % (done, peak_done))
    print("\nTargets (issue 49): a run of no step at most 20 ms more; one call that changes a "
          "file at most 250 ms more; the store at most 2% of the tree after the first run; "
          "dsh at most 30 MB.")


if __name__ == "__main__":
    main()
