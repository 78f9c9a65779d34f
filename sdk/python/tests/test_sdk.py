"""dsh_sdk against `dsh app-server` and the scripted model server."""

import asyncio
import json
import pathlib
import re
import subprocess
import sys

import pytest

from dsh_sdk import (
    EVENT_CLASSES, Approval, Dsh, DshError, DshSync, FinalEvent, SessionEvent, TextEvent,
    RewindReport, ToolCallEvent, StatusEvent, tool,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run_async(main):
    """Runs `main()`; a test that would wait forever (a request never answered) fails instead,
    at a bound far above any run's time."""
    asyncio.run(asyncio.wait_for(main(), 300))


def tool_results(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def escalated(command):
    return {"calls": [["bash", {"command": command, "description": "print a word",
                                "sandbox_permissions": "danger-full-access",
                                "justification": "needs the whole machine"}]]}


def test_two_turns_then_a_resume_in_another_process(scripted):
    server = scripted([{"text": "first answer"}, {"text": "second answer"},
                       {"text": "third answer"}])

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env) as run:
            events = [event async for event in run.send("one")]
            assert isinstance(events[-1], FinalEvent)
            assert events[-1].text == "first answer"
            assert any(isinstance(e, TextEvent) and e.text == "first answer" for e in events)
            assert run.result.kind == "completed"
            second = await run.run("two")
            assert second.text == "second answer"
            session = run.session_id
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env, resume=session) as run:
            assert run.session_id == session
            assert (await run.run("three")).text == "third answer"

    run_async(main)
    sent = json.dumps(server.requests()[2]["messages"])
    assert "one" in sent and "second answer" in sent


def test_an_unknown_session_is_an_error_with_its_code(scripted):
    server = scripted([])

    async def main():
        with pytest.raises(DshError) as refused:
            async with Dsh(cwd=server.ws, bin=server.bin, env=server.env, resume="session-nope"):
                pass
        assert refused.value.code == "SESSION_NOT_FOUND"

    run_async(main)


def test_approvals_allowed_and_denied_by_the_host(scripted):
    server = scripted([escalated("echo allowed-run"), {"text": "ran it"},
                       escalated("echo denied-run"), {"text": "understood"}])
    asked = []

    async def approve(request):
        asked.append(request)
        if "allowed-run" in json.dumps(request.raw) or len(asked) == 1:
            return "once"
        return Approval("deny", "not today")

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env,
                       on_approval=approve) as run:
            events = [e async for e in run.send("do it")]
            call = next(e for e in events if isinstance(e, ToolCallEvent))
            assert call.tool == "bash"
            assert asked[0].call_id == call.call_id
            assert asked[0].tool == "bash" and "once" in asked[0].choices
            assert run.result.text == "ran it"
            assert (await run.run("again")).text == "understood"

    run_async(main)
    requests = server.requests()
    assert "allowed-run" in tool_results(requests[1])[0]
    denied = tool_results(requests[3])[-1]
    assert "rejected" in denied and "not today" in denied


