#!/usr/bin/env bash
# `dsh acp`'s prompt round trip and memory (bench/acp.py), on a release build; writes its
# section of docs/performance.md. Not part of CI. Usage: bench/acp.sh [PROMPTS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p dsh -p dsh-testkit --bin dsh --bin scripted-server
python3 bench/acp.py "$@" | tee /dev/stderr | python3 bench/section.py acp
