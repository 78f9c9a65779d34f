#!/usr/bin/env bash
# Records the --json streams the adapter's tests read, from the real binary, into streams/.
# Run from anywhere: integrations/harbor/tests/record.sh
#
# Needs target/debug/dsh and target/debug/scripted-server:
#   cargo build -p dsh -p dsh-testkit --bin dsh --bin scripted-server
# The model is the scripted server on 127.0.0.1 (scripted-server <steps>: a shell session
# of that many steps, bash calls then the answer "done"); nothing leaves the machine. Each
# run gets its own empty DSH_HOME and working folder, so no config, .env or session of the
# machine's leaks in. Next to each <name>.jsonl goes <name>.exit, dsh's exit status.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
dsh="$target/debug/dsh"
server="$target/debug/scripted-server"
out="$here/streams"
for bin in "$dsh" "$server"; do
  if [ ! -x "$bin" ]; then
    echo "record.sh: $bin is missing; build it with:" >&2
    echo "  cargo build -p dsh -p dsh-testkit --bin dsh --bin scripted-server" >&2
    exit 1
  fi
done
mkdir -p "$out"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The same flags as the adapter's run command (dsh_harbor.commands.dsh_argv), task after --.
flags=(--profile headless --json --permission-mode danger-full-access)

# fresh_run NAME: an empty DSH_HOME and working folder for one run.
fresh_run() {
  rm -rf "$scratch/$1"
  mkdir -p "$scratch/$1/home" "$scratch/$1/work"
}

# record NAME STEPS TASK [CONFIG]: one run against a scripted server of STEPS steps; CONFIG,
# if given, is written to DSH_HOME/config.toml.
record() {
  local name="$1" steps="$2" task="$3" config="${4:-}" url status
  fresh_run "$name"
  [ -n "$config" ] && printf '%s\n' "$config" > "$scratch/$name/home/config.toml"
  coproc SERVER { exec "$server" "$steps"; }
  read -r url <&"${SERVER[0]}"
  status=0
  (cd "$scratch/$name/work" &&
    env -u DEEPSEEK_BASE_URL -u DSH_PERMISSION_MODE \
      DEEPSEEK_BASE_URL="$url" DEEPSEEK_API_KEY=test DSH_HOME="$scratch/$name/home" \
      "$dsh" "${flags[@]}" -- "$task") > "$out/$name.jsonl" 2> "$scratch/$name/stderr" || status=$?
  # Closing its stdin stops the server.
  local pid="$SERVER_PID"
  exec {SERVER[1]}>&-
  wait "$pid" || true
  echo "$status" > "$out/$name.exit"
  echo "recorded $name: exit $status, $(wc -l < "$out/$name.jsonl") events"
}

# A run that reaches the agent but whose every request fails: the server is a closed port
# and requests.retries = 0, so the turn ends at once with TRANSPORT and the stream still
# closes with `final`.
record_unreachable() {
  local name="$1" task="$2" status=0
  fresh_run "$name"
  printf '[requests]\nretries = 0\n' > "$scratch/$name/home/config.toml"
  (cd "$scratch/$name/work" &&
    env -u DSH_PERMISSION_MODE \
      DEEPSEEK_BASE_URL="http://127.0.0.1:1" DEEPSEEK_API_KEY=test \
      DSH_HOME="$scratch/$name/home" \
      "$dsh" "${flags[@]}" -- "$task") > "$out/$name.jsonl" 2> "$scratch/$name/stderr" || status=$?
  echo "$status" > "$out/$name.exit"
  echo "recorded $name: exit $status, $(wc -l < "$out/$name.jsonl") events"
}

# A run that fails before the agent: no API key, so one `error` event (code AUTH), no
# `session`, no `final`.
record_no_key() {
  local name="$1" task="$2" status=0
  fresh_run "$name"
  (cd "$scratch/$name/work" &&
    env -u DEEPSEEK_API_KEY -u DEEPSEEK_BASE_URL -u DSH_PERMISSION_MODE \
      DSH_HOME="$scratch/$name/home" \
      "$dsh" "${flags[@]}" -- "$task") > "$out/$name.jsonl" 2> "$scratch/$name/stderr" || status=$?
  echo "$status" > "$out/$name.exit"
  echo "recorded $name: exit $status, $(wc -l < "$out/$name.jsonl") events"
}

prices='[models."deepseek-v4-flash".prices]
input = 0.27
output = 1.10
cache_read = 0.07
cache_write = 0.0'

record three-steps 3 'Run `true` twice with bash, then say "done".' "$prices"
record one-step 1 'Say "done" and nothing else.'
record_unreachable unreachable 'Say "done".'
record_no_key no-key 'Say "done".'
