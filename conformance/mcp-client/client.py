#!/usr/bin/env python3
"""dsh as the client under test of the official MCP conformance suite.

The suite runs `client.py <server-url>` once per scenario, with MCP_CONFORMANCE_SCENARIO (and,
for some, MCP_CONFORMANCE_CONTEXT) set. This script does what a user of dsh would do:

1. It writes a config with the scenario's server as `conformance` (the context's client id and
   secret as the server's `oauth` settings, and a client ID metadata document address the suite
   accepts).
2. For an `auth/` scenario it runs `dsh mcp login conformance`, with $BROWSER set to this script
   in `--browser` mode, which does what a user's browser does: it opens the authorization
   address and follows the redirects back to dsh's loopback listener.
3. It runs dsh headless against the scripted model server (`scripted-server --tools`), which
   calls each of the server's tools once.
4. When the run reports that the server wants a sign-in or more access, it signs in again and
   runs again, three rounds at most, as a supervisor following dsh's hint would.

A scenario whose server asks the user a question (elicitation) needs someone to answer, which
a headless run has not: it runs through `dsh acp` instead, driven by a small editor here that
shows forms and accepts each as it is prefilled (with the form's defaults).

Needs DSH_BIN and SCRIPTED_SERVER_BIN (scripts/mcp-conformance sets both). Exits non-zero when
a step fails; the suite's own checks decide whether the scenario passed.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

SERVER = "conformance"
# The suite's authorization servers accept this address as a client id without fetching it.
METADATA_DOCUMENT = "https://conformance-test.local/client-metadata.json"
ROUNDS = 3


def browse(address):
    """A browser: open the address and follow every redirect (the last is dsh's callback)."""
    with urllib.request.urlopen(address, timeout=20) as answer:
        answer.read()


def toml_string(value):
    return json.dumps(value)


def config_text(url, context):
    lines = [
        f"[mcp.servers.{SERVER}]",
        f"url = {toml_string(url)}",
        "startup_timeout_ms = 15000",
        "call_timeout_ms = 15000",
        f"[mcp.servers.{SERVER}.oauth]",
        f"client_metadata_url = {toml_string(METADATA_DOCUMENT)}",
    ]
    if context.get("client_id"):
        lines.append(f"client_id = {toml_string(context['client_id'])}")
    if context.get("client_secret"):
        lines.append(f"client_secret = {toml_string(context['client_secret'])}")
    return "\n".join(lines) + "\n"


def log(line):
    print(f"[client.py] {line}", file=sys.stderr, flush=True)


def wants_sign_in(stream):
    """Whether a headless run's JSON stream reports the server wanting a sign-in."""
    hint = f"dsh mcp login {SERVER}"
    for line in stream.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "tool_result" and hint in json.dumps(event):
            return True
    return False


ASKS_THE_USER = ("elicitation-sep1034-client-defaults",)


def acp_round(dsh, env, workspace, url):
    """One prompt through `dsh acp`, as an editor that shows forms and accepts them as filled."""
    agent = subprocess.Popen([dsh, "acp"], env=env, cwd=workspace, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    ids = iter(range(1, 1000))

    def send(message):
        agent.stdin.write(json.dumps(message) + "\n")
        agent.stdin.flush()

    def call(method, params):
        ident = next(ids)
        send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        for line in agent.stdout:
            message = json.loads(line)
            if message.get("id") == ident and "method" not in message:
                return message
            if message.get("method") == "elicitation/create":
                log(f"the editor was asked: {message['params'].get('message')}")
                send({"jsonrpc": "2.0", "id": message["id"],
                      "result": {"action": "accept", "content": {}}})
            elif message.get("method") == "session/request_permission":
                send({"jsonrpc": "2.0", "id": message["id"],
                      "result": {"outcome": {"outcome": "cancelled"}}})
        raise RuntimeError("dsh acp closed its output")

    try:
        call("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "elicitation": {"form": {}}}})
        opened = call("session/new", {"cwd": workspace, "mcpServers": [
            {"type": "http", "name": SERVER, "url": url, "headers": []}]})
        session = opened["result"]["sessionId"]
        done = call("session/prompt", {"sessionId": session, "prompt": [
            {"type": "text", "text": "Call each tool of the conformance server once."}]})
        log(f"acp prompt: {json.dumps(done)}")
        return 0 if done.get("result", {}).get("stopReason") == "end_turn" else 1
    finally:
        agent.stdin.close()
        agent.wait(timeout=30)


def main():
    if sys.argv[1:2] == ["--browser"]:
        browse(sys.argv[2])
        return 0
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    dsh = os.environ["DSH_BIN"]
    scripted_bin = os.environ["SCRIPTED_SERVER_BIN"]
    with tempfile.TemporaryDirectory(prefix="dsh-mcp-conformance-") as tmp:
        home = os.path.join(tmp, "home")
        workspace = os.path.join(tmp, "ws")
        os.makedirs(home)
        os.makedirs(workspace)
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
            f.write(config_text(url, context))
        scripted = subprocess.Popen([scripted_bin, "--tools", f"mcp__{SERVER}__"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            base_url = scripted.stdout.readline().strip()
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("DSH_", "DEEPSEEK_"))}
            env.update({
                "DSH_HOME": home,
                "DEEPSEEK_BASE_URL": base_url,
                "DEEPSEEK_API_KEY": "test-key",
                "BROWSER": f"{sys.executable} {os.path.abspath(__file__)} --browser %s",
            })
            env.pop("DISPLAY", None)
            return rounds(dsh, scenario, env, workspace, url)
        finally:
            scripted.stdin.close()
            scripted.wait(timeout=10)


def rounds(dsh, scenario, env, workspace, url):
    if scenario in ASKS_THE_USER:
        return acp_round(dsh, env, workspace, url)
    for round_number in range(1, ROUNDS + 1):
        if scenario.startswith("auth/"):
            login = subprocess.run([dsh, "mcp", "login", SERVER, "--timeout", "20s"],
                                   env=env, cwd=workspace, capture_output=True, text=True)
            log(f"login (round {round_number}): exit {login.returncode}\n"
                f"{login.stdout}{login.stderr}")
            if login.returncode != 0:
                return 1
        run = subprocess.run([dsh, "--json", "--max-steps", "10",
                              "Call each tool of the conformance server once."],
                             env=env, cwd=workspace, capture_output=True, text=True)
        log(f"run (round {round_number}): exit {run.returncode}\n{run.stdout}{run.stderr}")
        if run.returncode != 0:
            return run.returncode
        if not (scenario.startswith("auth/") and wants_sign_in(run.stdout)):
            return 0
    log(f"the server still wanted a sign-in after {ROUNDS} rounds")
    return 1


if __name__ == "__main__":
    sys.exit(main())
