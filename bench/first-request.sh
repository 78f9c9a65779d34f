#!/usr/bin/env bash
# The first request's size per agent preset (bench/first_request.py), on a release build;
# writes its section of docs/performance.md. Not part of CI. Usage: bench/first-request.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p dsh -p dsh-testkit --bin dsh --bin scripted-server
python3 bench/first_request.py | tee /dev/stderr | python3 bench/section.py first-request
