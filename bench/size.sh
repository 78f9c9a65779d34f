#!/usr/bin/env bash
# The size of each release binary against the 15 MB target, from a release's tarballs
# (scripts/release's folder; built first when absent), with where the bytes go (cargo bloat on
# the release build, not stripped, which names each crate's share); writes its section of
# docs/performance.md. Not part of CI. Usage: bench/size.sh [DIST_DIR]
#   (cargo install cargo-bloat --locked, for the breakdown)
. "$(dirname "$0")/lib.sh"
dist=${1:-target/dist}
[ -f "$dist/SHA256SUMS" ] || scripts/release --out "$dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "## Binary size (\`bench/size.sh\`)"
  echo
  echo "$(date -u +%Y-%m-%d), from \`scripts/release\`'s tarballs (release profile: fat LTO, one"
  echo "codegen unit, stripped; static musl). The goal is at most 15 MB a target."
  echo
  echo "| target | binary (bytes) | MB | tarball (bytes) | goal |"
  echo "|---|---|---|---|---|"
  for tarball in "$dist"/dsh-*.tar.gz; do
    target=$(basename "$tarball" .tar.gz)
    target=${target#dsh-}
    tar -xzf "$tarball" -C "$work"
    bytes=$(stat -c %s "$work"/dsh-*-"$target"/dsh)
    verdict=$(python3 -c "b=$bytes; print('met' if b <= 15e6 else f'missed: {b/15e6:.2f}x')")
    printf '| %s | %s | %.1f | %s | %s |\n' "$target" "$bytes" \
      "$(python3 -c "print($bytes/1e6)")" "$(stat -c %s "$tarball")" "$verdict"
  done
  if command -v cargo-bloat >/dev/null; then
    echo
    echo "Where the code goes: the largest crates' share of \`.text\` in the release build for"
    echo "the host, not stripped (\`cargo bloat --crates\`; after LTO a function is put to the"
    echo "crate its name comes from, so generic code lands in the crate that defines it):"
    echo
    echo '```'
    CARGO_PROFILE_RELEASE_STRIP=none CARGO_TARGET_DIR="${DSH_BLOAT_TARGET:-target/bloat}" \
      cargo bloat --release -q -p dsh --bin dsh --crates -n 20 2>/dev/null
    echo '```'
  fi
} | tee /dev/stderr | python3 bench/section.py size
