#!/usr/bin/env bash
# The first request's size per agent preset (bench/first_request.py), on a release build;
# writes its section of docs/performance.md. Not part of CI. Usage: bench/first-request.sh
. "$(dirname "$0")/lib.sh"
build_release
section first-request python3 bench/first_request.py
