#!/usr/bin/env bash
# Measures the release-profile choices: each variant is built in its own target folder
# (Cargo's CARGO_PROFILE_RELEASE_* variables override Cargo.toml) and reported with its
# binary size and its 0-step start-up (exec to exit against the scripted server, median of
# 15). The last variant is the static musl build (the shipped profile for
# x86_64-unknown-linux-musl; `rustup target add x86_64-unknown-linux-musl` first). Slow: one
# full release build per variant. Not part of CI. The table goes to docs/performance.md's
# `profile` section (bench/section.py). Usage: bench/profile.sh
. "$(dirname "$0")/lib.sh"

cargo build --release --locked -q -p dsh-testkit --bin scripted-server
# name|settings|target (empty: the host's)
variants=(
  "shipped (fat LTO, 1 codegen unit, unwind, symbols stripped)||"
  "thin LTO|CARGO_PROFILE_RELEASE_LTO=thin|"
  "no LTO, 16 codegen units|CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16|"
  "panic = abort|CARGO_PROFILE_RELEASE_PANIC=abort|"
  "not stripped|CARGO_PROFILE_RELEASE_STRIP=none|"
  "opt-level s|CARGO_PROFILE_RELEASE_OPT_LEVEL=s|"
  "static musl (shipped profile)||x86_64-unknown-linux-musl"
)
table=$(mktemp)
{
echo "## Release profile"
echo
echo "From \`bench/profile.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -sr): each"
echo "variant a full release build; 0-step run is exec to exit against the scripted server,"
echo "median of 15."
echo
echo "| variant | binary (KiB) | 0-step run (ms) | build (s) |"
echo "|---|---|---|---|"
} >"$table"
for entry in "${variants[@]}"; do
  IFS='|' read -r name settings target <<<"$entry"
  dir=target/profile-variants/$(echo "$name" | tr -c 'a-z0-9' '-')
  start=$(date +%s)
  if [ -n "$target" ]; then
    env $settings cargo build --release --locked -q -p dsh --bin dsh --target-dir "$dir" \
      --target "$target"
    binary="$PWD/$dir/$target/release/dsh"
  else
    env $settings cargo build --release --locked -q -p dsh --bin dsh --target-dir "$dir"
    binary="$PWD/$dir/release/dsh"
  fi
  built=$(( $(date +%s) - start ))
  size=$(( $(stat -c %s "$binary") / 1024 ))
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
  echo "| $name | $size | $ms | $built |" | tee -a "$table"
done
python3 bench/section.py profile <"$table"
rm -f "$table"
