"""The shell the adapter runs in the task container, built by pure functions.

Standard library only, so the quoting and the install script are tested without Harbor
(tests/test_commands.py runs both under bash).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence

#: Where the install script puts the binary in the container.
DEFAULT_BINARY = "/usr/local/bin/dsh"
#: Where a binary uploaded from the host is staged before the install script moves it.
STAGED_BINARY = "/installed-agent/dsh"
#: Where an uploaded ``--patch`` config file goes.
STAGED_PATCH = "/installed-agent/dsh-patch.toml"
#: The files the run leaves in the agent's logs folder (downloaded by Harbor).
STREAM_LOG = "dsh.jsonl"
STDERR_LOG = "dsh.stderr.txt"
HOME_DIR = "dsh-home"
TRAJECTORY_FILE = "trajectory.json"

PERMISSION_MODES = ("read-only", "workspace-write", "danger-full-access", "plan")
EFFORTS = ("off", "low", "high", "max")

#: dsh's failure codes (the `dsh: <CODE>: <message>` line on stderr) and the Harbor error
#: class each is reported as, where that Harbor version has it.
ERROR_CLASSES = {
    "RATE_LIMIT": "ApiRateLimitError",
    "QUOTA": "ApiUsageLimitError",
    "SERVER": "ApiInternalServerError",
    "STREAM_CLOSED": "ApiConnectionClosedError",
    "TIMEOUT": "ApiResponseStalledError",
    "CONTEXT_WINDOW_EXCEEDED": "ContextWindowExceededError",
    "UNKNOWN_MODEL": "ModelNotFoundError",
    "AUTH": "AgentAuthenticationError",
    "TRANSPORT": "NetworkConnectionError",
}


def error_line_pattern(code: str) -> str:
    """A regex for dsh's failure line with this code. It takes the whole line, so that it
    ends after any phrase inside the message that a broader pattern would catch (Harbor
    picks the match that ends last)."""
    return rf"(?m)^dsh: {re.escape(code)}:.*$"


#: Any other failure line (`MAX_TURNS`, `RUN_TIMEOUT`, `INVALID_REQUEST`, ...).
ANY_ERROR_LINE = r"(?m)^dsh: [A-Z][A-Z0-9_]*: .*$"


def dsh_argv(
    instruction: str,
    *,
    binary: str = DEFAULT_BINARY,
    model: str | None = None,
    permission_mode: str = "danger-full-access",
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
    timeout: str | None = None,
    patch_files: Iterable[str] = (),
    extra_args: Sequence[str] = (),
) -> list[str]:
    """dsh's argument list for one headless task. The task comes last, after ``--``, so
    that text starting with ``-`` is never read as an option."""
    if permission_mode not in PERMISSION_MODES:
        raise ValueError(
            f"permission_mode must be one of {', '.join(PERMISSION_MODES)}, not {permission_mode!r}"
        )
    if effort is not None and effort not in EFFORTS:
        raise ValueError(f"effort must be one of {', '.join(EFFORTS)}, not {effort!r}")
    if not instruction.strip():
        raise ValueError("the task is empty")
    argv = [binary, "--profile", "headless", "--json", "--permission-mode", permission_mode]
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--effort", effort]
    if max_turns is not None:
        argv += ["--max-turns", str(int(max_turns))]
    if max_budget_usd is not None:
        argv += ["--max-budget-usd", repr(float(max_budget_usd))]
    if timeout:
        argv += ["--timeout", str(timeout)]
    for patch in patch_files:
        argv += ["--patch", patch]
    argv += list(extra_args)
    argv += ["--", instruction]
    return argv


def run_command(argv: Sequence[str], *, logs_dir: str) -> str:
    """The bash command that runs ``argv`` with its event stream copied to
    ``<logs_dir>/dsh.jsonl`` as it comes and its stderr kept in ``<logs_dir>/dsh.stderr.txt``
    (and printed at the end, where Harbor reads failures from). Its exit status is dsh's."""
    q = shlex.quote
    stream = f"{logs_dir.rstrip('/')}/{STREAM_LOG}"
    stderr = f"{logs_dir.rstrip('/')}/{STDERR_LOG}"
    return (
        "set -o pipefail; "
        f"mkdir -p {q(logs_dir)} || exit $?; "
        f"{shlex.join(argv)} </dev/null 2>{q(stderr)} | tee {q(stream)}; "
        "status=$?; "
        f"cat {q(stderr)} >&2; "
        'exit "$status"'
    )


