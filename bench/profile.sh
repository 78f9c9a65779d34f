#!/usr/bin/env bash
# Measures the release-profile choices: each variant is built in its own target folder
# (Cargo's CARGO_PROFILE_RELEASE_* variables override Cargo.toml) and reported with its
# binary size and its 0-step start-up (exec to exit against the scripted server, median of
# 15). Slow: one full release build per variant. Not part of CI. Usage: bench/profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -q -p dsh-testkit --bin scripted-server
variants=(
  "shipped (fat LTO, 1 codegen unit, unwind, symbols stripped)|"
  "thin LTO|CARGO_PROFILE_RELEASE_LTO=thin"
  "no LTO, 16 codegen units|CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16"
  "panic = abort|CARGO_PROFILE_RELEASE_PANIC=abort"
  "not stripped|CARGO_PROFILE_RELEASE_STRIP=none"
  "opt-level s|CARGO_PROFILE_RELEASE_OPT_LEVEL=s"
)
echo "| variant | binary (KiB) | 0-step run (ms) | build (s) |"
echo "|---|---|---|---|"
for entry in "${variants[@]}"; do
  name=${entry%%|*}
  settings=${entry#*|}
  dir=target/profile-variants/$(echo "$name" | tr -c 'a-z0-9' '-')
  start=$(date +%s)
  env $settings cargo build --release --locked -q -p dsh --bin dsh --target-dir "$dir"
  built=$(( $(date +%s) - start ))
  size=$(( $(stat -c %s "$dir/release/dsh") / 1024 ))
  binary="$PWD/$dir/release/dsh"
  ms=$(python3 - "$binary" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
server = subprocess.Popen(["target/release/scripted-server", "1"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
url = server.stdout.readline().strip()
times = []
for _ in range(15):
    home = tempfile.mkdtemp()
    env = {**os.environ, "DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "x", "DSH_HOME": home}
    start = time.perf_counter()
    subprocess.run([sys.argv[1], "go"], env=env, stdout=subprocess.DEVNULL, check=True,
                   cwd=home)
    times.append((time.perf_counter() - start) * 1000)
server.stdin.close()
print(f"{statistics.median(times):.1f}")
PY
)
  echo "| $name | $size | $ms | $built |"
done
