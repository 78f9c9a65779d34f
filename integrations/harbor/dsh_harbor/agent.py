"""dsh as a Harbor installed agent: ``harbor run -a dsh_harbor.agent:DshAgent ...``.

Harbor is imported here and nowhere else in the package. Without it this module still
imports (its pure parts are tested that way), but :class:`DshAgent` cannot be built.

What it does in each trial:

1. ``install``: puts a static dsh binary at ``/usr/local/bin/dsh`` in the task container,
   downloaded from ``binary_url`` (``DSH_BINARY_URL``) or uploaded from ``binary_path``
   (``DSH_BINARY_PATH``), optionally checked against ``binary_sha256``.
2. ``run``: ``dsh --profile headless --json --permission-mode danger-full-access
   [--model M] ... -- "<task>"`` in the task's working folder, with the model's key from
   the environment, the event stream copied to ``/logs/agent/dsh.jsonl`` and the session
   log kept under ``/logs/agent/dsh-home``.
3. ``populate_context_post_run``: reads the downloaded ``dsh.jsonl`` with
   :mod:`dsh_harbor.stream`, fills the context's tokens, cost and metadata, and writes
   ``trajectory.json`` (ATIF) beside it.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from . import commands, stream

try:
    from harbor.agents.installed import base as _harbor_base
    from harbor.agents.installed.base import BaseInstalledAgent as _BaseInstalledAgent
    from harbor.agents.installed.base import with_prompt_template as _with_prompt_template

    HARBOR_AVAILABLE = True
except ImportError as _import_error:  # Harbor not installed (or a Python it cannot run on)
    HARBOR_AVAILABLE = False
    _harbor_base = None
    _HARBOR_IMPORT_ERROR = _import_error

    class _BaseInstalledAgent:  # type: ignore[no-redef]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError(
                "the dsh adapter needs Harbor: pip install harbor "
                f"(importing it failed: {_HARBOR_IMPORT_ERROR})"
            )

    def _with_prompt_template(fn):  # type: ignore[no-redef]
        return fn


try:  # Harbor 0.26 and later declare features this way; earlier ones with SUPPORTS_ATIF.
    from harbor.agents.capabilities import AgentCapabilities as _AgentCapabilities
except ImportError:
    _AgentCapabilities = None

#: The agents' logs folder in the container, where Harbor versions before
#: ``environment_logs_dir`` put it.
_DEFAULT_LOGS_DIR = PurePosixPath("/logs/agent")
#: The environment variables passed to dsh when set on the host (or with --ae).
_MODEL_ENV = ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL")


def _error_patterns() -> list[Any] | None:
    """Harbor's failure classes for dsh's `dsh: <CODE>: ...` lines, ahead of Harbor's own
    patterns (on a tie Harbor keeps the first listed), for Harbor versions that classify
    failures at all."""
    if _harbor_base is None:
        return None
    pattern_class = getattr(_harbor_base, "ErrorPattern", None)
    inherited = getattr(_BaseInstalledAgent, "ERROR_PATTERNS", None)
    fallback = getattr(_harbor_base, "NonZeroAgentExitCodeError", None)
    if pattern_class is None or inherited is None or fallback is None:
        return None
    ours = [
        pattern_class(commands.error_line_pattern(code), getattr(_harbor_base, name))
        for code, name in commands.ERROR_CLASSES.items()
        if hasattr(_harbor_base, name)
    ]
    ours.append(pattern_class(commands.ANY_ERROR_LINE, fallback))
    return [*ours, *inherited]


_ERROR_PATTERNS = _error_patterns()


def _as_int(name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, not {value!r}") from None


def _as_float(name: str, value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None


def _as_list(value: Any) -> list[str]:
    """A list from a list or a string (shell words, or commas for names)."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


