#!/usr/bin/env bash
# What dsh costs in a real-size repository: the deterministic 50,000-file Git tree of
# bench/bigrepo_tree.py (built once under the target folder, about 1 GB with its .git) with
# checkpoints on and off, and the day's prune of the checkpoint store beside the 1,000-session
# home of bench/sessions_home.py (bench/bigrepo.py); writes its section of docs/performance.md.
# Not part of CI. Usage: bench/bigrepo.sh [BINARY] (default: a release build)
. "$(dirname "$0")/lib.sh"
binary="${1:-}"
if [ -z "$binary" ]; then
    cargo build --release --locked -q -p dsh --bin dsh
    binary=target/release/dsh
fi
tree="${CARGO_TARGET_DIR:-target}/bench/bigrepo"
if [ ! -f "$tree/.git/dsh-bench-complete" ]; then
    rm -rf "$tree"
    mkdir -p "$(dirname "$tree")"
    python3 bench/bigrepo_tree.py "$tree"
fi
# The 1,000-session home of bench/sessions_home.py, shared with bench/growth.sh; its
# generator writes the manifest last.
sessions="${CARGO_TARGET_DIR:-target}/bench/sessions"
if [ ! -f "$sessions/manifest.json" ]; then
    rm -rf "$sessions"
    python3 bench/sessions_home.py "$sessions"
fi
section bigrepo python3 bench/bigrepo.py "$binary" "$tree" "$sessions"
