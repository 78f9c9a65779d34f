#!/usr/bin/env bash
# What grows with the repository or the history, at real size (bench/growth.py): the
# 50,000-file repository of bench/bigrepo_tree.py and the 1,000-session home of
# bench/sessions_home.py, each built once under the target folder; writes its section of
# docs/performance.md. Not part of CI.
# Usage: bench/growth.sh [BINARY] [--before OLD_BINARY] [PART...]
#   (default BINARY: a release build; --before measures OLD_BINARY too and keeps its figures
#   in bench/growth-before.json, shown beside every later run's)
. "$(dirname "$0")/lib.sh"
binary="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
bench="${CARGO_TARGET_DIR:-target}/bench"
tree="$bench/bigrepo"
if [ ! -f "$tree/.git/dsh-bench-complete" ]; then
    rm -rf "$tree"
    mkdir -p "$bench"
    python3 bench/bigrepo_tree.py "$tree"
fi
# The generator writes its manifest last: a home without one was cut short.
sessions="$bench/sessions"
if [ ! -f "$sessions/manifest.json" ]; then
    rm -rf "$sessions"
    mkdir -p "$bench"
    python3 bench/sessions_home.py "$sessions"
fi
section growth python3 bench/growth.py "$binary" "$tree" "$sessions" "$@"
