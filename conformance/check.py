#!/usr/bin/env python3
"""Checks a dsh binary against the reference's recorded tool results.

Usage: conformance/check.py [--corpus DIR] [--jobs N] [--record-dsh] BINARY

The corpus is ../shared/conformance (or $DSH_CONFORMANCE_DIR, or --corpus); its runner, run.py,
runs every case, ours included. Without a corpus the check fails under CI (CI=true); elsewhere it
says plainly that nothing was checked and exits 0. The check runs in three parts:

1. The tool schemas dsh offers are compared with the reference's (`run.py tools`). A tool it
   offers with a different schema fails the check, and so does a tool listed in
   conformance/offered-tools.txt (every tool dsh offers) that dsh no longer offers; a tool dsh
   offers that the list lacks is named, to be added. Every tool dsh offers is also
   compared with the reference's default composition (tools-default-composition.json, all
   of its tools): a schema that differs fails unless conformance/schema-differences.txt
   lists the tool with its reason (as it lists the tools dsh withholds on purpose).
2. Every case (the corpus's cases/ and cases-next/, then ours in conformance/cases) whose
   scripted calls use only tools dsh offers (or names the reference does not have, which must
   fail as unknown tools) is run with `run.py check`. Cases that need a reference tool dsh has never offered are listed as skipped.
3. A case with deliberate differences (conformance/differences.txt) is checked against a copy of
   its expected results in which each waived result is dsh's own, recorded in
   conformance/expected-dsh/<case>.json: so a waived result still fails when dsh's output
   changes. `--record-dsh` rewrites those files from two runs of the binary (refusing results
   that differ between the runs), for after a deliberate change.

Exits non-zero when anything that was checked failed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SPILL_REGEX = r"<HOME>/sessions/[^\s/]+/[^\s/]+/spill/[A-Za-z0-9._-]+"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DIFFERENCES = os.path.join(HERE, "differences.txt")
EXPECTED_DSH = os.path.join(HERE, "expected-dsh")
OFFERED_TOOLS = os.path.join(HERE, "offered-tools.txt")
SCHEMA_DIFFERENCES = os.path.join(HERE, "schema-differences.txt")


def corpus_dir(given):
    for candidate in (given, os.environ.get("DSH_CONFORMANCE_DIR"),
                      os.path.join(REPO, "..", "shared", "conformance")):
        if candidate and os.path.isfile(os.path.join(candidate, "run.py")):
            return os.path.realpath(candidate)
    return None


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump_json(doc):
    # As run.py writes expected.json: a lone surrogate stays its \\uXXXX escape.
    return (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def load_differences():
    """{case: {result number or None (every result): reason}}."""
    out = {}
    with open(DIFFERENCES, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, why = line.partition(" ")
            case, _, num = key.partition("#")
            out.setdefault(case, {})[int(num) if num else None] = why.strip()
    return out


def load_schema_differences():
    """Tools whose schema differs from the reference's default composition on purpose, or that
    dsh does not offer on purpose: '<tool> <reason>' per line."""
    out = {}
    with open(SCHEMA_DIFFERENCES, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                tool, _, why = line.partition(" ")
                if not why.strip():
                    sys.exit("%s: a difference needs a reason: %r" % (SCHEMA_DIFFERENCES, line))
                out[tool] = why.strip()
    return out


def composition_check(corpus, agent):
    """Compares the schemas of every tool dsh offers with the reference's default composition
    (tools-default-composition.json: all 25 of its tools, where tools.json holds the ten the
    cases use), by running the corpus's own `run.py tools` against a copy of it that reads the
    composition. Returns the tools whose schema differs without being listed as deliberate."""
    composition = os.path.join(corpus, "tools-default-composition.json")
    if not os.path.isfile(composition):
        print("composition: not checked: the corpus has no tools-default-composition.json")
        return []
    with tempfile.TemporaryDirectory(prefix="dsh-composition-") as tmp:
        for name in ("run.py", "mockllm.py"):
            shutil.copy(os.path.join(corpus, name), tmp)
        shutil.copy(composition, os.path.join(tmp, "tools.json"))
        out = subprocess.run([sys.executable, os.path.join(tmp, "run.py"), "tools", "--agent", agent],
                             capture_output=True, text=True).stdout
    waived = load_schema_differences()
    not_offered = re.findall(r"^FAIL (\S+): not offered$", out, re.M)
    differing = re.findall(r"^FAIL (\S+)$", out, re.M)
    alike = re.findall(r"^PASS (\S+)$", out, re.M)
    unexplained = [t for t in differing if t not in waived]
    by_design = [t for t in differing + not_offered if t in waived]
    not_yet = [t for t in not_offered if t not in waived]
    print("composition: %d of the reference's default tools offered with its schema" % len(alike)
          + ("; differing or withheld by design (%s): %s" % (
              os.path.relpath(SCHEMA_DIFFERENCES, REPO), ", ".join(by_design)) if by_design else "")
          + ("; not offered yet: " + ", ".join(not_yet) if not_yet else ""))
    stale = sorted(set(waived) - set(differing) - set(not_offered))
    for tool in stale:
        print("composition: FAIL: %s is listed in %s but its schema is the reference's (or it is "
              "not offered)" % (tool, os.path.relpath(SCHEMA_DIFFERENCES, REPO)))
    if unexplained:
        sys.stdout.write(out)
    return unexplained + stale


def listed_tools():
    with open(OFFERED_TOOLS, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def waived_numbers(waivers, count):
    return list(range(1, count + 1)) if None in waivers else sorted(waivers)


def with_dsh_results(case_dir, waivers, into):
    """A copy of the case in `into` whose expected.json has dsh's own result at each waived
    number; or an error message."""
    name = os.path.basename(case_dir)
    own = os.path.join(EXPECTED_DSH, name + ".json")
    if not os.path.isfile(own):
        return None, "%s has deliberate differences but no %s (run with --record-dsh)" % (
            name, os.path.relpath(own, REPO))
    expected = load_json(os.path.join(case_dir, "expected.json"))
    dsh_results = load_json(own)["results"]
    numbers = waived_numbers(waivers, len(expected["results"]))
    missing = [n for n in numbers if str(n) not in dsh_results]
    if missing:
        return None, "%s: %s has no result for waived %s" % (
            name, os.path.relpath(own, REPO), ", ".join("#%d" % n for n in missing))
    results = list(expected["results"])
    for n in numbers:
        while len(results) < n:  # a waived extra result dsh gives
            results.append(None)
        results[n - 1] = dsh_results[str(n)]
    if any(r is None for r in results):
        return None, "%s: a result between the reference's and dsh's waived ones is missing" % name
    copy = os.path.join(into, name)
    shutil.copytree(case_dir, copy)
    expected["results"] = results
    with open(os.path.join(copy, "expected.json"), "wb") as f:
        f.write(dump_json(expected))
    return copy, None


def record_dsh(run_py, agent, cases, differences, jobs):
    """Writes conformance/expected-dsh/<case>.json for every case with deliberate differences."""
    os.makedirs(EXPECTED_DSH, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="dsh-record-") as tmp:
        copies = {}
        for case_dir in cases:
            name = os.path.basename(case_dir)
            if name in differences:
                copies[name] = os.path.join(tmp, name)
                shutil.copytree(case_dir, copies[name])
        if not copies:
            return 0
        rec = subprocess.run([sys.executable, run_py, "record", "--agent", agent, "--repeat", "2",
                              "-j", str(jobs), "--spill-regex", SPILL_REGEX] + list(copies.values()))
        failed += rec.returncode != 0
        for name, copy in sorted(copies.items()):
            got = os.path.join(copy, "expected.json")
            if not os.path.isfile(got):
                print("not recorded: %s" % name)
                failed += 1
                continue
            results = load_json(got)["results"]
            numbers = waived_numbers(differences[name], len(results))
            doc = {"case": name,
                   "note": "dsh's own results where it differs from the reference on purpose "
                           "(conformance/differences.txt); written by check.py --record-dsh",
                   "results": {str(n): results[n - 1] for n in numbers if n <= len(results)}}
            with open(os.path.join(EXPECTED_DSH, name + ".json"), "wb") as f:
                f.write(dump_json(doc))
            print("recorded dsh's results of %s: %s" % (name, ", ".join("#%d" % n for n in numbers)))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--corpus")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--record-dsh", action="store_true",
                    help="rewrite conformance/expected-dsh from this binary's results")
    opts = ap.parse_args()
    corpus = corpus_dir(opts.corpus)
    if corpus is None:
        where = "looked at --corpus, $DSH_CONFORMANCE_DIR and ../shared/conformance"
        if os.environ.get("CI") == "true":
            print("conformance: FAIL: no corpus found (%s); CI must check against it" % where)
            return 1
        print("conformance: NOT CHECKED: no corpus found (%s), and its runner runs our own "
              "cases (conformance/cases) too; nothing was checked" % where)
        return 0
    agent = "%s --patch %s {task}" % (os.path.realpath(opts.binary), os.path.join(HERE, "agent.toml"))
    run_py = os.path.join(corpus, "run.py")
    differences = load_differences()

    tools = subprocess.run([sys.executable, run_py, "tools", "--agent", agent],
                           capture_output=True, text=True)
    sys.stdout.write(tools.stdout)
    sys.stderr.write(tools.stderr)
    missing = set(re.findall(r"^FAIL (\S+): not offered$", tools.stdout, re.M))
    schema_failures = re.findall(r"^FAIL (\S+)$", tools.stdout, re.M)
    offered = set(re.findall(r"^(?:PASS|FAIL) (\S+)$", tools.stdout, re.M))
    for extra in re.findall(r"^also offered \(not compared\): (.*)$", tools.stdout, re.M):
        offered.update(t.strip() for t in extra.split(","))
    reference_tools = {t["name"] for t in load_json(os.path.join(corpus, "tools.json"))["tools"]}
    schema_failures += composition_check(corpus, agent)
    expected_tools = listed_tools()
    gone = sorted(expected_tools - offered)
    if gone:
        print("conformance: FAIL: dsh no longer offers %s (listed in %s)" % (
            ", ".join(gone), os.path.relpath(OFFERED_TOOLS, REPO)))
    unlisted = sorted(offered - expected_tools)
    if unlisted:
        print("note: dsh offers tools %s/offered-tools.txt does not list: %s" % (
            os.path.relpath(HERE, REPO), ", ".join(unlisted)))

    selected, skipped = [], []
    # The reference's recorded cases; then its cases-next, recorded for tools dsh did not offer
    # when the corpus was written (the corpus is read-only here, so they run from where they are
    # rather than being moved into cases/, and one whose tool dsh lacks is skipped like any
    # other); then ours (conformance/cases: behaviours the recorded corpus does not pin, with
    # results written from the reference's source).
    for cases in (os.path.join(corpus, "cases"), os.path.join(corpus, "cases-next"),
                  os.path.join(HERE, "cases")):
        if not os.path.isdir(cases):
            continue
        for name in sorted(os.listdir(cases)):
            script = os.path.join(cases, name, "script.json")
            if not os.path.isfile(script):
                continue
            called = {c["name"] for t in load_json(script)["turns"]
                      for c in t.get("tool_calls", [])}
            needed = (called & reference_tools) & missing
            (skipped if needed else selected).append((os.path.join(cases, name), needed))
    if skipped:
        print("skipped (tools not offered yet): " + ", ".join(
            "%s [%s]" % (os.path.basename(n), ",".join(sorted(t))) for n, t in skipped))
    if opts.record_dsh:
        return record_dsh(run_py, agent, [c for c, _ in selected], differences, opts.jobs)
    names = {os.path.basename(c) for c, _ in selected}
    problems = ["a difference is listed for %s, which is not a case that ran" % case
                for case in sorted(differences) if case not in names]
    with tempfile.TemporaryDirectory(prefix="dsh-conformance-") as tmp:
        paths, waived = [], []
        for case_dir, _ in selected:
            name = os.path.basename(case_dir)
            if name not in differences:
                paths.append(case_dir)
                continue
            copy, problem = with_dsh_results(case_dir, differences[name], tmp)
            if problem:
                problems.append(problem)
            else:
                paths.append(copy)
                waived.append("%s %s" % (name, ",".join(
                    "#%d" % n if n else "(all)" for n in sorted(differences[name], key=lambda n: n or 0))))
        if waived:
            print("deliberate differences (conformance/differences.txt), each compared with dsh's "
                  "own result in conformance/expected-dsh: " + "; ".join(waived))
        if not paths:
            print("conformance: no case can run")
            return 1
        check = subprocess.run(
            [sys.executable, run_py, "check", "--agent", agent, "-q", "-j", str(opts.jobs),
             # Our spill files live in the session folder under DSH_HOME, not in a temp dir.
             "--spill-regex", SPILL_REGEX] + paths)
    for problem in problems:
        print("conformance: FAIL: " + problem)
    if schema_failures:
        print("conformance: tool schemas differ: " + ", ".join(schema_failures))
    return 1 if (check.returncode or schema_failures or gone or problems) else 0


if __name__ == "__main__":
    sys.exit(main())
