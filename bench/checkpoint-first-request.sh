#!/usr/bin/env bash
# The first request's delay and a run's time with checkpoints on and off in a 10,000-file
# workspace (bench/checkpoint_first_request.py); writes its section of docs/performance.md.
# Not part of CI. Usage: bench/checkpoint-first-request.sh [BINARY] (default: a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-}"
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
python3 bench/checkpoint_first_request.py "$binary" | tee /dev/stderr | python3 bench/section.py checkpoint-first-request
