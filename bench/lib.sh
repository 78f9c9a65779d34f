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

# `bench_tree DIR`: the search benchmarks' generated tree of 110,000 files (a .gitignore that
# ignores 5,000 files of build output, 5,000 files in hidden folders), built once and reused.
bench_tree() {
  local tree=$1
  if [ ! -f "$tree/.complete" ]; then
    rm -rf "$tree"
    python3 - "$tree" <<'PY'
import os, random, sys
root = sys.argv[1]
random.seed(7)
os.makedirs(root)
os.makedirs(os.path.join(root, ".git"))  # so .gitignore applies, as in a checkout
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("build/\n*.log\n")
count = 0
def put(path, i):
    global count
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for n in range(12):
            f.write("fn item_%d_%d() { let value = %d; }\n" % (i, n, random.randint(0, 99999)))
        if i % 97 == 0:
            f.write("// needle_%d marks this file\n" % i)
    count += 1
exts = [".rs", ".ts", ".py", ".md", ".txt"]
i = 0
for a in range(40):
    for b in range(25):
        for c in range(90):
            put(os.path.join(root, "src%02d" % a, "mod%02d" % b, "f%03d%s" % (c, exts[c % 5])), i)
            i += 1
for d in range(50):          # ignored build output
    for c in range(100):
        put(os.path.join(root, "build", "out%02d" % d, "g%03d.rs" % c), i); i += 1
for d in range(50):          # hidden folders
    for c in range(100):
        put(os.path.join(root, ".cache", "c%02d" % d, "h%03d.rs" % c), i); i += 1
open(os.path.join(root, ".complete"), "w").close()
print("built %d files" % count, file=sys.stderr)
PY
  fi
}