_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def install_script(
    *,
    url: str | None = None,
    staged: str | None = None,
    dest: str = DEFAULT_BINARY,
    sha256: str | None = None,
) -> str:
    """A POSIX sh script (run as root in the container) that installs the dsh binary at
    ``dest`` from ``url`` (downloaded with curl or wget, curl installed if neither is
    there) or from ``staged`` (a file already copied into the container), checks its
    SHA-256 when given, makes sure the system has CA certificates (dsh verifies TLS with
    them), and prints ``dsh --version``."""
    if not url and not staged:
        raise ValueError("give the binary's url or a staged path")
    if sha256 is not None and not _SHA256.match(sha256):
        raise ValueError("sha256 must be 64 hexadecimal digits")
    q = shlex.quote
    lines = [
        "set -eu",
        f"dest={q(dest)}",
        f"url={q(url or '')}",
        f"staged={q(staged or '')}",
        f"sha256={q((sha256 or '').lower())}",
        'tmp="$dest.download.$$"',
        'have() { command -v "$1" >/dev/null 2>&1; }',
        "pkg_install() {",
        "  if have apt-get; then",
        "    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&",
        '    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"',
        '  elif have apk; then apk add --no-cache "$@"',
        '  elif have dnf; then dnf install -y "$@"',
        '  elif have yum; then yum install -y "$@"',
        '  else echo "dsh install: no package manager to install $*" >&2; return 1',
        "  fi",
        "}",
        "has_ca() {",
        "  for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \\",
        "      /etc/ssl/cert.pem /etc/ssl/ca-bundle.pem; do",
        '    [ -s "$f" ] && return 0',
        "  done",
        "  return 1",
        "}",
        "# dsh checks the model API's certificate against the system's roots.",
        "has_ca || pkg_install ca-certificates ||",
        "  echo 'dsh install: no CA certificates; HTTPS to the model will fail' >&2",
        'mkdir -p "$(dirname "$dest")"',
        'if [ -n "$url" ]; then',
        "  if ! have curl && ! have wget; then pkg_install curl; fi",
        "  if have curl; then",
        '    curl -fsSL --retry 3 -o "$tmp" "$url"',
        "  else",
        '    wget -q -O "$tmp" "$url"',
        "  fi",
        'elif [ -f "$staged" ]; then',
        '  cp "$staged" "$tmp"',
        "else",
        '  echo "dsh install: no binary at $staged" >&2',
        "  exit 1",
        "fi",
        'if [ -n "$sha256" ]; then',
        "  if have sha256sum; then",
        '    got="$(sha256sum "$tmp" | cut -d" " -f1)"',
        "  else",
        '    got="$(openssl dgst -sha256 "$tmp" | sed "s/.*= *//")"',
        "  fi",
        '  if [ "$got" != "$sha256" ]; then',
        '    rm -f "$tmp"',
        '    echo "dsh install: SHA-256 $got, expected $sha256" >&2',
        "    exit 1",
        "  fi",
        "fi",
        'chmod 755 "$tmp"',
        'mv -f "$tmp" "$dest"',
        '"$dest" --version',
    ]
    return "\n".join(lines) + "\n"


def parse_version(stdout: str) -> str:
    """``dsh 0.1.0`` -> ``0.1.0`` (the last line's last word)."""
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    if not lines:
        return "unknown"
    return lines[-1].split()[-1]
