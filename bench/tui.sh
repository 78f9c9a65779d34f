#!/usr/bin/env bash
# The terminal UI's start-up and memory (bench/tui.py), on a release build; writes its section
# of docs/performance.md. Not part of CI. Usage: bench/tui.sh [RUNS]
. "$(dirname "$0")/lib.sh"
build_release
section tui python3 bench/tui.py "$@"
