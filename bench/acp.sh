#!/usr/bin/env bash
# `dsh acp`'s prompt round trip and memory (bench/acp.py), on a release build; writes its
# section of docs/performance.md. Not part of CI. Usage: bench/acp.sh [PROMPTS]
. "$(dirname "$0")/lib.sh"
build_release
section acp python3 bench/acp.py "$@"
