# Sourced by the bench scripts (`. "$(dirname "$0")/lib.sh"`): strict mode, the repository's
# root as the working directory, and the two steps most of them share.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The release binaries the benchmarks drive: dsh and the scripted model server.
build_release() {
  cargo build --release --locked -q -p dsh -p dsh-testkit --bin dsh --bin scripted-server
}

# `section NAME COMMAND...`: runs a benchmark, shows what it prints, and writes that as the
# NAME section of docs/performance.md (bench/section.py).
section() {
  local name=$1
  shift
  "$@" | tee /dev/stderr | python3 bench/section.py "$name"
}
