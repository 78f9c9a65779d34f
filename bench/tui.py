#!/usr/bin/env python3
"""The terminal UI's start: exec to its first frame and to a session ready for typing, and its
memory, on an 80x24 pseudo-terminal. The script plays the terminal: it answers the cursor
position queries the UI makes (as any terminal does) and reads what the UI draws.

Usage: bench/tui.py [RUNS] (bench/tui.sh builds the release binary first). Prints a markdown
section; with DSH_BENCH_SUMMARY set, also appends the figures for the targets table."""

import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DSH = ROOT / "target" / "release" / "dsh"
SERVER = ROOT / "target" / "release" / "scripted-server"
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
RULE = "─" * 20
# The footer once the session is open: model and sandbox.
READY = "workspace-write"


def one_run(base_url, home, ws):
    pid, fd = pty.fork()
    if pid == 0:
        # The terminal's size is set before dsh starts, as a terminal emulator's is.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.chdir(ws)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            # A home of its own: no user skills or config in the figures.
            "HOME": home,
            "TERM": "xterm-256color",
            "DEEPSEEK_BASE_URL": base_url,
            "DEEPSEEK_API_KEY": "bench-key",
            "DSH_HOME": home,
        }
        os.execve(str(DSH), [str(DSH)], env)
    started = time.perf_counter()
    seen = b""
    first_frame = ready = None
    deadline = started + 10
    while ready is None and time.perf_counter() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.5)
        if not readable:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        seen += chunk
        # Answer every cursor position query, as a terminal does.
        for _ in range(chunk.count(b"\x1b[6n")):
            os.write(fd, b"\x1b[1;1R")
        text = seen.decode("utf-8", "replace")
        now = time.perf_counter()
        if first_frame is None and RULE in text:
            first_frame = now
        if READY in text:
            ready = now
    rss_kib = None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss_kib = int(line.split()[1])
    except OSError:
        pass
    os.write(fd, b"\x04")  # Ctrl-D on the empty composer quits.
    end = time.perf_counter() + 5
    while time.perf_counter() < end:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        try:
            if select.select([fd], [], [], 0.1)[0]:
                os.read(fd, 65536)
        except OSError:
            pass
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)
    if first_frame is None or ready is None:
        raise SystemExit(f"the UI did not draw its first frame; it wrote: {seen[-500:]!r}")
    return (first_frame - started) * 1000, (ready - started) * 1000, rss_kib / 1024


def main():
    for binary in (DSH, SERVER):
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: run bench/tui.sh, which builds it")
    server = subprocess.Popen(
        [str(SERVER), "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    base_url = server.stdout.readline().strip()
    frames, readies, rss = [], [], []
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as ws:
        for _ in range(RUNS):
            frame, ready, mib = one_run(base_url, home, ws)
            frames.append(frame)
            readies.append(ready)
            rss.append(mib)
    server.stdin.close()
    server.wait()
    med = statistics.median
    span = lambda xs: f"{med(xs):.1f} ({min(xs):.1f}–{max(xs):.1f})"
    print("## The terminal UI (`bench/tui.sh`)")
    print()
    print(
        f"`dsh` with no task on an 80x24 pseudo-terminal, median of {RUNS} runs (fastest–slowest); "
        "the script answers the UI's cursor position queries as a terminal would. The first "
        "frame is the live area drawn (composer and status line); ready is the session open "
        "and its model in the status line. Memory is the peak RSS at that moment."
    )
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| exec → first frame | {span(frames)} ms |")
    print(f"| exec → session ready | {span(readies)} ms |")
    print(f"| peak RSS, when ready | {span(rss)} MiB |")
    summary = os.environ.get("DSH_BENCH_SUMMARY")
    if summary:
        with open(summary, "a") as f:
            for metric, value in (
                ("tui_first_frame_ms", med(frames)),
                ("tui_ready_ms", med(readies)),
                ("tui_rss_mib", med(rss)),
            ):
                f.write(json.dumps({"metric": metric, "value": value}) + "\n")


if __name__ == "__main__":
    main()
