#!/usr/bin/env bash
# Where a bubblewrap start's time goes (bench/bwrap.py); writes its section of
# docs/performance.md. Not part of CI. Usage: bench/bwrap.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bench/bwrap.py "$@" | tee /dev/stderr | python3 bench/section.py bwrap
