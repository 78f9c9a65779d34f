"""Counts the cases the fault tests recorded (dsh_testkit::fault_matrix) into the fault matrix
of docs/reliability.md. Usage: fault_matrix.py <cases file> <property cases per test>"""

import collections
import datetime
import sys

CLASSES = ["provider fault", "kill point", "hostile input", "secret", "attack"]


def main() -> None:
    path, per_test = sys.argv[1], sys.argv[2]
    counts: "collections.Counter[tuple[str, str, str]]" = collections.Counter()
    with open(path, encoding="utf-8") as rows:
        for line in rows:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                counts[(parts[0], parts[1], parts[2])] += 1
    out = sys.stdout
    out.write("# Reliability: the fault matrix\n\n")
    out.write(
        "Written by `scripts/fault-matrix`; do not edit by hand. Each row is something done to dsh "
        "on purpose (a provider that fails, a kill at a record boundary, input no well-behaved "
        "peer sends, a secret where it should not be, an attack a hostile model could make "
        "from its own tools), how many cases of it the tests tried, and "
        "how dsh came out of it. A case is counted only once its test's assertions held, so "
        "every row's outcome held for every case counted; a failing case stops the script "
        "instead.\n\n"
    )
    out.write(
        f"- Date: {datetime.date.today().isoformat()}\n"
        f"- Property tests: {per_test} generated cases each (proptest; CI runs 256, "
        "`scripts/fuzz` more), plus the saved seeds of past failures; a row with fewer left "
        "out the generated inputs its property does not apply to (an edit whose text is not "
        "unique, a command it will not run)\n\n"
    )
    total = 0
    for cls in CLASSES:
        rows = sorted((k, n) for k, n in counts.items() if k[0] == cls)
        if not rows:
            continue
        out.write(f"## {cls[0].upper() + cls[1:]}s\n\n")
        out.write("| case | tried | outcome |\n|---|---|---|\n")
        for (_, case, outcome), n in rows:
            out.write(f"| {case} | {n} | {outcome} |\n")
            total += n
        out.write("\n")
    out.write(
        f"{total} cases in all. Each row's outcome is what its test asserts, and only that: "
        "the secret rows cover the cases listed, not every path a secret can take (see "
        "`docs/config.md` for what is and is not redacted).\n\n"
    )
    out.write(
        "Where the tests are: provider faults in `crates/dsh/tests/cli/faults.rs`, kill points in "
        "`crates/dsh/tests/cli/kill_matrix.rs`, secrets in `crates/dsh/tests/cli/secrets.rs`, "
        "hostile inputs in `crates/dsh-llm/src/stream_props.rs`, "
        "`crates/dsh-core/src/log_props.rs`, `crates/dsh-config/tests/config_props.rs` and "
        "`crates/dsh-tools/tests/props.rs`, attacks in `crates/dsh/tests/cli/sandbox.rs`, "
        "`signals.rs`, `providers.rs`, `trust.rs`, `rewind.rs`, `login.rs`, `mcp_oauth.rs`, "
        "`web.rs`, `web_app.rs`, `tui.rs`, `install_sh.rs`, `app_server_attacks.rs`, `rules.rs` and "
        "`errors.rs` there, "
        "`crates/dsh-checkpoint/tests/restore.rs`, `crates/dsh-mcp/tests/floods.rs` and "
        "`servers.rs`, `crates/dsh-tools/tests/files.rs` and "
        "`crates/dsh-tools/tests/search.rs` (the sandbox's "
        "escape suite is counted in `docs/sandbox.md`).\n"
    )


if __name__ == "__main__":
    main()
