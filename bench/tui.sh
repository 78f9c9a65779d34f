#!/usr/bin/env bash
# The terminal UI's start-up and memory (bench/tui.py), on a release build; writes its section
# of docs/performance.md. Not part of CI. Usage: bench/tui.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p dsh -p dsh-testkit --bin dsh --bin scripted-server
python3 bench/tui.py "$@" | tee /dev/stderr | python3 bench/section.py tui
