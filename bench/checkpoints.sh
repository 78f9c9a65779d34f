#!/usr/bin/env bash
# What checkpoints cost (crates/dsh-checkpoint/examples/checkpoint_bench.rs): a checkpoint's
# time in a 10,000-file workspace and a 100-turn session's disk; writes its section of
# docs/performance.md. Not part of CI. Usage: bench/checkpoints.sh
. "$(dirname "$0")/lib.sh"
section checkpoints cargo run --release --locked -q -p dsh-checkpoint --example checkpoint_bench
