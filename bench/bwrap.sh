#!/usr/bin/env bash
# Where a bubblewrap start's time goes (bench/bwrap.py); writes its section of
# docs/performance.md. Not part of CI. Usage: bench/bwrap.sh [RUNS]
. "$(dirname "$0")/lib.sh"
section bwrap python3 bench/bwrap.py "$@"
