#!/usr/bin/env python3
"""Where a bubblewrap start's time goes: `true` run bare, then under bwrap with the options of
dsh's `workspace-write` profile (crates/dsh-sandbox/src/bwrap.rs) added one group at a time,
each start timed from this process (fork, exec, wait). The differences between rows are what
each part costs; the first bwrap row is the user and mount namespaces and the read-only root.

Usage: bench/bwrap.py [RUNS] (default 300). Prints a markdown section (bench/bwrap.sh puts it
in docs/performance.md)."""

import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def timed(argv):
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main():
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit("bwrap is not installed (apt-get install bubblewrap)")
    ws = tempfile.mkdtemp(prefix="dsh-bench-ws-")
    steps = [
        ("`true`, no sandbox", [], False),
        ("bwrap: user and mount namespaces, `/` read-only", ["--ro-bind", "/", "/"], True),
        ("+ a private `/dev`", ["--dev", "/dev"], True),
        ("+ a PID namespace and its `/proc`", ["--unshare-pid", "--proc", "/proc"], True),
        ("+ `--die-with-parent`, `--cap-drop ALL`, an IPC namespace",
         ["--die-with-parent", "--cap-drop", "ALL", "--unshare-ipc"], True),
        ("+ a private `/tmp`, the workspace bound writable", ["--tmpfs", "/tmp", "--bind", ws, ws], True),
        ("+ a protected path (an absent `.dsh/`, read-only)",
         ["--tmpfs", ws + "/.dsh", "--remount-ro", ws + "/.dsh"], True),
        ("+ a network namespace (`sandbox.network = false`)", ["--unshare-net"], True),
    ]
    rows = []
    options = []
    previous = None
    for name, added, sandboxed in steps:
        options += added
        argv = ([bwrap] + options + ["true"]) if sandboxed else ["true"]
        median = timed(argv)
        rows.append((name, median, None if previous is None else median - previous))
        previous = median
    bare = rows[0][1]
    print("## Where bubblewrap's time goes (`bench/bwrap.sh`)")
    print()
    print(
        f"Each row adds the options of dsh's `workspace-write` profile to the row above, timed "
        f"from a Python parent (fork, exec, wait; median of {RUNS}). What a command pays for "
        f"bubblewrap is the last-but-one row less the first: {rows[-2][1] - bare:.2f} ms with "
        f"the network on, {rows[-1][1] - bare:.2f} ms off. Namespaces and the root's mount are "
        "most of it, and they are paid again by every command: only a sandbox that outlives "
        "one command (set up once per run, forking each command inside it) gets under 1 ms. "
        "That is what dsh does by default (the sandbox helper, docs/sandbox.md): the tool-path "
        "rows above show a command's cost through it and with a `bwrap` of its own."
    )
    print()
    print("| start | median (ms) | added (ms) |")
    print("|---|---|---|")
    for name, median, added in rows:
        shown = "" if added is None else f"{added:+.2f}"
        print(f"| {name} | {median:.2f} | {shown} |")


if __name__ == "__main__":
    main()