def test_a_question_is_answered_by_the_host(scripted):
    server = scripted([
        {"calls": [["ask_user_question", {"questions": [{
            "id": "db", "question": "Which database?", "header": "Storage",
            "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]}]]},
        {"text": "Postgres it is."},
    ])

    def answer(request):
        question = request.questions[0]
        assert question.question == "Which database?"
        assert [o.label for o in question.options] == ["SQLite", "Postgres"]
        return {question.id: "Postgres"}

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env,
                       on_questions=answer) as run:
            assert (await run.run("pick one")).text == "Postgres it is."

    run_async(main)
    assert "Postgres" in tool_results(server.requests()[1])[0]


def test_an_interrupt_stops_the_turn_and_the_session_goes_on(scripted):
    # The turn is stopped while it waits for an approval: by then the model's answer has been
    # read whole, so the next turn's request gets the next answer of the script.
    server = scripted([escalated("echo never-run"), {"text": "after"}])
    interrupted = []

    async def main():
        async def stop_instead(request):
            interrupted.append(await run.interrupt())
            return "once"  # too late: the request was withdrawn with its turn

        run = Dsh(cwd=server.ws, bin=server.bin, env=server.env, on_approval=stop_instead)
        async with run:
            events = [event async for event in run.send("wait for me")]
            assert interrupted == [True]
            assert run.result.reason == {"kind": "aborted", "reason": {"kind": "user"}}
            assert isinstance(events[-1], FinalEvent)
            assert (await run.run("again")).text == "after"

    run_async(main)
    # The command never ran: no result of the call holds its output.
    assert all("never-run" not in result for result in tool_results(server.requests()[1]))


def test_a_malformed_message_is_refused_and_the_session_goes_on(scripted):
    server = scripted([{"text": "still here"}])

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env) as run:
            with pytest.raises(DshError) as refused:
                await run.call({"type": "dance"})
            assert refused.value.code == "BAD_REQUEST"
            with pytest.raises(DshError) as refused:
                await run.set(mode="yolo")
            assert refused.value.code == "BAD_REQUEST"
            assert "yolo" in refused.value.message
            assert (await run.set(mode="plan"))["mode"] == "plan"
            assert (await run.run("hello")).text == "still here"

    run_async(main)


def test_the_sync_client_runs_the_same_turns(scripted):
    server = scripted([{"text": "sync answer"}])
    with DshSync(cwd=server.ws, bin=server.bin, env=server.env, mode="read-only") as run:
        events = list(run.send("hi"))
        assert isinstance(events[-1], FinalEvent)
        assert run.result.text == "sync answer"
        assert run.session_id.startswith("session-")


def test_every_event_of_the_schema_has_a_class():
    schema = json.loads((ROOT / "docs" / "events.schema.json").read_text())
    kinds = {ref["$ref"].rsplit("/", 1)[-1] for ref in schema["oneOf"]}
    assert kinds == set(EVENT_CLASSES)
    for kind in kinds:
        assert schema["$defs"][kind]["properties"]["type"]["const"] == kind


def test_the_supervisor_example_in_docs_runs(scripted, tmp_path):
    """docs/sdk.md's Python supervisor: a worktree per task, each task its own session."""
    doc = (ROOT / "docs" / "sdk.md").read_text()
    code = re.search(r"```python\n(# supervisor\.py.*?)```", doc, re.S).group(1)
    server = scripted([{"text": "did task one"}, {"text": "did task two"}])
    repo = pathlib.Path(server.ws)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hi\n")
    subprocess.run(git + ["add", "README"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "start"], check=True)
    script = tmp_path / "supervisor.py"
    script.write_text(code)
    env = dict(server.env, DSH_BIN=server.bin)
    out = subprocess.run([sys.executable, str(script), str(repo), "task one", "task two"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("did task one") and lines[1].endswith("did task two"), lines
    worktrees = subprocess.run(git + ["worktree", "list"], capture_output=True, text=True).stdout
    assert worktrees.count("\n") == 3, worktrees


def test_a_host_tool_is_called_and_its_result_seen_by_the_model(scripted):
    server = scripted([
        {"calls": [["lookup", {"key": "answer"}]]},
        {"calls": [["lookup", {"key": "missing"}]]},
        {"text": "it is forty-two"},
    ])
    called = []

    @tool
    async def lookup(key: str) -> str:
        """Looks a key up."""
        called.append(key)
        if key != "answer":
            raise KeyError(key)
        return "forty-two"

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env, tools=[lookup]) as run:
            assert (await run.run("what is the answer?")).text == "it is forty-two"

    run_async(main)
    assert called == ["answer", "missing"]
    requests = server.requests()
    offered = [t["function"]["name"] for t in requests[0]["tools"]]
    assert "lookup" in offered
    assert "forty-two" in tool_results(requests[1])[0]
    assert "KeyError" in tool_results(requests[2])[-1]


def write_call(path, content):
    return {"calls": [["write", {"file_path": path, "content": content}]]}


def test_a_rewind_previews_applies_refuses_and_undoes(scripted):
    server = scripted([write_call("notes.txt", "alpha\n"), {"text": "wrote it"},
                       {"text": "second answer"}, {"text": "after the rewind"}])
    notes = pathlib.Path(server.ws) / "notes.txt"

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env,
                       mode="workspace-write") as run:
            await run.run("write the notes")
            await run.run("remember beta")
            assert notes.read_text() == "alpha\n"
            preview = await run.rewind(1, apply=False)
            assert isinstance(preview, RewindReport)
            assert preview.applied is None and preview.remove == ["notes.txt"], preview.raw
            assert notes.exists()
            with pytest.raises(DshError) as refused:
                await run.rewind(9)
            assert refused.value.code == "REWIND_TARGET"
            done = await run.rewind(1)
            assert done.applied is not None and done.applied.to_turn == 1, done.raw
            assert done.applied.files and done.applied.conversation and done.applied.removed == 1
            assert not notes.exists()
            undone = await run.rewind()
            assert undone.applied is not None and undone.applied.undo, undone.raw
            assert notes.read_text() == "alpha\n"
            await run.rewind(2, files=False)
            assert notes.exists()
            assert (await run.run("what do you remember?")).text == "after the rewind"

    run_async(main)
    sent = json.dumps(server.requests()[3]["messages"])
    assert "write the notes" in sent and "remember beta" not in sent


def test_the_sync_client_rewinds(scripted):
    server = scripted([{"text": "one"}, {"text": "two"}])
    with DshSync(cwd=server.ws, bin=server.bin, env=server.env) as run:
        run.run("remember gamma")
        report = run.rewind(1, files=False)
        assert report.applied is not None and report.applied.conversation
        assert not report.applied.files
        assert run.run("again").text == "two"
    assert "remember gamma" not in json.dumps(server.requests()[1]["messages"])


def test_a_host_tools_output_past_what_the_server_reads_is_the_calls_error(scripted):
    server = scripted([{"calls": [["dump", {}]]}, {"text": "too much"}])

    @tool
    def dump() -> str:
        """Returns 17 MiB."""
        return "x" * (17 * 1024 * 1024)

    async def main():
        async with Dsh(cwd=server.ws, bin=server.bin, env=server.env, tools=[dump]) as run:
            assert (await run.run("dump it")).text == "too much"

    run_async(main)
    seen = tool_results(server.requests()[1])[-1]
    assert "over the" in seen and "write it to a file" in seen, seen[:300]
