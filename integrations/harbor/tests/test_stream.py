"""dsh_harbor.stream over streams recorded from the real binary (streams/, made by
record.sh), plus damaged and hand-written ones for what a recording cannot show."""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsh_harbor import stream  # noqa: E402

STREAMS = HERE / "streams"

try:
    from harbor.models.trajectories import Trajectory
except Exception:  # not installed, or not importable on this Python
    Trajectory = None


def lines_of(name: str) -> list[str]:
    return (STREAMS / f"{name}.jsonl").read_text().splitlines()


def events_of(name: str) -> list[dict]:
    return [json.loads(line) for line in lines_of(name)]


def exit_of(name: str) -> int:
    return int((STREAMS / f"{name}.exit").read_text())


def final_of(name: str) -> dict:
    finals = [e for e in events_of(name) if e["type"] == "final"]
    assert len(finals) == 1
    return finals[0]


def billed_input(usage: dict) -> int:
    return usage["inputTokens"] + usage["cacheReadTokens"] + usage["cacheWriteTokens"]


class Fixtures(unittest.TestCase):
    def test_recordings_are_there(self):
        for name in ("three-steps", "one-step", "unreachable", "no-key"):
            self.assertTrue((STREAMS / f"{name}.jsonl").is_file(), name)
            self.assertTrue((STREAMS / f"{name}.exit").is_file(), name)
        self.assertEqual(exit_of("three-steps"), 0)
        self.assertEqual(exit_of("one-step"), 0)
        self.assertEqual(exit_of("unreachable"), 1)
        self.assertEqual(exit_of("no-key"), 1)


