#!/usr/bin/env python3
"""What the model is sent before it has done anything, per agent preset: the first request of
a one-step run (the scripted server on loopback answers at once), measured on the wire. The
tool schemas are most of it, and a cache miss bills all of it, so the presets are compared by
its size: bytes, tools, and tokens estimated at 4 bytes each (the model's tokenizer is not
here; the ratio between presets is what matters).

Usage: bench/first_request.py (bench/first-request.sh builds the release binaries first).
Prints a markdown section."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Sizes do not depend on the build profile: DSH_BENCH_PROFILE=debug measures a debug build.
PROFILE = os.environ.get("DSH_BENCH_PROFILE", "release")
DSH = ROOT / "target" / PROFILE / "dsh"
SERVER = ROOT / "target" / PROFILE / "scripted-server"
PRESETS = ["standard", "minimal"]


def first_request(preset):
    with tempfile.TemporaryDirectory(prefix="dsh-bench-first-") as tmp:
        home, ws, log = Path(tmp, "home"), Path(tmp, "ws"), Path(tmp, "requests.log")
        home.mkdir()
        ws.mkdir()
        server = subprocess.Popen(
            [str(SERVER), "1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "SCRIPTED_SERVER_LOG": str(log)},
        )
        base_url = server.stdout.readline().decode().strip()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "DSH_HOME": str(home),
            "DEEPSEEK_BASE_URL": base_url,
            "DEEPSEEK_API_KEY": "bench-key",
        }
        run = subprocess.run(
            [str(DSH), "--preset", preset, "Say hello."],
            cwd=ws,
            env=env,
            capture_output=True,
        )
        server.stdin.close()
        server.wait()
        if run.returncode != 0:
            sys.exit(f"dsh --preset {preset} failed: {run.stderr.decode()}")
        path, body = log.read_text().splitlines()[0].split(" ", 1)
        return json.loads(body)


def main():
    rows = []
    for preset in PRESETS:
        body = first_request(preset)
        tools = body.get("tools") or []
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        size = len(json.dumps(body, separators=(",", ":")).encode())
        schemas = len(json.dumps(tools, separators=(",", ":")).encode())
        rows.append((preset, len(tools), size, schemas, len(system.encode())))
    print("## First request per preset (`bench/first-request.sh`)\n")
    print(
        "The first request of a one-step run with no config files, no skills and no MCP servers "
        "(the default model, DeepSeek's chat completions), as it goes on the wire: the system "
        "prompt and the tool schemas are what every request of the session repeats. Tokens "
        "are estimated at 4 bytes each.\n"
    )
    print("| preset | tools | request (bytes) | of it, tool schemas | of it, system prompt | ~tokens |")
    print("|---|---|---|---|---|---|")
    for preset, count, size, schemas, system in rows:
        print(f"| `{preset}` | {count} | {size:,} | {schemas:,} | {system:,} | {size // 4:,} |")
    standard, minimal = rows[0][2], rows[1][2]
    print(
        f"\n`minimal` sends {100 * minimal / standard:.0f}% of what `standard` sends "
        f"({standard - minimal:,} bytes, about {(standard - minimal) // 4:,} tokens, less a request)."
    )


if __name__ == "__main__":
    main()
