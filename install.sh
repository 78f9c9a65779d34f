#!/bin/sh
# Installs dsh: downloads the release tarball for this machine and SHA256SUMS from a release's
# address, checks the tarball against its sum, and puts the binary on the PATH (with its shell
# completions, man page and a desktop entry for `dsh web --app` beside it, once the binary is
# in place). Nothing is installed when
# a step before the binary fails.
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

# The host of the address, read as curl reads it: the authority runs from after `//` to the
# first `/` (the address of a folder has no query or fragment, so neither is taken). A pattern
# on the whole address would take `http://127.0.0.1:80@evil.example` for this machine; curl
# sends that to evil.example.
is_ipv4_loopback() {
  case "$1" in
    127.*.*.*) ;;
    *) return 1 ;;
  esac
  rest=$1
  for _ in 1 2 3 4; do
    part=${rest%%.*}
    case "$part" in
      '' | *[!0-9]*) return 1 ;;
    esac
    # No leading zeros (curl would read 0177 as octal) and nothing past 255.
    case "$part" in 0?*) return 1 ;; esac
    [ ${#part} -le 3 ] && [ "$part" -le 255 ] || return 1
    if [ "$rest" = "$part" ]; then rest=; else rest=${rest#*.}; fi
  done
  [ -z "$rest" ]
}
# Prints yes for https, no for plain http to this machine; fails for anything else.
address_is_secure() {
  case "$1" in
    *[?#]*) return 1 ;;
    https://*) scheme=https rest=${1#https://} ;;
    http://*) scheme=http rest=${1#http://} ;;
    *) return 1 ;;
  esac
  authority=${rest%%/*}
  # A user part is never needed to download a release, and `@` is how an address is made to
  # look like another host; a backslash is read as a slash by some parsers and not by others.
  case "$authority" in '' | *@* | *\\*) return 1 ;; esac
  if [ "$scheme" = https ]; then
    echo yes
    return 0
  fi
  case "$authority" in
    \[*\]) host=$authority port= ;;
    \[*\]:*) host=${authority%%]:*}] port=${authority##*]:} ;;
    *:*) host=${authority%:*} port=${authority##*:} ;;
    *) host=$authority port= ;;
  esac
  case "$port" in *[!0-9]*) return 1 ;; esac
  case "$host" in
    localhost | LOCALHOST | \[::1\]) ;;
    *) is_ipv4_loopback "$host" || return 1 ;;
  esac
  echo no
}
# Plain HTTP only to this machine (a local mirror, the tests); anywhere else, HTTPS all the way.
secure=$(address_is_secure "$base") ||
  fail "DSH_INSTALL_BASE_URL must be an https:// address of a folder, with no user@ part, query or fragment (plain http only to this machine: 127.0.0.1, [::1] or localhost)"
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
    # A local mirror may send the download on, but only over https.
    fetch() { curl -fsSL --proto '=http' --proto-redir '=https' -o "$2" "$1"; }
  fi
elif command -v wget >/dev/null 2>&1; then
  if [ "$secure" = yes ]; then
    fetch() { wget -q --https-only -O "$2" "$1"; }
  else
    # wget cannot limit where a redirect goes by scheme: none is followed.
    fetch() { wget -q --max-redirect=0 -O "$2" "$1"; }
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
# The binary first, replaced by a rename (a dsh running now keeps its own file); the
# completions and the man page only once it is in place, so a failed install leaves none of
# them describing a dsh that is not there.
mkdir -p "$bin_dir" || fail "cannot create $bin_dir; set DSH_INSTALL_DIR to a folder you can write"
cp "$folder/dsh" "$bin_dir/.dsh.new" && chmod 755 "$bin_dir/.dsh.new" &&
  mv -f "$bin_dir/.dsh.new" "$bin_dir/dsh" ||
  { rm -f "$bin_dir/.dsh.new"; fail "cannot install the binary in $bin_dir; nothing else was installed"; }
share=${XDG_DATA_HOME:-"$HOME/.local/share"}
mkdir -p "$share/bash-completion/completions" "$share/man/man1" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d"
cp "$folder/completions/dsh.bash" "$share/bash-completion/completions/dsh"
cp "$folder/completions/_dsh" "$share/zsh/site-functions/_dsh"
cp "$folder/completions/dsh.fish" "$share/fish/vendor_completions.d/dsh.fish"
cp "$folder/man/dsh.1" "$share/man/man1/dsh.1"
# A desktop entry: dsh's web app from the desktop's menu, in a window of its own (dsh web
# --app: a Chromium-family browser's app mode, else the default browser). The binary's path is
# quoted as the desktop entry format quotes arguments.
mkdir -p "$share/applications"
exec_path=$(printf '%s' "$bin_dir/dsh" | sed 's/[\\"`$]/\\&/g')
printf '%s\n' '[Desktop Entry]' 'Type=Application' 'Name=dsh' \
  'Comment=The dsh coding agent, in a window of its own' "Exec=\"$exec_path\" web --app" \
  'Terminal=false' 'Categories=Development;' > "$share/applications/.dsh.desktop.new" &&
  mv -f "$share/applications/.dsh.desktop.new" "$share/applications/dsh.desktop"
# zsh reads completions only from the folders in its fpath, and this one is not among its
# defaults: say how to add it, unless this zsh already has it.
zsh_folder="$share/zsh/site-functions"
if command -v zsh >/dev/null 2>&1 &&
  ! zsh -fc 'print -rl -- $fpath' 2>/dev/null | grep -qxF "$zsh_folder"; then
  say "zsh completions are in $zsh_folder, which zsh does not read by default: add this line to ~/.zshrc, before compinit, unless it has it already: fpath=(\"$zsh_folder\" \$fpath)"
fi

say "installed $("$bin_dir/dsh" --version) in $bin_dir/dsh"
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) say "$bin_dir is not on your PATH: add it (for example in ~/.profile: export PATH=\"$bin_dir:\$PATH\")" ;;
esac
say "next: dsh login (saves your API key), then dsh"
