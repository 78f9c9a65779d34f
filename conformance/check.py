#!/usr/bin/env python3
"""Checks a dsh binary against the reference's recorded tool results.

Usage: conformance/check.py [--corpus DIR] [--jobs N] BINARY

The corpus is ../shared/conformance (or $DSH_CONFORMANCE_DIR, or --corpus). The check runs in
two parts:

1. The tool schemas dsh offers are compared with the reference's (`run.py tools`). A tool dsh
   does not offer yet is listed; a tool it offers with a different schema fails the check.
2. Every case (the corpus's, then ours in conformance/cases) whose scripted calls use only tools
   dsh offers (or names the reference does not
   have, which must fail as unknown tools) is run with `run.py check`, with the deliberate
   differences of conformance/differences.txt. Cases that need a tool dsh lacks are listed as
   skipped.

Exits non-zero when anything that was checked failed.
"""
import argparse
import json
import os
import re
import subprocess
import sys

SPILL_REGEX = r"<HOME>/sessions/[^\s/]+/[^\s/]+/spill/[A-Za-z0-9._-]+"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def corpus_dir(given):
    for candidate in (given, os.environ.get("DSH_CONFORMANCE_DIR"),
                      os.path.join(REPO, "..", "shared", "conformance")):
        if candidate and os.path.isfile(os.path.join(candidate, "run.py")):
            return os.path.realpath(candidate)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--corpus")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    opts = ap.parse_args()
    corpus = corpus_dir(opts.corpus)
    if corpus is None:
        print("conformance: no corpus found (looked at --corpus, $DSH_CONFORMANCE_DIR and "
              "../shared/conformance); nothing checked")
        return 0
    agent = "%s --patch %s {task}" % (os.path.realpath(opts.binary), os.path.join(HERE, "agent.toml"))
    run_py = os.path.join(corpus, "run.py")

    tools = subprocess.run([sys.executable, run_py, "tools", "--agent", agent],
                           capture_output=True, text=True)
    sys.stdout.write(tools.stdout)
    missing = set(re.findall(r"^FAIL (\S+): not offered$", tools.stdout, re.M))
    schema_failures = [n for n in re.findall(r"^FAIL (\S+)$", tools.stdout, re.M)]
    reference_tools = {t["name"] for t in json.load(open(os.path.join(corpus, "tools.json")))["tools"]}

    selected, skipped = [], []
    # The reference's recorded cases, then ours (conformance/cases: behaviours the recorded
    # corpus does not pin, with results written from the reference's source).
    for cases in (os.path.join(corpus, "cases"), os.path.join(HERE, "cases")):
        for name in sorted(os.listdir(cases)):
            script = os.path.join(cases, name, "script.json")
            if not os.path.isfile(script):
                continue
            called = {c["name"] for t in json.load(open(script))["turns"]
                      for c in t.get("tool_calls", [])}
            needed = (called & reference_tools) & missing
            (skipped if needed else selected).append((os.path.join(cases, name), needed))
    if skipped:
        print("skipped (tools not offered yet): " + ", ".join(
            "%s [%s]" % (os.path.basename(n), ",".join(sorted(t))) for n, t in skipped))
    if not selected:
        print("conformance: no case can run yet")
        return 1 if schema_failures else 0
    check = subprocess.run(
        [sys.executable, run_py, "check", "--agent", agent, "-q", "-j", str(opts.jobs),
         "--differences", os.path.join(HERE, "differences.txt"),
         # Our spill files live in the session folder under DSH_HOME, not in a temp dir.
         "--spill-regex", SPILL_REGEX]
        + [path for path, _ in selected])
    if schema_failures:
        print("conformance: tool schemas differ: " + ", ".join(schema_failures))
    return 1 if (check.returncode or schema_failures) else 0


if __name__ == "__main__":
    sys.exit(main())
