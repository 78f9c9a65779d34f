"""The SDK against the real binary (DSH_BIN) and the scripted model server
(SCRIPTED_SERVER_BIN): scripts/sdk-tests builds both and sets them. Without them every test
fails, never skips: CI must run these."""

import json
import os
import subprocess
import tempfile

import pytest


def _required(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run scripts/sdk-tests, which builds dsh and the "
                    "scripted server and sets it", pytrace=False)
    return value


class Scripted:
    """A scripted model server playing `turns`, and a home and workspace for dsh."""

    def __init__(self, turns):
        self.dir = tempfile.TemporaryDirectory(prefix="dsh-sdk-test-")
        self.home = os.path.join(self.dir.name, "home")
        self.ws = os.path.join(self.dir.name, "ws")
        os.makedirs(self.home)
        os.makedirs(self.ws)
        self.log = os.path.join(self.dir.name, "requests.log")
        script = os.path.join(self.dir.name, "turns.json")
        with open(script, "w", encoding="utf-8") as f:
            json.dump(turns, f)
        self.model = subprocess.Popen(
            [_required("SCRIPTED_SERVER_BIN"), "--turns", script],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, SCRIPTED_SERVER_LOG=self.log))
        self.base = self.model.stdout.readline().strip()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
        env.update({"DSH_HOME": self.home, "DEEPSEEK_BASE_URL": self.base,
                    "DEEPSEEK_API_KEY": "test-key", "HOME": self.dir.name})
        self.env = env
        self.bin = _required("DSH_BIN")

    def requests(self):
        """What the model was sent, once the server has stopped: (path, body) per request."""
        self.stop()
        with open(self.log, encoding="utf-8") as f:
            return [json.loads(line.split(" ", 1)[1]) for line in f if line.strip()]

    def stop(self):
        if self.model.poll() is None:
            self.model.stdin.close()
            self.model.wait(timeout=30)
            self.model.stdout.close()

    def close(self):
        self.stop()
        self.dir.cleanup()


@pytest.fixture
def scripted():
    made = []

    def make(turns):
        server = Scripted(turns)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()
