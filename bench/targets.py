#!/usr/bin/env python3
"""The targets table at the head of docs/performance.md: each target of dsh's benchmarks, the
figure measured for it and whether it is met. Reads the figures the benchmarks appended, one
JSON object a line ({"metric": ..., "value": ...}), from the file named as the argument.
Usage: targets.py SUMMARY_FILE (run by bench/run.sh)."""

import json
import sys

MB_PER_MIB = 2**20 / 1e6

# metric, what it is, goal as shown, limit, unit of the metric, how the figure is shown
TARGETS = [
    ("first_request_ms", "first request on the wire after exec (0-step run)", "< 20 ms", 20, "ms"),
    ("bash10_bubblewrap_wall_ms", "10-step sandboxed `bash true` session, wall time (bubblewrap)", "< 150 ms", 150, "ms"),
    ("bash10_landlock_wall_ms", "10-step sandboxed `bash true` session, wall time (Landlock)", "< 150 ms", 150, "ms"),
    ("ten_read_wall_ms", "10-step `read` session, wall time", "< 50 ms", 50, "ms"),
    ("parallel_read_wall_ms", "10 `read` calls in one step (run in parallel), wall time", "< 15 ms", 15, "ms"),
    ("peak_rss_mib", "peak RSS of dsh (0-step, 10-step `read` and `bash` runs)", "< 15 MB", 15, "MB"),
    ("huge_read_rss_mib", "peak RSS reading the end of a 1 GiB file", "< 50 MB", 50, "MB"),
    ("bash_bubblewrap_call_ms", "one confined `bash true` through the tool path (bubblewrap)", "< 10 ms", 10, "ms"),
    ("bash_bubblewrap_cost_ms", "the sandbox's own cost for each `bash true` after a run's first (bubblewrap, the default: one helper per run)", "< 1 ms", 1, "ms"),
    ("bash_bubblewrap_setup_ms", "the same, once a run, on its first command (probing the backends and starting the helper while the model answers at once)", "< 10 ms", 10, "ms"),
    ("bash_bubblewrap_run_cost_ms", "the sandbox's own cost a command, averaged over a 10-step run (bubblewrap)", "—", None, "ms"),
    ("bash_bubblewrap_each_cost_ms", "the sandbox's own cost for each `bash true` after the first, a `bwrap` per command (`sandbox.helper = false`)", "—", None, "ms"),
    ("bash_landlock_cost_ms", "the sandbox's own cost for each `bash true` after a run's first (Landlock)", "< 3 ms", 3, "ms"),
    ("glob_vs_rg", "`glob` over 100,000 files, against rg", "≤ 1.2x", 1.2, "x"),
    ("grep_vs_rg", "`grep` over 100,000 files, against rg", "≤ 1.2x", 1.2, "x"),
    ("resume_ms", "resume a 10,000-record session (exec to first request)", "< 100 ms", 100, "ms"),
    ("resume_zstd_ms", "the same, log compressed with zstd", "< 100 ms", 100, "ms"),
    ("tui_first_frame_ms", "terminal UI: exec to first frame (80x24)", "< 30 ms", 30, "ms"),
    ("tui_rss_mib", "terminal UI: peak RSS, session ready", "< 15 MB", 15, "MB"),
    ("acp_prompt_ms", "`dsh acp`: prompt round trip, a one-step answer", "< 5 ms", 5, "ms"),
    ("acp_rss_mib", "`dsh acp`: peak RSS after 200 prompts", "< 20 MB", 20, "MB"),
    ("long_run_rss_mib", "peak RSS of a 10,000-step `read` run (16,000-token window, compacting)", "< 20 MB", 20, "MB"),
    ("long_run_rss_growth", "peak RSS: the 10,000-step run against the 1,000-step one", "≤ 1.1x", 1.1, "x"),
    ("long_run_cpu_growth", "CPU time a step: the 10,000-step run against the 1,000-step one", "≤ 1.2x", 1.2, "x"),
    # No fixed figure: the memory should be the history held (the tables below).
    ("thousand_rss_mib", "peak RSS of a 1,000-step `read` run", "its history", None, "MB"),
]


def main():
    figures = {}
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                entry = json.loads(line)
                figures[entry["metric"]] = entry["value"]
    print("## Targets")
    print()
    print("Each target with its median from the runs below; a missed one says by how much.")
    print()
    print("| target | goal | measured | |")
    print("|---|---|---|---|")
    for metric, what, goal, limit, unit in TARGETS:
        value = figures.get(metric)
        if value is None:
            print(f"| {what} | {goal} | not measured | |")
            continue
        if metric.endswith("_mib"):
            value *= MB_PER_MIB
        shown = f"{value:.2f}x" if unit == "x" else f"{value:.1f} {unit}"
        if limit is None:
            print(f"| {what} | {goal} | {shown} | reported |")
            continue
        met = value <= limit if unit == "x" else value < limit
        verdict = "met" if met else f"missed by {value - limit:.1f}{'x' if unit == 'x' else ' ' + unit}"
        print(f"| {what} | {goal} | {shown} | {verdict} |")


if __name__ == "__main__":
    main()
