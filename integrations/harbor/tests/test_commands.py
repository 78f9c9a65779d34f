"""The run command and the install script, run for real under bash and sh (with a stand-in
for dsh where the real one is not the point)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsh_harbor import commands  # noqa: E402

# A stand-in for dsh: its argument list as one event on stdout, a line on stderr, and the
# exit status it is told to have.
FAKE_DSH = """#!{python}
import json, os, sys
print(json.dumps({{"type": "argv", "argv": sys.argv[1:]}}))
print("dsh: SERVER: pretend failure", file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_STATUS", "0")))
"""

TRICKY_TASKS = [
    "plain words",
    "it's \"quoted\" both 'ways'",
    "$(touch {pwned}) and `touch {pwned}` and ${{HOME}}",
    "line one\nline two\n\ttabbed\n",
    "--help",
    "-rf / ; exit 0",
    "'; touch {pwned}; echo '",
    "unicode: 日本語 ✓ — ünïcödé",
    "glob * ? [a-z] ~ ! # & | < > \\",
]

CA_FILES = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
]
HAS_CA = any(os.path.getsize(p) > 0 for p in CA_FILES if os.path.exists(p))


class Argv(unittest.TestCase):
    def test_shape(self):
        argv = commands.dsh_argv(
            "fix it",
            model="deepseek/deepseek-v4-pro",
            effort="max",
            max_turns=40,
            max_budget_usd=2.5,
            timeout="55m",
            patch_files=["/installed-agent/dsh-patch.toml"],
            extra_args=["--disallowed-tools", "web_search"],
        )
        self.assertEqual(
            argv,
            [
                commands.DEFAULT_BINARY,
                "--profile",
                "headless",
                "--json",
                "--permission-mode",
                "danger-full-access",
                "--model",
                "deepseek/deepseek-v4-pro",
                "--effort",
                "max",
                "--max-turns",
                "40",
                "--max-budget-usd",
                "2.5",
                "--timeout",
                "55m",
                "--patch",
                "/installed-agent/dsh-patch.toml",
                "--disallowed-tools",
                "web_search",
                "--",
                "fix it",
            ],
        )

    def test_minimal(self):
        self.assertEqual(
            commands.dsh_argv("x", binary="dsh"),
            [
                "dsh",
                "--profile",
                "headless",
                "--json",
                "--permission-mode",
                "danger-full-access",
                "--",
                "x",
            ],
        )

    def test_refusals(self):
        with self.assertRaises(ValueError):
            commands.dsh_argv("x", permission_mode="yolo")
        with self.assertRaises(ValueError):
            commands.dsh_argv("x", effort="extreme")
        with self.assertRaises(ValueError):
            commands.dsh_argv("  \n")


class RunCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.fake = self.tmp / "fake-dsh"
        self.fake.write_text(FAKE_DSH.format(python=sys.executable))
        self.fake.chmod(0o755)
        self.logs = self.tmp / "logs dir" / "agent"  # a space, and not there yet

    def run_task(self, task: str, status: int = 0) -> subprocess.CompletedProcess:
        argv = commands.dsh_argv(task, binary=str(self.fake))
        command = commands.run_command(argv, logs_dir=str(self.logs))
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.tmp,
            env={**os.environ, "FAKE_STATUS": str(status)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_every_task_arrives_as_one_argument_unchanged(self):
        pwned = self.tmp / "pwned"
        for template in TRICKY_TASKS:
            task = template.format(pwned=pwned)
            with self.subTest(task=task):
                done = self.run_task(task)
                self.assertEqual(done.returncode, 0, done.stderr)
                event = json.loads((self.logs / commands.STREAM_LOG).read_text())
                self.assertEqual(event["argv"][-2:], ["--", task])
                self.assertEqual(json.loads(done.stdout)["argv"][-1], task)
                self.assertFalse(pwned.exists(), "the task was run by the shell")

    def test_exit_status_and_stderr_are_dsh_s(self):
        done = self.run_task("fail please", status=3)
        self.assertEqual(done.returncode, 3)
        self.assertIn("dsh: SERVER: pretend failure", done.stderr)
        self.assertIn("dsh: SERVER: pretend failure", (self.logs / commands.STDERR_LOG).read_text())
        # stderr stays out of the event stream
        self.assertNotIn("SERVER", (self.logs / commands.STREAM_LOG).read_text())

    def test_under_harbor_s_prefix(self):
        # Harbor runs every command as `set -o pipefail; <command>` under bash -c.
        argv = commands.dsh_argv("x", binary=str(self.fake))
        command = "set -o pipefail; " + commands.run_command(argv, logs_dir=str(self.logs))
        done = subprocess.run(
            ["bash", "-c", command],
            env={**os.environ, "FAKE_STATUS": "1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 1)

    def test_real_binary_takes_the_argv(self):
        """The real dsh accepts the argument list: with no key it stops at AUTH, after
        reading every flag (a bad flag would be USAGE)."""
        target = Path(os.environ.get("CARGO_TARGET_DIR", HERE.parents[2] / "target"))
        dsh = target / "debug" / "dsh"
        if not os.access(dsh, os.X_OK):
            self.skipTest(f"{dsh} is not built")
        home = self.tmp / "home"
        home.mkdir()
        argv = commands.dsh_argv(
            "--help me; $(echo no)",
            binary=str(dsh),
            model="deepseek/deepseek-v4-flash",
            effort="low",
            max_turns=3,
            timeout="30s",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
        env["DSH_HOME"] = str(home)
        done = subprocess.run(
            ["bash", "-c", commands.run_command(argv, logs_dir=str(self.logs))],
            cwd=self.tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 1)
        events = [
            json.loads(line) for line in (self.logs / commands.STREAM_LOG).read_text().splitlines()
        ]
        self.assertEqual([e["type"] for e in events], ["error"])
        self.assertEqual(events[0]["code"], "AUTH")


class InstallScript(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.binary = self.tmp / "built-dsh"
        self.binary.write_text("#!/bin/sh\necho 'dsh 9.8.7'\n")
        self.dest = self.tmp / "bin" / "dsh"

    def install(self, **kwargs) -> subprocess.CompletedProcess:
        script = commands.install_script(dest=str(self.dest), **kwargs)
        return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120)

    @unittest.skipUnless(HAS_CA, "no CA certificates here: the script would install them")
    def test_from_a_staged_file(self):
        done = self.install(staged=str(self.binary))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "dsh 9.8.7")
        self.assertTrue(os.access(self.dest, os.X_OK))
        self.assertEqual(commands.parse_version(done.stdout), "9.8.7")

    @unittest.skipUnless(HAS_CA, "no CA certificates here: the script would install them")
    @unittest.skipUnless(shutil.which("curl") or shutil.which("wget"), "no curl or wget")
    def test_from_a_url(self):
        if not shutil.which("curl"):
            self.skipTest("wget does not read file:// addresses")
        done = self.install(url=self.binary.as_uri())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "dsh 9.8.7")

    @unittest.skipUnless(HAS_CA, "no CA certificates here: the script would install them")
    def test_sha256(self):
        digest = hashlib.sha256(self.binary.read_bytes()).hexdigest()
        done = self.install(staged=str(self.binary), sha256=digest.upper())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.dest.unlink()
        done = self.install(staged=str(self.binary), sha256="0" * 64)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("SHA-256", done.stderr)
        self.assertFalse(self.dest.exists())
        self.assertEqual(list(self.dest.parent.iterdir()), [], "no partial download left")

    @unittest.skipUnless(HAS_CA, "no CA certificates here: the script would install them")
    def test_missing_staged_file(self):
        done = self.install(staged=str(self.tmp / "nothing"))
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no binary", done.stderr)

    def test_refusals(self):
        with self.assertRaises(ValueError):
            commands.install_script()
        with self.assertRaises(ValueError):
            commands.install_script(url="https://x/dsh", sha256="abc")

    def test_odd_paths_are_quoted(self):
        script = commands.install_script(url="https://x/a b'c", dest="/opt/my bin/dsh")
        self.assertIn("url='https://x/a b'\"'\"'c'", script)
        self.assertIn("dest='/opt/my bin/dsh'", script)


class Misc(unittest.TestCase):
    def test_parse_version(self):
        self.assertEqual(commands.parse_version("dsh 0.1.0\n"), "0.1.0")
        self.assertEqual(commands.parse_version("noise\ndsh 1.2.3-rc.1"), "1.2.3-rc.1")
        self.assertEqual(commands.parse_version(""), "unknown")

    def test_error_lines(self):
        stderr = (
            "dsh: retrying (attempt 2 of 6) in 0.7 s after RATE_LIMIT: rate limited\n"
            "dsh: SERVER: the provider failed (HTTP 503)\n"
        )
        flags = re.IGNORECASE  # as Harbor compiles them
        self.assertIsNone(re.search(commands.error_line_pattern("RATE_LIMIT"), stderr, flags))
        server = re.search(commands.error_line_pattern("SERVER"), stderr, flags)
        self.assertEqual(server.group(0), "dsh: SERVER: the provider failed (HTTP 503)")
        matches = [m.group(0) for m in re.finditer(commands.ANY_ERROR_LINE, stderr, flags)]
        self.assertEqual(matches, ["dsh: SERVER: the provider failed (HTTP 503)"])


if __name__ == "__main__":
    unittest.main()
