"""The Harbor agent class. Where Harbor is importable, a whole trial's agent part runs on
this machine: install from the built binary, run against the scripted model server, then
the context and trajectory.json, through a stand-in for Harbor's environment that runs
commands locally. Without Harbor, only what the module does then is checked."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
# Harbor's model-price table would otherwise be fetched from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from dsh_harbor import agent, commands  # noqa: E402

ROOT = HERE.parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
DSH = TARGET / "debug" / "dsh"
SERVER = TARGET / "debug" / "scripted-server"
# CI (.ci/run) installs Harbor and builds both binaries, and sets this: then the tests below
# that would skip without them must run, and this one fails if they cannot.
REQUIRED = os.environ.get("DSH_TEST_REQUIRE_HARBOR") == "1"


class Required(unittest.TestCase):
    @unittest.skipUnless(REQUIRED, "DSH_TEST_REQUIRE_HARBOR is not 1")
    def test_harbor_and_the_binaries_are_there(self):
        self.assertTrue(
            agent.HARBOR_AVAILABLE,
            "harbor is not importable by %s (%s); the trial would be skipped"
            % (sys.executable, sys.version.split()[0]),
        )
        self.assertTrue(DSH.is_file(), "%s is not built; the trial would be skipped" % DSH)
        self.assertTrue(SERVER.is_file(), "%s is not built; the trial would be skipped" % SERVER)


@unittest.skipIf(agent.HARBOR_AVAILABLE, "harbor is importable here")
class WithoutHarbor(unittest.TestCase):
    def test_module_imports_but_the_agent_cannot_be_built(self):
        with self.assertRaises(RuntimeError) as caught:
            agent.DshAgent(logs_dir=Path("/tmp"))
        self.assertIn("pip install harbor", str(caught.exception))


class LocalEnvironment:
    """Enough of Harbor's BaseEnvironment for an installed agent: commands run here under
    bash, in one working folder; uploads are copies."""

    def __init__(self, workdir: Path, base_env: dict[str, str]):
        self.workdir = workdir
        self.base_env = base_env
        self.default_user = None
        self.commands: list[str] = []

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        self.commands.append(command)
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.workdir,
            env={**self.base_env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_sec or 120,
        )
        return SimpleNamespace(return_code=done.returncode, stdout=done.stdout, stderr=done.stderr)

    async def upload_file(self, source_path, target_path):
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target_path)


class ScriptedServer:
    def __init__(self, steps: int):
        self.process = subprocess.Popen(
            [str(SERVER), str(steps)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.url = self.process.stdout.readline().strip()

    def close(self):
        self.process.stdin.close()  # the server stops when its stdin closes
        self.process.wait(timeout=30)
        self.process.stdout.close()


@unittest.skipUnless(agent.HARBOR_AVAILABLE, "harbor is not importable here")
class WithHarbor(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.logs = self.tmp / "logs" / "agent"
        self.logs.mkdir(parents=True)
        self.work = self.tmp / "app"
        self.work.mkdir()
        # The container's paths, moved under the temporary folder.
        self.cls = type(
            "LocalDshAgent",
            (agent.DshAgent,),
            {
                "BINARY": str(self.tmp / "usr-local-bin" / "dsh"),
                "STAGED_BINARY": str(self.tmp / "installed-agent" / "dsh"),
                "STAGED_PATCH": str(self.tmp / "installed-agent" / "dsh-patch.toml"),
                "REMOTE_LOGS_DIR": str(self.logs),
            },
        )
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
        self.env = LocalEnvironment(self.work, base_env)

    def make(self, **kwargs):
        return self.cls(
            logs_dir=self.logs,
            model_name="deepseek/deepseek-v4-flash",
            **kwargs,
        )

    def context(self):
        from harbor.models.agent.context import AgentContext

        return AgentContext()

    def test_identity_and_flags(self):
        a = self.make(
            binary_url="https://example.invalid/dsh",
            max_turns="30",
            effort="high",
            extra_args="--disallowed-tools web_search",
            pass_env="OTHER_KEY, MORE",
        )
        self.assertEqual(a.name(), "dsh")
        self.assertEqual(type(a).import_path(), f"{type(a).__module__}:LocalDshAgent")
        self.assertEqual(agent.DshAgent.import_path(), "dsh_harbor.agent:DshAgent")
        argv = a._argv("task")
        self.assertEqual(argv[-2:], ["--", "task"])
        self.assertIn("--max-turns", argv)
        self.assertEqual(argv[argv.index("--model") + 1], "deepseek/deepseek-v4-flash")
        self.assertIn("web_search", argv)
        self.assertEqual(a._pass_env, ["OTHER_KEY", "MORE"])
        # Harbor's --effort arrives as reasoning_effort.
        b = self.make(binary_url="https://example.invalid/dsh", reasoning_effort="max")
        argv = b._argv("task")
        self.assertEqual(argv[argv.index("--effort") + 1], "max")
        with self.assertRaises(ValueError):
            self.make(reasoning_effort="medium")
        with self.assertRaises(ValueError):
            self.make(permission_mode="everything")
        with self.assertRaises(ValueError):
            self.make(binary_path=str(self.tmp / "not-there"))

    def test_failures_are_classified_by_dsh_s_code(self):
        a = self.make(binary_url="https://example.invalid/dsh")
        if not hasattr(a, "_classify_exec_error"):
            self.skipTest("this Harbor does not classify failures")
        from harbor.agents.installed import base

        def classify(stderr):
            result = SimpleNamespace(return_code=1, stdout="", stderr=stderr)
            return type(a._classify_exec_error("dsh ...", result))

        retry = "dsh: retrying (attempt 2 of 6) in 0.7 s after RATE_LIMIT: rate limited\n"
        self.assertIs(
            classify(retry + "dsh: SERVER: HTTP 503 from the provider\n"),
            base.ApiInternalServerError,
        )
        self.assertIs(
            classify(retry + "dsh: MAX_TURNS: the run made 30 requests\n"),
            base.NonZeroAgentExitCodeError,
        )
        self.assertIs(
            classify("dsh: RATE_LIMIT: rate limited by the provider\n"), base.ApiRateLimitError
        )
        self.assertIs(
            classify("dsh: TRANSPORT: cannot reach http://x: connection refused\n"),
            base.NetworkConnectionError,
        )

    def test_no_binary_is_an_install_error(self):
        a = self.make()
        with self.assertRaises(ValueError) as caught:
            asyncio.run(a.install(self.env))
        self.assertIn("DSH_BINARY_URL", str(caught.exception))

    @unittest.skipUnless(
        DSH.is_file() and SERVER.is_file(), "target/debug/dsh or scripted-server not built"
    )
    def test_a_trial_s_agent_part(self):
        server = ScriptedServer(3)
        self.addCleanup(server.close)
        prices = self.tmp / "prices.toml"
        prices.write_text(
            '[models."deepseek-v4-flash".prices]\ninput = 0.27\noutput = 1.10\n'
            "cache_read = 0.07\ncache_write = 0.0\n"
        )
        a = self.make(
            binary_path=str(DSH),
            config_file=str(prices),
            extra_env={"DEEPSEEK_API_KEY": "test", "DEEPSEEK_BASE_URL": server.url},
        )
        asyncio.run(a.install(self.env))
        self.assertTrue(os.access(a.BINARY, os.X_OK))
        task = 'Run `true` twice; then say "done" — it\'s $(not) a shell'
        ctx = self.context()
        asyncio.run(a.run(task, self.env, ctx))
        a.populate_context_post_run(ctx)

        events = [
            json.loads(line) for line in (self.logs / commands.STREAM_LOG).read_text().splitlines()
        ]
        final = events[-1]
        self.assertEqual(final["type"], "final")
        self.assertEqual(final["reason"], {"kind": "completed"})
        usage = final["usage"]
        self.assertEqual(
            ctx.n_input_tokens,
            usage["inputTokens"] + usage["cacheReadTokens"] + usage["cacheWriteTokens"],
        )
        self.assertEqual(ctx.n_output_tokens, usage["outputTokens"])
        self.assertEqual(ctx.n_cache_tokens, usage["cacheReadTokens"])
        self.assertAlmostEqual(ctx.cost_usd, usage["costUsd"], places=12)  # the patch's prices
        self.assertEqual(ctx.metadata["dsh_session_id"], final["sessionId"])
        self.assertTrue(ctx.metadata["completed"])
        # The session log is kept with the agent's logs.
        self.assertTrue(list((self.logs / commands.HOME_DIR / "sessions").rglob("session.jsonl")))

        from harbor.models.trajectories import Trajectory

        traj = Trajectory.model_validate_json((self.logs / commands.TRAJECTORY_FILE).read_text())
        self.assertEqual(traj.steps[0].source, "user")
        self.assertEqual(traj.steps[0].message, task)
        self.assertEqual(len(traj.steps), 1 + final["steps"])
        self.assertEqual(sum(len(s.tool_calls or []) for s in traj.steps), 2)
        self.assertEqual(traj.final_metrics.total_prompt_tokens, ctx.n_input_tokens)
        self.assertEqual(traj.session_id, final["sessionId"])
        if hasattr(a, "convert_trajectory"):
            again = a.convert_trajectory(self.logs)
            self.assertEqual(again.final_metrics, traj.final_metrics)

    @unittest.skipUnless(DSH.is_file(), "target/debug/dsh not built")
    def test_a_failed_run_still_reports(self):
        config = self.tmp / "no-retries.toml"
        config.write_text("[requests]\nretries = 0\n")
        a = self.make(
            binary_path=str(DSH),
            config_file=str(config),
            extra_env={"DEEPSEEK_API_KEY": "test", "DEEPSEEK_BASE_URL": "http://127.0.0.1:1"},
        )
        asyncio.run(a.install(self.env))
        from harbor.agents.installed.base import NonZeroAgentExitCodeError

        with self.assertRaises(NonZeroAgentExitCodeError) as caught:
            asyncio.run(a.run("say done", self.env, self.context()))
        self.assertIn("TRANSPORT", str(caught.exception))
        ctx = self.context()
        a.populate_context_post_run(ctx)  # Harbor calls it after a failed run too
        self.assertEqual(ctx.metadata["error_code"], "TRANSPORT")
        self.assertFalse(ctx.metadata["completed"])
        self.assertIn("TRANSPORT", ctx.metadata["stderr_tail"])
        self.assertEqual(ctx.n_input_tokens, 0)
        traj = json.loads((self.logs / commands.TRAJECTORY_FILE).read_text())
        self.assertEqual(traj["steps"][-1]["source"], "system")
        self.assertIn("TRANSPORT", traj["steps"][-1]["message"])

    def test_populate_without_a_stream_leaves_the_context_alone(self):
        a = self.make(binary_url="https://example.invalid/dsh")
        ctx = self.context()
        a.populate_context_post_run(ctx)
        self.assertTrue(ctx.is_empty())
        self.assertFalse((self.logs / commands.TRAJECTORY_FILE).exists())


if __name__ == "__main__":
    unittest.main()
