"""Writes the real-size benchmark's repository: a committed Git tree of 50,000 source files
(about 550 MB), laid out as a mid-size monorepo (services, libraries, vendored code, docs), with
a .gitignore and some ignored build output beside it. The same bytes on every machine: the
content comes from a fixed seed, and the commit from fixed names and dates.

Usage: bigrepo_tree.py DIR   (DIR must not exist; it is made, then marked complete)
"""

import os
import random
import subprocess
import sys

FILES = 50_000
TARGET_BYTES = 550 * 1000 * 1000

WORDS = (
    "let value result config request response handler client server index buffer "
    "parse render update delete create fetch store cache token session user account "
    "order item price total count offset limit cursor stream error retry timeout "
    "write read open close flush lock queue event state model view route table"
).split()
KINDS = [
    (".rs", "fn {a}_{b}(input: &str) -> Result<usize, Error> {{ let {c} = input.len() + {n}; Ok({c}) }}"),
    (".ts", "export function {a}{B}(input: string): number {{ const {c} = input.length + {n}; return {c}; }}"),
    (".py", "def {a}_{b}(value):\n    {c} = len(value) + {n}\n    return {c}"),
    (".go", "func {A}{B}(input string) int {{ {c} := len(input) + {n}; return {c} }}"),
    (".md", "The {a} {b} keeps its {c} within {n} units, as the {a} guide describes."),
]


def line(rng, kind):
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    return kind.format(a=a, b=b, c=c, A=a.title(), B=b.title(), n=rng.randint(0, 99999))


def main():
    root = sys.argv[1]
    if os.path.exists(root):
        sys.exit("bigrepo_tree.py: %s exists" % root)
    rng = random.Random(2026)
    os.makedirs(root)
    layout = []
    for area, count in (("services", 20), ("libs", 30), ("vendor", 10), ("tools", 5), ("docs", 5)):
        for i in range(count):
            layout.append(os.path.join(area, "%s%02d" % (area[:-1] if area.endswith("s") else area, i)))
    # Sizes from a skewed distribution around the mean a 550 MB tree of 50,000 files has.
    mean = TARGET_BYTES / FILES
    written = 0
    for n in range(FILES):
        top = layout[n % len(layout)]
        folder = os.path.join(root, top, "src", "m%03d" % ((n // len(layout)) % 90))
        ext, kind = KINDS[n % len(KINDS)]
        if top.startswith("docs"):
            ext, kind = KINDS[4]
        os.makedirs(folder, exist_ok=True)
        size = int(rng.expovariate(1 / mean))
        size = max(200, min(size, 400_000))
        lines = []
        total = 0
        while total < size:
            text = line(rng, kind)
            lines.append(text)
            total += len(text) + 1
        body = "\n".join(lines) + "\n"
        with open(os.path.join(folder, "f%05d%s" % (n, ext)), "w") as f:
            f.write(body)
        written += len(body)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("target/\nnode_modules/\n*.log\n")
    for i in range(200):
        out = os.path.join(root, "target", "debug", "o%03d" % (i // 50))
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "a%03d.o" % i), "w") as f:
            f.write("object %d\n" % i * 100)
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    git = ["git", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"]
    subprocess.run(git + ["init", "-q", root], check=True, env=env)
    subprocess.run(git + ["-C", root, "add", "-A"], check=True, env=env)
    subprocess.run(git + ["-C", root, "commit", "-q", "-m", "the benchmark's tree"],
                   check=True, env=env)
    open(os.path.join(root, ".git", "dsh-bench-complete"), "w").close()
    print("built %d files, %d MB, committed" % (FILES, written // 1_000_000), file=sys.stderr)


if __name__ == "__main__":
    main()
