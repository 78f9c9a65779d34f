#!/usr/bin/env bash
# `dsh sessions search` over 10,000 sessions (bench/sessions_search.py): the home is built once
# under the target folder; writes its section of docs/performance.md. Not part of CI.
# Usage: bench/sessions_search.sh [BINARY]   (default: a release build; BENCH_BUILD=TEXT says
# in the section how a given BINARY was built)
. "$(dirname "$0")/lib.sh"
binary="${1:-}"
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
home="${CARGO_TARGET_DIR:-target}/bench/sessions-search"
section sessions_search python3 bench/sessions_search.py "$binary" "$home"