class ThreeSteps(unittest.TestCase):
    """Two bash calls, then the answer, with prices declared (so costUsd is there)."""

    def setUp(self):
        self.summary = stream.parse_file(STREAMS / "three-steps.jsonl")
        self.final = final_of("three-steps")
        self.events = events_of("three-steps")

    def test_tokens_and_cost_are_the_final_usage(self):
        fields = stream.context_fields(self.summary)
        usage = self.final["usage"]
        self.assertEqual(fields["n_input_tokens"], billed_input(usage))
        self.assertEqual(fields["n_output_tokens"], usage["outputTokens"])
        self.assertEqual(fields["n_cache_tokens"], usage["cacheReadTokens"])
        self.assertIn("costUsd", usage)
        self.assertAlmostEqual(fields["cost_usd"], usage["costUsd"], places=12)
        self.assertGreater(fields["n_input_tokens"], 0)

    def test_final_usage_is_the_sum_of_the_steps(self):
        ends = [e for e in self.events if e.get("phase") == "step_end"]
        self.assertEqual(len(ends), 3)
        self.assertEqual(
            sum(billed_input(e["usage"]) for e in ends), billed_input(self.final["usage"])
        )
        self.assertEqual(
            self.summary.step_end_usage.prompt_tokens, self.summary.usage.prompt_tokens
        )

    def test_metadata(self):
        meta = stream.context_fields(self.summary)["metadata"]
        self.assertEqual(meta["dsh_session_id"], self.final["sessionId"])
        self.assertTrue(meta["completed"])
        self.assertEqual(meta["final_reason"], {"kind": "completed"})
        self.assertEqual(meta["model_requests"], self.final["steps"])
        self.assertEqual(meta["tool_calls"], 2)
        self.assertEqual(meta["malformed_lines"], 0)
        self.assertEqual(meta["usage_source"], "final")
        self.assertEqual(meta["duration_ms"], self.final["durationMs"])
        self.assertEqual(meta["events"], len(self.events))
        json.dumps(meta)  # Harbor stores it as JSON

    def test_trajectory_steps_calls_and_observations(self):
        traj = stream.to_trajectory(
            self.summary, instruction="the task", model_name="deepseek/deepseek-v4-flash"
        )
        steps = traj["steps"]
        self.assertEqual([s["step_id"] for s in steps], list(range(1, len(steps) + 1)))
        self.assertEqual([s["source"] for s in steps], ["user", "agent", "agent", "agent"])
        self.assertEqual(steps[0]["message"], "the task")
        self.assertEqual(traj["session_id"], self.final["sessionId"])
        self.assertEqual(traj["agent"]["name"], "dsh")
        self.assertEqual(traj["agent"]["model_name"], "deepseek/deepseek-v4-flash")
        self.assertEqual(traj["schema_version"], stream.ATIF_SCHEMA_VERSION)

        calls = [e for e in self.events if e["type"] == "tool_call"]
        results = [e for e in self.events if e["type"] == "tool_result"]
        atif_calls = [c for s in steps for c in s.get("tool_calls", [])]
        atif_results = [r for s in steps for r in s.get("observation", {}).get("results", [])]
        self.assertEqual(len(atif_calls), len(calls))
        self.assertEqual(len(atif_results), len(results))
        self.assertEqual([c["tool_call_id"] for c in atif_calls], [c["callId"] for c in calls])
        self.assertEqual([c["function_name"] for c in atif_calls], [c["tool"] for c in calls])
        self.assertEqual([c["arguments"] for c in atif_calls], [c["input"] for c in calls])
        self.assertEqual([r["content"] for r in atif_results], [r["result"] for r in results])
        # Each result points at a call of its own step.
        for s in steps:
            ids = {c["tool_call_id"] for c in s.get("tool_calls", [])}
            for r in s.get("observation", {}).get("results", []):
                self.assertIn(r["source_call_id"], ids)
        for s in steps[1:3]:
            self.assertEqual(s["extra"]["tool_results"][0]["command"], {"exitCode": 0})
            self.assertEqual(s["extra"]["tool_results"][0]["status"], "completed")
        self.assertEqual(steps[3]["message"], self.final["text"])
        self.assertNotIn("tool_calls", steps[3])

    def test_trajectory_metrics_add_up(self):
        traj = stream.to_trajectory(self.summary, instruction="the task")
        fields = stream.context_fields(self.summary)
        fm = traj["final_metrics"]
        self.assertEqual(fm["total_prompt_tokens"], fields["n_input_tokens"])
        self.assertEqual(fm["total_completion_tokens"], fields["n_output_tokens"])
        self.assertEqual(fm["total_cached_tokens"], fields["n_cache_tokens"])
        self.assertAlmostEqual(fm["total_cost_usd"], fields["cost_usd"], places=12)
        self.assertEqual(fm["total_steps"], len(traj["steps"]))
        agent_steps = [s for s in traj["steps"] if s["source"] == "agent"]
        self.assertEqual(
            sum(s["metrics"]["prompt_tokens"] for s in agent_steps), fm["total_prompt_tokens"]
        )
        self.assertEqual(
            sum(s["metrics"]["completion_tokens"] for s in agent_steps),
            fm["total_completion_tokens"],
        )
        self.assertAlmostEqual(
            sum(s["metrics"]["cost_usd"] for s in agent_steps), fm["total_cost_usd"], places=12
        )

    def test_without_instruction_the_agent_steps_start_at_one(self):
        traj = stream.to_trajectory(self.summary)
        self.assertEqual(traj["steps"][0]["step_id"], 1)
        self.assertEqual(traj["steps"][0]["source"], "agent")
        self.assertEqual(len(traj["steps"]), 3)


class OneStep(unittest.TestCase):
    def test_answer_without_tools_and_without_prices(self):
        summary = stream.parse_file(STREAMS / "one-step.jsonl")
        final = final_of("one-step")
        fields = stream.context_fields(summary)
        self.assertEqual(fields["n_input_tokens"], billed_input(final["usage"]))
        self.assertEqual(fields["n_output_tokens"], final["usage"]["outputTokens"])
        self.assertNotIn("costUsd", final["usage"])
        self.assertIsNone(fields["cost_usd"])  # no prices: unknown, not zero
        traj = stream.to_trajectory(summary, instruction="say done")
        self.assertEqual(len(traj["steps"]), 2)
        self.assertEqual(traj["steps"][1]["message"], final["text"])
        self.assertNotIn("tool_calls", traj["steps"][1])
        self.assertNotIn("observation", traj["steps"][1])
        self.assertNotIn("total_cost_usd", traj["final_metrics"])
        self.assertNotIn("cost_usd", traj["steps"][1]["metrics"])


