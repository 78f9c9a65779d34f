#!/usr/bin/env bash
# dsh web's numbers (bench/web.py): start to page served, first paint of a 1,000-message
# session, model-to-browser event latency, memory with 10 sessions open; writes its section of
# docs/performance.md. Needs Debian's chromium and Playwright for Python. Not part of CI.
# Usage: bench/web.sh [BINARY] (default: a release build)
. "$(dirname "$0")/lib.sh"
binary="${1:-}"
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
section web python3 bench/web.py "$binary"