class DshAgent(_BaseInstalledAgent):
    """Runs dsh headless on a Harbor task.

    Options (``--ak name=value``; the ones with a variable also read it, from ``--ae`` or
    the host):

    - ``binary_url`` (``DSH_BINARY_URL``): where the container downloads the static binary.
    - ``binary_path`` (``DSH_BINARY_PATH``): a binary on the host to upload instead.
    - ``binary_sha256`` (``DSH_BINARY_SHA256``): the binary's SHA-256, checked at install.
    - ``config_file`` (``DSH_CONFIG_FILE``): a dsh config file on the host (TOML, e.g. with
      prices or another model route), uploaded and given to dsh with ``--patch``.
    - ``permission_mode``: default ``danger-full-access`` (the container is the sandbox).
    - ``effort`` (or Harbor's ``--effort``: ``off``, ``low``, ``high``, ``max``),
      ``max_turns``, ``max_budget_usd``, ``timeout``: dsh's ``--effort``, ``--max-turns``,
      ``--max-budget-usd``, ``--timeout``.
    - ``extra_args``: more dsh flags, as shell words.
    - ``pass_env``: names of more host variables to pass to dsh (comma-separated), e.g.
      the ``api_key_env`` of a route declared in ``config_file``.
    """

    if _AgentCapabilities is not None:
        capabilities = _AgentCapabilities(atif=True, reasoning_effort=True)
    else:
        SUPPORTS_ATIF = True

    if _ERROR_PATTERNS is not None:
        ERROR_PATTERNS = _ERROR_PATTERNS

    #: Paths in the container (class attributes so that a test can move them).
    BINARY = commands.DEFAULT_BINARY
    STAGED_BINARY = commands.STAGED_BINARY
    STAGED_PATCH = commands.STAGED_PATCH
    #: The agent's logs folder in the container; None: Harbor's (``environment_logs_dir``,
    #: or ``/logs/agent`` in Harbor versions without it).
    REMOTE_LOGS_DIR: str | None = None

    def __init__(
        self,
        *args: Any,
        binary_url: str | None = None,
        binary_path: str | None = None,
        binary_sha256: str | None = None,
        config_file: str | None = None,
        permission_mode: str | None = None,
        effort: str | None = None,
        reasoning_effort: str | None = None,
        max_turns: int | str | None = None,
        max_budget_usd: float | str | None = None,
        timeout: str | None = None,
        extra_args: str | list[str] | None = None,
        pass_env: str | list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._binary_url = binary_url or self._env("DSH_BINARY_URL")
        self._binary_path = binary_path or self._env("DSH_BINARY_PATH")
        self._binary_sha256 = binary_sha256 or self._env("DSH_BINARY_SHA256")
        self._config_file = config_file or self._env("DSH_CONFIG_FILE")
        self._permission_mode = permission_mode or "danger-full-access"
        # Harbor's --effort arrives as reasoning_effort.
        self._effort = effort or reasoning_effort
        self._max_turns = _as_int("max_turns", max_turns)
        self._max_budget_usd = _as_float("max_budget_usd", max_budget_usd)
        self._timeout = str(timeout) if timeout else None
        self._extra_args = [word for item in _as_list(extra_args) for word in shlex.split(item)]
        self._pass_env = [
            name.strip() for item in _as_list(pass_env) for name in item.split(",") if name.strip()
        ]
        if self._binary_path and not Path(self._binary_path).expanduser().is_file():
            raise ValueError(f"binary_path {self._binary_path!r} is not a file")
        if self._config_file and not Path(self._config_file).expanduser().is_file():
            raise ValueError(f"config_file {self._config_file!r} is not a file")
        # Check the flags now rather than in the container.
        self._argv("check")
        self._instruction: str | None = None

    # -- Harbor's interface ---------------------------------------------------------------

    @staticmethod
    def name() -> str:
        return "dsh"

    def get_version_command(self) -> str | None:
        return f"{shlex.quote(self.BINARY)} --version"

    def parse_version(self, stdout: str) -> str:
        return commands.parse_version(stdout)

    async def install(self, environment: Any) -> None:
        staged = None
        if self._binary_path:
            await environment.upload_file(Path(self._binary_path).expanduser(), self.STAGED_BINARY)
            staged = self.STAGED_BINARY
        elif not self._binary_url:
            raise ValueError(
                "no dsh binary: set DSH_BINARY_URL (or --ak binary_url=...) to a static "
                "Linux build, or DSH_BINARY_PATH (--ak binary_path=...) to one on this "
                "machine; docs/benchmarks.md says how to build it"
            )
        script = commands.install_script(
            url=None if staged else self._binary_url,
            staged=staged,
            dest=self.BINARY,
            sha256=self._binary_sha256,
        )
        await self.exec_as_root(environment, command=script)

    @_with_prompt_template
    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        self._instruction = instruction
        logs_dir = self._remote_logs_dir()
        patches = []
        if self._config_file:
            await environment.upload_file(Path(self._config_file).expanduser(), self.STAGED_PATCH)
            await self.exec_as_root(
                environment, command=f"chmod 644 {shlex.quote(self.STAGED_PATCH)}"
            )
            patches.append(self.STAGED_PATCH)
        env = self._run_env(logs_dir)
        if not any(name in env for name in ("DEEPSEEK_API_KEY", *self._pass_env)):
            self.logger.warning(
                "dsh: no DEEPSEEK_API_KEY on this machine or in --ae; the run will stop "
                "with AUTH unless a route in config_file needs no key"
            )
        command = commands.run_command(self._argv(instruction, patches), logs_dir=logs_dir)
        await self.exec_as_agent(environment, command=command, env=env)

    def populate_context_post_run(self, context: Any) -> None:
        path = self.logs_dir / commands.STREAM_LOG
        if not path.is_file():
            self.logger.debug(f"dsh: no event stream at {path}")
            return
        summary = stream.parse_file(path)
        fields = stream.context_fields(summary)
        context.n_input_tokens = fields["n_input_tokens"]
        context.n_cache_tokens = fields["n_cache_tokens"]
        context.n_output_tokens = fields["n_output_tokens"]
        context.cost_usd = fields["cost_usd"]
        metadata = dict(getattr(context, "metadata", None) or {})
        metadata.update(fields["metadata"])
        tail = self._stderr_tail()
        if tail:
            metadata["stderr_tail"] = tail
        trajectory = self._trajectory(summary)
        if trajectory is not None:
            problem = _validation_problem(trajectory)
            if problem is None:
                try:
                    (self.logs_dir / commands.TRAJECTORY_FILE).write_text(
                        json.dumps(trajectory, indent=2, ensure_ascii=False) + "\n"
                    )
                except OSError as exc:
                    self.logger.debug(f"dsh: could not write the trajectory: {exc}")
            else:
                metadata["trajectory_invalid"] = problem
                self.logger.warning(f"dsh: trajectory not written: {problem}")
        context.metadata = metadata

    def convert_trajectory(self, logs_dir: Path) -> Any:
        """The trajectory of downloaded logs, for Harbor's previews (Harbor 0.26+)."""
        path = Path(logs_dir) / commands.STREAM_LOG
        if not path.is_file():
            return None
        trajectory = self._trajectory(stream.parse_file(path))
        if trajectory is None:
            return None
        try:
            from harbor.models.trajectories import Trajectory

            return Trajectory.model_validate(trajectory)
        except Exception as exc:
            self.logger.debug(f"dsh: trajectory not valid: {exc}")
            return None

    # -- helpers ----------------------------------------------------------------------

    def _env(self, name: str) -> str | None:
        """A variable from --ae (the agent's extra env) or the host, as Harbor resolves it."""
        getter = getattr(self, "_get_env", None)
        if callable(getter):
            return getter(name)
        extra = getattr(self, "_extra_env", None) or {}
        return extra.get(name, os.environ.get(name))

    def _remote_logs_dir(self) -> str:
        if self.REMOTE_LOGS_DIR:
            return self.REMOTE_LOGS_DIR
        return str(getattr(self, "environment_logs_dir", None) or _DEFAULT_LOGS_DIR)

    def _run_env(self, logs_dir: str) -> dict[str, str]:
        env = {"DSH_HOME": f"{logs_dir.rstrip('/')}/{commands.HOME_DIR}"}
        for name in (*_MODEL_ENV, *self._pass_env):
            value = self._env(name)
            if value:
                env[name] = value
        return env

    def _argv(self, instruction: str, patches: list[str] | None = None) -> list[str]:
        return commands.dsh_argv(
            instruction,
            binary=self.BINARY,
            model=self.model_name,
            permission_mode=self._permission_mode,
            effort=self._effort,
            max_turns=self._max_turns,
            max_budget_usd=self._max_budget_usd,
            timeout=self._timeout,
            patch_files=patches or (),
            extra_args=self._extra_args,
        )

    def _trajectory(self, summary: stream.StreamSummary) -> dict[str, Any] | None:
        version = None
        try:
            version = self.version()
        except Exception:
            pass
        return stream.to_trajectory(
            summary,
            instruction=self._instruction,
            agent_name=self.name(),
            agent_version=version,
            model_name=self.model_name,
        )

    def _stderr_tail(self, limit: int = 2000) -> str | None:
        path = self.logs_dir / commands.STDERR_LOG
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        text = text.strip()
        return text[-limit:] if text else None


def _validation_problem(trajectory: dict[str, Any]) -> str | None:
    """Why Harbor's own model refuses the trajectory, or None when it accepts it (or
    Harbor's models cannot be imported)."""
    try:
        from harbor.models.trajectories import Trajectory
    except ImportError:
        return None
    try:
        Trajectory.model_validate(trajectory)
    except Exception as exc:
        return str(exc)[:2000]
    return None