class Failures(unittest.TestCase):
    def test_unreachable_model(self):
        """The turn fails with TRANSPORT; the stream still closes with final."""
        summary = stream.parse_file(STREAMS / "unreachable.jsonl")
        final = final_of("unreachable")
        self.assertEqual(final["reason"]["kind"], "error")
        fields = stream.context_fields(summary)
        meta = fields["metadata"]
        self.assertFalse(meta["completed"])
        self.assertEqual(meta["error_code"], "TRANSPORT")
        self.assertEqual(meta["final_reason"], final["reason"])
        self.assertEqual(fields["n_input_tokens"], billed_input(final["usage"]))
        self.assertEqual(fields["n_output_tokens"], final["usage"]["outputTokens"])
        traj = stream.to_trajectory(summary, instruction="say done")
        system = [s for s in traj["steps"] if s["source"] == "system"]
        self.assertEqual(len(system), 1, "one system step, not one per turn_end and final")
        self.assertIn("TRANSPORT", system[0]["message"])
        self.assertEqual(system[0]["extra"]["reason"], final["reason"])
        self.assertEqual(traj["steps"][-1], system[0])

    def test_error_before_the_turn(self):
        """No API key: one error event, no session, no final."""
        events = events_of("no-key")
        self.assertEqual([e["type"] for e in events], ["error"])
        summary = stream.parse_file(STREAMS / "no-key.jsonl")
        fields = stream.context_fields(summary)
        meta = fields["metadata"]
        self.assertEqual(meta["error_code"], "AUTH")
        self.assertEqual(meta["errors"], [{"code": "AUTH", "message": events[0]["message"]}])
        self.assertFalse(meta["has_final"])
        self.assertFalse(meta["completed"])
        # Nothing was sent, and the stream says so: zero, not unknown.
        self.assertEqual(fields["n_input_tokens"], 0)
        self.assertEqual(fields["n_output_tokens"], 0)
        self.assertIsNone(fields["cost_usd"])
        traj = stream.to_trajectory(summary, instruction="say done")
        self.assertEqual([s["source"] for s in traj["steps"]], ["user", "system"])
        self.assertIn("AUTH", traj["steps"][1]["message"])
        self.assertTrue(traj["session_id"])


