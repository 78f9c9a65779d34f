#!/usr/bin/env bash
# Runs dsh's benchmarks on a release build and writes the results to docs/performance.md.
# Not part of CI: timings depend on the machine. Usage: bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(cargo bench -p dsh --bench startup 2>/dev/null)
search=$(bench/search.sh)
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
  echo "Written by \`bench/run.sh\`; do not edit by hand. Targets: the first request on the wire"
  echo "within 20 ms of exec, a 10-step session within 50 ms of harness time, peak RSS under 15 MB"
  echo "(and under 50 MB reading a 1 GiB file); glob and grep within 1.2x of rg; one confined"
  echo "\`bash true\` under 10 ms (bubblewrap) and under 3 ms of sandbox cost (Landlock); resuming a"
  echo "10,000-record session under 100 ms; a 1,000-step run's memory no more than its history."
  echo "The model is the scripted server of \`dsh-testkit\` on loopback, which answers at once, so"
  echo "the times are dsh's own."
  echo
  echo "- Date: $(date -u +%Y-%m-%d)"
  echo "- Machine: ${cpu}, ${cores} cores, ${mem}, ${kernel}"
  echo "- Binary: release profile, $((size / 1024)) KiB"
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
