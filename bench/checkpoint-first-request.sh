#!/usr/bin/env bash
# The first request's delay and a run's time with checkpoints on and off in a 10,000-file
# workspace (bench/checkpoint_first_request.py); writes its section of docs/performance.md.
# Not part of CI. Usage: bench/checkpoint-first-request.sh [BINARY] (default: a release build)
. "$(dirname "$0")/lib.sh"
binary="${1:-}"
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
section checkpoint-first-request python3 bench/checkpoint_first_request.py "$binary"