class Damaged(unittest.TestCase):
    """Lines that are not events are counted, never fatal, and change nothing else."""

    GARBAGE = [
        "not json at all",
        '{"type":"text","text":"cut off',
        "[1, 2, 3]",
        '"a string"',
        '{"no_type": true}',
        '{"type": 7}',
    ]

    def damaged_lines(self) -> list[str]:
        good = lines_of("three-steps")
        out = []
        for i, line in enumerate(good):
            out.append(line)
            if i < len(self.GARBAGE):
                out.append(self.GARBAGE[i])
        out.insert(3, "")
        out.insert(5, '{"type":"from_the_future","x":1}')
        out.insert(7, '{"type":"status","phase":"some_new_phase","turn":1}')
        return out

    def test_same_numbers_and_steps(self):
        clean = stream.parse_file(STREAMS / "three-steps.jsonl")
        damaged = stream.parse_lines(self.damaged_lines())
        self.assertEqual(
            stream.context_fields(damaged)["n_input_tokens"],
            stream.context_fields(clean)["n_input_tokens"],
        )
        self.assertEqual(
            stream.context_fields(damaged)["cost_usd"], stream.context_fields(clean)["cost_usd"]
        )
        a = stream.to_trajectory(clean, instruction="t")
        b = stream.to_trajectory(damaged, instruction="t")
        self.assertEqual(a["steps"], b["steps"])
        self.assertEqual(a["final_metrics"], b["final_metrics"])

    def test_counted_in_metadata(self):
        summary = stream.parse_lines(self.damaged_lines())
        meta = stream.context_fields(summary)["metadata"]
        self.assertEqual(meta["malformed_lines"], len(self.GARBAGE))
        self.assertEqual(len(meta["malformed_samples"]), 3)
        self.assertEqual(meta["malformed_samples"][0]["text"], self.GARBAGE[0])
        self.assertEqual(
            meta["skipped_event_types"], {"from_the_future": 1, "status/some_new_phase": 1}
        )
        traj = stream.to_trajectory(summary)
        self.assertEqual(traj["extra"]["dsh"]["malformed_lines"], len(self.GARBAGE))

    def test_bytes_that_are_not_utf8(self):
        good = (STREAMS / "one-step.jsonl").read_bytes()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "s.jsonl"
            path.write_bytes(b"\xff\xfe garbage \x80\n" + good)
            summary = stream.parse_file(path)
        self.assertEqual(summary.malformed_lines, 1)
        self.assertEqual(
            stream.context_fields(summary)["n_input_tokens"],
            billed_input(final_of("one-step")["usage"]),
        )

    def test_fields_of_the_wrong_type(self):
        lines = [
            '{"type":"session","sessionId":5,"cwd":[],"schemaVersion":1}',
            '{"type":"status","phase":"step_start","turn":"1","step":null}',
            '{"type":"text","text":{"not":"a string"}}',
            '{"type":"tool_call","callId":3,"tool":"bash"}',
            '{"type":"tool_result","callId":"nobody","status":"completed","result":7}',
            '{"type":"status","phase":"step_end","turn":1,"step":1,"usage":{"inputTokens":"9","outputTokens":-1,"cacheReadTokens":true,"costUsd":"free"}}',
            '{"type":"final","sessionId":null,"reason":"odd","text":3,"usage":[],"durationMs":"x","steps":-2}',
        ]
        summary = stream.parse_lines(lines)
        fields = stream.context_fields(summary)
        self.assertEqual(fields["n_input_tokens"], 0)
        self.assertIsNone(fields["cost_usd"])
        self.assertEqual(summary.malformed_lines, 1)  # the tool_call without a string callId
        traj = stream.to_trajectory(summary, instruction="t")
        self.assertIsNotNone(traj)
        json.dumps(traj)

    def test_killed_run_without_final(self):
        """A run cut off after its second step: the totals are the steps that ended."""
        lines = lines_of("three-steps")
        cut = [i for i, line in enumerate(lines) if '"phase":"step_end"' in line][1]
        summary = stream.parse_lines(
            lines[: cut + 1] + ['{"type":"status","phase":"step_start","turn":1,"step":3}']
        )
        ends = [json.loads(line) for line in lines[: cut + 1] if '"phase":"step_end"' in line]
        fields = stream.context_fields(summary)
        self.assertEqual(fields["n_input_tokens"], sum(billed_input(e["usage"]) for e in ends))
        self.assertAlmostEqual(
            fields["cost_usd"], sum(e["usage"]["costUsd"] for e in ends), places=12
        )
        meta = fields["metadata"]
        self.assertEqual(meta["usage_source"], "step_end")
        self.assertFalse(meta["has_final"])
        self.assertEqual(meta["model_requests"], 2)
        traj = stream.to_trajectory(summary, instruction="t")
        self.assertIn("no final event", traj["notes"])
        self.assertEqual(traj["steps"][-1]["extra"]["ended"], False)

    def test_empty_stream(self):
        summary = stream.parse_lines([])
        fields = stream.context_fields(summary)
        self.assertIsNone(fields["n_input_tokens"])  # unknown, not zero
        self.assertIsNone(fields["n_output_tokens"])
        self.assertIsNone(stream.to_trajectory(summary))
        traj = stream.to_trajectory(summary, instruction="t")
        self.assertEqual(len(traj["steps"]), 1)


