#!/usr/bin/env node
// Starts the dsh binary of this platform's package (@dsh-rs/dsh-<os>-<cpu>, an optional
// dependency, so npm fetches only the one that fits) with the same arguments, standard streams
// and environment, and exits as it does: with its status, or by the signal that ended it.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

const platform = `${process.platform}-${process.arch}`;
const supported = { "linux-x64": true, "linux-arm64": true };
const pkg = `@dsh-rs/dsh-${platform}`;

function binary() {
  if (!supported[platform]) {
    throw new Error(`dsh has no build for ${platform} (there are builds for Linux on x64 and arm64)`);
  }
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "dsh");
  } catch {
    throw new Error(`${pkg} is not installed: install @dsh-rs/dsh again without --no-optional ` +
      "(npm installs the package of your platform with it)");
  }
}

let file;
try {
  file = binary();
} catch (error) {
  process.stderr.write(`dsh: ${error.message}\n`);
  process.exit(1);
}

const child = spawn(file, process.argv.slice(2), { stdio: "inherit" });
// On a terminal, Ctrl-C and a hang-up reach the child directly (it is in the terminal's process
// group): passing them on too would be a second Ctrl-C, which dsh takes as "quit at once".
// Otherwise, and for SIGTERM always, this process is the one a supervisor signals.
const fromTerminal = Boolean(process.stdin.isTTY);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (signal === "SIGTERM" || !fromTerminal) child.kill(signal);
  });
}
child.on("error", (error) => {
  process.stderr.write(`dsh: cannot start ${file}: ${error.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
