#!/usr/bin/env bash
# Runs dsh's benchmarks on a release build and writes the results to docs/performance.md.
# Not part of CI: timings depend on the machine. Usage: bench/run.sh
. "$(dirname "$0")/lib.sh"

# Each benchmark also appends its figures here, for the targets table.
export DSH_BENCH_SUMMARY
DSH_BENCH_SUMMARY=$(mktemp)
trap 'rm -f "$DSH_BENCH_SUMMARY"' EXIT
out=$(cargo bench -p dsh --bench startup 2>/dev/null)
search=$(bench/search.sh)
# Its own section, kept below; its figures join the targets table.
cargo build --release --locked -q -p dsh-testkit --bin scripted-server
python3 bench/tui.py | python3 bench/section.py tui
python3 bench/acp.py | python3 bench/section.py acp
python3 bench/bwrap.py | python3 bench/section.py bwrap
# The real-size repository: its own section, kept below like the others.
bench/bigrepo.sh target/release/dsh
# What grows with the repository or the history (1,000 sessions, a 100 MB log): its own section.
bench/growth.sh target/release/dsh
targets=$(python3 bench/targets.py "$DSH_BENCH_SUMMARY")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
cores=$(nproc)
mem=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')
kernel=$(uname -sr)
size=$(stat -c %s target/release/dsh)
# The sections of bench/peers.sh and bench/profile.sh are kept as they are: they have their
# own, slower runs.
kept=$(sed -n '/<!-- [a-z]*:start -->/,/<!-- [a-z]*:end -->/p' docs/performance.md 2>/dev/null || true)

{
  echo "# Performance"
  echo
  echo "Written by \`bench/run.sh\` (the targets, start-up, the tool path, sandbox cost, session"
  echo "load, search, and the sections of \`bench/tui.sh\`, \`bench/acp.sh\` and \`bench/bwrap.sh\`),"
  echo "\`bench/peers.sh\` and \`bench/profile.sh\` (their own sections); do not edit by hand. The"
  echo "model is the scripted server of \`dsh-testkit\` on loopback, which answers at once, so the"
  echo "times are dsh's own."
  echo
  echo "- Date: $(date -u +%Y-%m-%d)"
  echo "- Machine: ${cpu}, ${cores} cores, ${mem}, ${kernel}"
  echo "- Binary: release profile, $((size / 1024)) KiB"
  echo
  echo "$targets"
  echo
  echo "## Start-up and the tool path (\`cargo bench -p dsh --bench startup\`)"
  echo
  echo "$out"
  echo
  echo "$search"
  if [ -n "$kept" ]; then
    echo
    echo "$kept"
  fi
} > docs/performance.md
cat docs/performance.md