# What a recording from the scripted server does not hold: reasoning, cache buckets,
# a failed call, arguments that are not JSON, a todo list, a subagent, a result that
# comes after its step ended. Hand-written to the schema (docs/events.schema.json).
SYNTHETIC = [
    {"type": "session", "sessionId": "session-synthetic", "cwd": "/app", "schemaVersion": 1},
    {"type": "status", "phase": "turn_start", "turn": 1},
    {"type": "status", "phase": "step_start", "turn": 1, "step": 1},
    {"type": "thinking", "text": "Look first."},
    {"type": "thinking", "text": "Then plan."},
    {"type": "text", "text": "Reading."},
    {"type": "text", "text": "And planning."},
    {"type": "tool_call", "callId": "c1", "tool": "read", "input": {"file_path": "a.txt"}},
    {"type": "tool_call", "callId": "c2", "tool": "bash", "input": "ls -la {"},
    {"type": "tool_call", "callId": "c3", "tool": "todo_write", "truncated": True},
    {
        "type": "tool_result",
        "callId": "c1",
        "status": "error",
        "result": "no such file",
        "error": {"name": "FsError", "code": "FS_NOT_FOUND"},
    },
    {"type": "todo", "todos": [{"content": "Fix it", "status": "in_progress"}]},
    {"type": "tool_result", "callId": "c3", "status": "completed", "result": "ok"},
    {"type": "agent", "agentId": "subagent-1", "event": {"type": "text", "text": "sub"}},
    {
        "type": "agent",
        "agentId": "subagent-1",
        "event": {
            "type": "status",
            "phase": "step_end",
            "turn": 1,
            "step": 1,
            "usage": {
                "inputTokens": 999,
                "outputTokens": 999,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "reasoningTokens": 0,
                "totalTokens": 1998,
            },
        },
    },
    {
        "type": "status",
        "phase": "step_end",
        "turn": 1,
        "step": 1,
        "usage": {
            "inputTokens": 100,
            "outputTokens": 50,
            "cacheReadTokens": 900,
            "cacheWriteTokens": 20,
            "reasoningTokens": 12,
            "totalTokens": 1070,
            "costUsd": 0.001,
        },
    },
    {
        "type": "tool_result",
        "callId": "c2",
        "status": "completed",
        "result": "late",
        "command": {"exitCode": 2},
    },
    {"type": "status", "phase": "step_start", "turn": 1, "step": 2},
    {"type": "text", "text": "Done."},
    {
        "type": "status",
        "phase": "step_end",
        "turn": 1,
        "step": 2,
        "usage": {
            "inputTokens": 10,
            "outputTokens": 5,
            "cacheReadTokens": 1000,
            "cacheWriteTokens": 0,
            "reasoningTokens": 0,
            "totalTokens": 1015,
            "unreportedCalls": 1,
            "costUsd": 0.0005,
        },
    },
    {"type": "status", "phase": "turn_end", "turn": 1, "reason": {"kind": "completed"}},
    {
        "type": "final",
        "sessionId": "session-synthetic",
        "reason": {"kind": "completed"},
        "text": "Done.",
        "usage": {
            "inputTokens": 110,
            "outputTokens": 55,
            "cacheReadTokens": 1900,
            "cacheWriteTokens": 20,
            "reasoningTokens": 12,
            "totalTokens": 2085,
            "unreportedCalls": 1,
            "costUsd": 0.0015,
        },
        "durationMs": 1234,
        "steps": 2,
    },
]


