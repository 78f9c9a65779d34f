#!/usr/bin/env python3
"""Times `dsh sessions search` over a home of 10,000 sessions in 20 workspaces, and prints the
section of docs/performance.md it measures (bench/sessions_search.sh writes it there).

The sessions are bench/sessions_home.py's kind (tasks, answers, calls of `read`, `bash`, `grep`
and `edit` with their results, compactions), written by its own writer but shorter: 3 KB to
200 KB each, most a few tens of KB, as most real sessions are. The home is built once, under
DIR, with no index beside any log: the first search makes them all (what an upgrade costs once);
every later search reads the indexes alone.

Usage: sessions_search.py BINARY DIR
"""

import json
import os
import resource
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_home  # noqa: E402

SESSIONS = 10_000
WORKSPACES = 20
RUNS = 9


def build(out):
    rng = random.Random(55)
    lines = []
    for n in range(4000):
        a, b, c = rng.choice(sessions_home.WORDS), rng.choice(sessions_home.WORDS), rng.choice(
            sessions_home.WORDS)
        lines.append("    let %s = %s_%s(&%s, %d)?;" % (c, a, b, c, rng.randint(0, 99999)))
    total = 0
    for w in range(WORKSPACES):
        cwd = os.path.join(out, "ws%02d" % w)
        os.makedirs(cwd)
        folder = os.path.join(out, "home", "sessions", sessions_home.cwd_slug(cwd))
        os.makedirs(folder)
        for n in range(SESSIONS // WORKSPACES):
            created = sessions_home.BASE_MS + (w * 1000 + n) * 600_000
            size = int(min(max(rng.lognormvariate(10.2, 0.9), 3_000), 200_000))
            _, written, _ = sessions_home.write_session(folder, rng, lines, cwd, created, size)
            total += written
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"sessions": SESSIONS, "workspaces": WORKSPACES, "bytes": total}, f)


def timed(binary, home, cwd, args):
    """The wall time and the CPU time (user and system) of one search, in ms, and its output."""
    env = dict(os.environ, DSH_HOME=home)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([binary, "sessions", "search", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, out.stdout


def main():
    binary, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.exists(os.path.join(out, "manifest.json")):
        if os.path.exists(out):
            sys.exit("sessions_search.py: %s exists without a manifest; remove it" % out)
        build(out)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    home, cwd = os.path.join(out, "home"), os.path.join(out, "ws00")
    # As after an upgrade: no index beside any log, nor the one for every session.
    for folder, _, files in os.walk(os.path.join(home, "sessions")):
        if "search.idx" in files:
            os.remove(os.path.join(folder, "search.idx"))
    if os.path.exists(os.path.join(home, "search-all.idx")):
        os.remove(os.path.join(home, "search-all.idx"))
    first, first_cpu, _ = timed(binary, home, cwd, ["fetch", "--json"])
    rows = []
    for label, args in [
        ("a word most sessions hold (`token`)", ["token", "--json"]),
        ("two words as a task says them (`handler leaks`)", ["handler", "leaks", "--json"]),
        ("a file a call named (`src/lock/cursor_`)", ["src/lock/cursor_", "--json"]),
        ("a word no session holds (`zebra`)", ["zebra", "--json"]),
    ]:
        times, cpus, found = [], [], ""
        for _ in range(RUNS):
            ms, cpu, found = timed(binary, home, cwd, args)
            times.append(ms)
            cpus.append(cpu)
        hits = len(found.splitlines())
        rows.append((label, statistics.median(times), min(times), max(times),
                     statistics.median(cpus), hits))
    print("## Searching 10,000 sessions (`bench/sessions_search.sh`)\n")
    print("`dsh sessions search TEXT` over a home of %d sessions in %d workspaces (%d MB of logs), "
          "bench/sessions_home.py's kind of session at 3 KB to 200 KB each; %s; "
          "median (fastest–slowest) of %d runs, the search run from one of the workspaces.\n"
          % (manifest["sessions"], manifest["workspaces"], manifest["bytes"] // 1_000_000,
             os.environ.get("BENCH_BUILD", "release build"), RUNS))
    print("| search | goal | wall time | CPU time (user + system) | sessions shown |")
    print("|---|---|---|---|---|")
    print("| the first search after an upgrade (no index yet: each made from its log) "
          "| — | %.0f ms | %.0f ms | — |" % (first, first_cpu))
    for label, median, low, high, cpu, hits in rows:
        met = "met" if median < 200 else "not met"
        print("| %s | < 200 ms | %.1f (%.1f–%.1f) ms, %s | %.1f ms | %d |"
              % (label, median, low, high, met, cpu, hits))
    print("\nLoad average when measured: %.1f (on %d cores)." % (os.getloadavg()[0],
                                                                os.cpu_count()))
    print("\nA search reads one file, `search-all.idx` (every session's index, lowercased), a "
          "session at a time, checks each session's log length against it (one `stat` a "
          "session), and looks at each index's text once for every word before it weighs any "
          "entry; the logs and the indexes beside them are not opened but for the 20 shown "
          "(their best entry as written).")


if __name__ == "__main__":
    main()
