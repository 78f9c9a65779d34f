#!/usr/bin/env bash
# Times the glob and grep tools as a release binary runs them, for comparing builds of dsh
# (release profiles): bench/search.sh times the tools' crate under its own bench profile, but
# the shipped binary is one fat-LTO unit optimised again at the binary's level, so a profile
# choice is judged here. Each binary runs scripted tasks against the scripted server in the
# generated tree of bench/search.sh: one with CALLS calls of the tool (a turn each), one with
# none; a call's time is the difference of the medians over CALLS. Writes the table as the
# `search-binary` section of docs/performance.md. Not part of CI. Usage: bench/search-binary.sh BINARY [BINARY...]
#   (DSH_BENCH_RUNS runs per script, 7 by default; DSH_BENCH_CALLS, 4 by default)
. "$(dirname "$0")/lib.sh"

[ $# -gt 0 ] || { echo "usage: bench/search-binary.sh BINARY [BINARY...]" >&2; exit 2; }
cargo build --release --locked -q -p dsh-testkit --bin scripted-server
tree=target/bench-tree
bench_tree "$tree"
measure() {
  echo "## Search through the binary (\`bench/search-binary.sh\`)"
  echo
  echo "$(date -u +%Y-%m-%d), $(nproc) cores: each binary runs the \`glob\`/\`grep\` calls of"
  echo "[Search](#search-benchsearchsh) as a scripted task in the same tree; milliseconds per call"
  echo "(median of ${DSH_BENCH_RUNS:-7} runs, minus a task without calls). For judging release"
  echo "profiles: what the crate's bench cannot see is the whole program optimised at once."
  echo
  python3 - "$(cd "$tree" && pwd)" "${DSH_BENCH_RUNS:-7}" "${DSH_BENCH_CALLS:-4}" "$@" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

tree, runs, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
binaries = [os.path.abspath(b) for b in sys.argv[4:]]
searches = {
    "glob `*.rs`": ["glob", {"pattern": "*.rs"}],
    "grep `needle_[0-9]+`": ["grep", {"pattern": "needle_[0-9]+"}],
}

def run_once(binary, turns):
    """Wall time of one task whose model answers with `turns`, in milliseconds."""
    with tempfile.TemporaryDirectory() as home:
        # Checkpoints would copy the tree at each turn: that is not what is measured.
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write("[checkpoints]\nenabled = false\n")
        script = os.path.join(home, "turns.json")
        with open(script, "w") as f:
            json.dump(turns, f)
        server = subprocess.Popen(["target/release/scripted-server", "--turns", script],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().strip()
            env = {**os.environ, "DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "x",
                   "DSH_HOME": home}
            start = time.perf_counter()
            done = subprocess.run([binary, "--json", "go"], env=env, cwd=tree,
                                  stdout=subprocess.PIPE, text=True, check=True)
            took = (time.perf_counter() - start) * 1000
        finally:
            server.stdin.close()
            server.wait()
    results = [json.loads(l) for l in done.stdout.splitlines() if '"tool_result"' in l]
    if len(results) != sum(len(t.get("calls", [])) for t in turns) or any(
            r["status"] != "completed" for r in results):
        sys.exit(f"{binary}: a scripted call did not complete: {done.stdout[-500:]}")
    return took

def median(binary, turns):
    run_once(binary, turns)  # warms the page cache and the binary
    return statistics.median(run_once(binary, turns) for _ in range(runs))

print("| binary | bytes | " + " | ".join(f"{name} ms" for name in searches) + " |")
print("|---|---|" + "---|" * len(searches))
for binary in binaries:
    bare = median(binary, [{"text": "done"}])
    cells = []
    for call in searches.values():
        turns = [{"calls": [call]} for _ in range(calls)] + [{"text": "done"}]
        cells.append("%.0f" % ((median(binary, turns) - bare) / calls))
    print(f"| {binary} | {os.path.getsize(binary)} | " + " | ".join(cells) + " |")
PY
}
section search-binary measure "$@"