class Synthetic(unittest.TestCase):
    def setUp(self):
        self.summary = stream.parse_lines(json.dumps(e) for e in SYNTHETIC)
        self.traj = stream.to_trajectory(self.summary, instruction="t", agent_version="0.1.0")

    def test_usage_buckets(self):
        fields = stream.context_fields(self.summary)
        self.assertEqual(fields["n_input_tokens"], 110 + 1900 + 20)
        self.assertEqual(fields["n_cache_tokens"], 1900)
        self.assertEqual(fields["n_output_tokens"], 55)
        self.assertAlmostEqual(fields["cost_usd"], 0.0015)
        meta = fields["metadata"]
        self.assertEqual(meta["cache_write_tokens"], 20)
        self.assertEqual(meta["reasoning_tokens"], 12)
        self.assertEqual(meta["unreported_calls"], 1)
        self.assertEqual(meta["subagent_events"], {"subagent-1": 2})
        self.assertEqual(meta["truncated_events"], 1)

    def test_step_content(self):
        first = self.traj["steps"][1]
        self.assertEqual(first["message"], "Reading.\n\nAnd planning.")
        self.assertEqual(first["reasoning_content"], "Look first.\n\nThen plan.")
        self.assertEqual(
            [c["arguments"] for c in first["tool_calls"]],
            [{"file_path": "a.txt"}, {"input": "ls -la {"}, {}],
        )
        self.assertEqual(
            first["observation"]["results"],
            [
                {"source_call_id": "c1", "content": "no such file"},
                {"source_call_id": "c2", "content": "late"},
                {"source_call_id": "c3", "content": "ok"},
            ],
        )
        m = first["metrics"]
        self.assertEqual(
            (m["prompt_tokens"], m["completion_tokens"], m["cached_tokens"]), (1020, 50, 900)
        )
        self.assertEqual(m["extra"]["cache_write_tokens"], 20)
        self.assertEqual(m["extra"]["reasoning_tokens"], 12)
        tr = first["extra"]["tool_results"]
        self.assertEqual(tr[0]["error"], {"name": "FsError", "code": "FS_NOT_FOUND"})
        self.assertTrue(tr[1]["input_not_json"])
        self.assertEqual(tr[1]["command"], {"exitCode": 2})
        self.assertTrue(tr[2]["input_missing"])
        self.assertEqual(first["extra"]["todos"], [{"content": "Fix it", "status": "in_progress"}])
        self.assertEqual(first["extra"]["truncated_events"], 1)
        second = self.traj["steps"][2]
        self.assertEqual(second["metrics"]["extra"]["unreported_calls"], 1)
        self.assertIn("Subagent events", self.traj["notes"])
        self.assertEqual(self.traj["agent"]["version"], "0.1.0")

    def test_subagent_usage_is_not_counted_twice(self):
        self.assertEqual(self.summary.step_end_usage.input_tokens, 110)


@unittest.skipIf(Trajectory is None, "harbor is not importable here")
class HarborValidates(unittest.TestCase):
    """Harbor's own pydantic model accepts every trajectory, and dumps it back unchanged
    (so no field is unknown to it, none is None, none is coerced)."""

    def check(self, summary, **kwargs):
        traj = stream.to_trajectory(summary, **kwargs)
        model = Trajectory.model_validate(traj)
        self.assertEqual(model.to_json_dict(), json.loads(json.dumps(traj)))

    def test_recordings(self):
        for name in ("three-steps", "one-step", "unreachable", "no-key"):
            with self.subTest(name=name):
                summary = stream.parse_file(STREAMS / f"{name}.jsonl")
                self.check(summary)
                self.check(summary, instruction="t", model_name="deepseek/deepseek-v4-flash")

    def test_damaged_and_synthetic(self):
        self.check(stream.parse_lines(Damaged().damaged_lines()), instruction="t")
        self.check(stream.parse_lines(json.dumps(e) for e in SYNTHETIC), instruction="t")
        lines = lines_of("three-steps")[:8]
        self.check(stream.parse_lines(lines), instruction="t")


if __name__ == "__main__":
    unittest.main()
