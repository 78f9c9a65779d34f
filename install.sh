#!/bin/sh
# Installs dsh: downloads the release tarball for this machine and SHA256SUMS from a release's
# address, checks the tarball against its sum, and puts the binary on the PATH (with its shell
# completions and man page beside it). Nothing is installed when a step fails.
#
#   curl -fsSL <release address>/install.sh | DSH_INSTALL_BASE_URL=<release address> sh
#
# DSH_INSTALL_BASE_URL  where dsh-<target>.tar.gz and SHA256SUMS are (required)
# DSH_INSTALL_DIR       where the binary goes (default: ~/.local/bin)
# DSH_INSTALL_TARGET    the build to take (default: this machine's, x86_64- or
#                       aarch64-unknown-linux-musl)
set -eu

say() { printf 'install.sh: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

base=${DSH_INSTALL_BASE_URL:-}
[ -n "$base" ] || fail "set DSH_INSTALL_BASE_URL to the release's address (where SHA256SUMS is)"
base=${base%/}
# Plain HTTP only to this machine (a local mirror, the tests); anywhere else, HTTPS all the way.
case "$base" in
  https://*) secure=yes ;;
  http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*) secure=no ;;
  *) fail "DSH_INSTALL_BASE_URL must be an https:// address (plain http only on 127.0.0.1)" ;;
esac
bin_dir=${DSH_INSTALL_DIR:-"$HOME/.local/bin"}
target=${DSH_INSTALL_TARGET:-}
if [ -z "$target" ]; then
  [ "$(uname -s)" = Linux ] || fail "dsh is built for Linux only; this is $(uname -s)"
  case "$(uname -m)" in
    x86_64 | amd64) target=x86_64-unknown-linux-musl ;;
    aarch64 | arm64) target=aarch64-unknown-linux-musl ;;
    *) fail "dsh has no build for $(uname -m) (there are builds for x86_64 and aarch64)" ;;
  esac
fi

if command -v curl >/dev/null 2>&1; then
  if [ "$secure" = yes ]; then
    fetch() { curl -fsSL --proto '=https' --proto-redir '=https' -o "$2" "$1"; }
  else
    fetch() { curl -fsSL -o "$2" "$1"; }
  fi
elif command -v wget >/dev/null 2>&1; then
  if [ "$secure" = yes ]; then
    fetch() { wget -q --https-only -O "$2" "$1"; }
  else
    fetch() { wget -q -O "$2" "$1"; }
  fi
else
  fail "curl or wget is needed to download dsh"
fi
if command -v sha256sum >/dev/null 2>&1; then
  digest() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  fail "sha256sum or shasum is needed to check the download"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
tarball="dsh-$target.tar.gz"
say "downloading $base/$tarball"
fetch "$base/$tarball" "$work/$tarball" || fail "could not download $base/$tarball"
fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || fail "could not download $base/SHA256SUMS"
expected=$(awk -v name="$tarball" '$2 == name || $2 == "*" name { print $1 }' "$work/SHA256SUMS")
[ -n "$expected" ] || fail "SHA256SUMS lists no $tarball"
actual=$(digest "$work/$tarball")
[ "$expected" = "$actual" ] ||
  fail "the checksum of $tarball does not match SHA256SUMS (expected $expected, got $actual); nothing was installed"

tar -xzf "$work/$tarball" -C "$work"
folder=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'dsh-*' | head -n 1)
[ -n "$folder" ] && [ -f "$folder/dsh" ] || fail "$tarball holds no dsh binary"
share=${XDG_DATA_HOME:-"$HOME/.local/share"}
mkdir -p "$share/bash-completion/completions" "$share/man/man1" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d"
cp "$folder/completions/dsh.bash" "$share/bash-completion/completions/dsh"
cp "$folder/completions/_dsh" "$share/zsh/site-functions/_dsh"
cp "$folder/completions/dsh.fish" "$share/fish/vendor_completions.d/dsh.fish"
cp "$folder/man/dsh.1" "$share/man/man1/dsh.1"
# The binary last, replaced by a rename: a dsh running now keeps its own file.
mkdir -p "$bin_dir"
cp "$folder/dsh" "$bin_dir/.dsh.new"
chmod 755 "$bin_dir/.dsh.new"
mv -f "$bin_dir/.dsh.new" "$bin_dir/dsh"

say "installed $("$bin_dir/dsh" --version) in $bin_dir/dsh"
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) say "$bin_dir is not on your PATH: add it (for example in ~/.profile: export PATH=\"$bin_dir:\$PATH\")" ;;
esac
say "next: dsh login (saves your API key), then dsh"
