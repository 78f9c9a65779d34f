#!/usr/bin/env bash
# Times glob and grep through dsh's tool path against the rg binary on a generated tree of
# 100,000 files (with a .gitignore, ignored build output and hidden folders), and prints a
# Markdown section. bench/run.sh includes it in docs/performance.md.
# Usage: bench/search.sh [TREE_DIR]   (default: target/bench-tree, built once and reused)
. "$(dirname "$0")/lib.sh"

if ! command -v rg >/dev/null; then
  apt-get install -y ripgrep >/dev/null
fi
tree=${1:-target/bench-tree}
runs=${DSH_BENCH_RUNS:-10}

bench_tree "$tree"
tree=$(cd "$tree" && pwd)
files=$(find "$tree" -type f | wc -l)

dsh_out=$(DSH_BENCH_TREE=$tree DSH_BENCH_RUNS=$runs cargo bench -q -p dsh-tools --bench search 2>/dev/null)

# The same searches with rg, as the reference runs it (glob: sorted by mtime, everything
# listed; grep: JSON output, ignore rules on).
time_rg() {
  python3 - "$runs" "$tree" "$@" <<'PY'
import subprocess, sys, time
runs, tree, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(argv, cwd=tree, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print("%.1f %.1f %.1f" % (times[len(times) // 2], times[0], times[-1]))
PY
}
vcs=()
for d in .git .svn .hg .bzr .jj .sl; do vcs+=("--glob=!**/$d" "--glob=!**/$d/**"); done
rg_glob=$(time_rg rg --no-config --files --glob='*.rs' --sort=modified --no-ignore --hidden "${vcs[@]}")
rg_grep=$(time_rg rg --no-config --json --regexp='needle_[0-9]+')

row() {  # name, metric, dsh "median min max bytes", rg "median min max"
  read -r dm dmin dmax _ <<<"$3"
  read -r rm rmin rmax <<<"$4"
  ratio=$(python3 -c "print('%.2f' % ($dm / $rm))")
  echo "| $1 | $dm ($dmin–$dmax) | $rm ($rmin–$rmax) | ${ratio}x |"
  # For bench/targets.py (bench/run.sh sets the file).
  if [ -n "${DSH_BENCH_SUMMARY:-}" ]; then
    echo "{\"metric\": \"$2\", \"value\": $ratio}" >>"$DSH_BENCH_SUMMARY"
  fi
}
echo "## Search (\`bench/search.sh\`)"
echo
echo "A generated tree of $files files (a \`.gitignore\` that ignores 5,000 files of build output,"
echo "5,000 files in hidden folders). dsh: the \`glob\`/\`grep\` tool through the registry, in"
echo "process, result formatted; rg: $(rg --version | sed -n 1p), spawned with the reference's"
echo "arguments, output discarded. Milliseconds, median of $runs runs (fastest–slowest). Target:"
echo "dsh within 1.2x of rg."
echo
echo "| search | dsh ms | rg ms | dsh / rg |"
echo "|---|---|---|---|"
row 'glob `*.rs` (hidden and ignored included, by mtime)' glob_vs_rg "$(grep '^glob ' <<<"$dsh_out" | cut -d' ' -f2-)" "$rg_glob"
row 'grep `needle_[0-9]+` (ignore rules on)' grep_vs_rg "$(grep '^grep ' <<<"$dsh_out" | cut -d' ' -f2-)" "$rg_grep"
