//! A terminal for end-to-end tests of the terminal UI: the program runs in a detached `tmux`
//! session of a fixed size, on a server of its own (one socket per test, so tests run in
//! parallel); keys go in with `send-keys` and the screen comes back with `capture-pane`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a screen may take to show what a test waits for.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A program running in tmux; the server is killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Whether tmux can be run here (CI installs it; a test without it fails when
    /// `DSH_TEST_REQUIRE_TMUX` is set, else skips with a message).
    pub fn available() -> bool {
        let found = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var_os("DSH_TEST_REQUIRE_TMUX").is_none(),
                "tmux is required (DSH_TEST_REQUIRE_TMUX is set) but cannot be run"
            );
        }
        found
    }

    /// Starts `argv` in `cwd` on a `width` x `height` terminal, with `env` set (and nothing
    /// else of the test's `DSH_*`/`DEEPSEEK_*` environment). The pane stays after the program
    /// exits, so its last screen and status can be read.
    pub fn start(
        argv: &[&str],
        cwd: &Path,
        env: &[(&str, String)],
        width: u16,
        height: u16,
    ) -> Tmux {
        let socket = format!(
            "dsh-test-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let config = std::env::temp_dir().join(format!("{socket}.conf"));
        std::fs::write(
            &config,
            // set-clipboard on: what a program copies with OSC 52 becomes a paste buffer.
            "set -g remain-on-exit on\nset -g status off\nset -g history-limit 5000\n\
             set -g set-clipboard on\n",
        )
        .expect("write the tmux config");
        let mut command = Command::new("tmux");
        command
            .args(["-L", &socket, "-f"])
            .arg(&config)
            .args([
                "new-session",
                "-d",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .arg("-c")
            .arg(cwd)
            .arg("--")
            .arg("env");
        for (name, _) in std::env::vars_os() {
            let upper = name.to_string_lossy().to_uppercase();
            if upper.starts_with("DSH_") || upper.starts_with("DEEPSEEK_") {
                command.arg("-u").arg(&name);
            }
        }
        command.arg("TERM=xterm-256color");
        for (name, value) in env {
            command.arg(format!("{name}={value}"));
        }
        // tmux sometimes marks a pane dead without its status; the shell reports it instead.
        command.args(["sh", "-c", "\"$0\" \"$@\"; echo \"[exit status $?]\""]);
        command.args(argv);
        let output = command.output().expect("run tmux");
        let _ = std::fs::remove_file(&config);
        assert!(
            output.status.success(),
            "tmux new-session failed: {}",
            text(&output.stderr)
        );
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// Types `text` literally (no key names).
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", "--", text]);
    }

    /// Pastes `text` as a terminal does (bracketed paste, when the program asked for it).
    pub fn paste(&self, text: &str) {
        let name = "dsh-test-paste";
        let loaded = Command::new("tmux")
            .args(["-L", &self.socket, "load-buffer", "-b", name, "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write as _;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(text.as_bytes())?;
                }
                child.wait()
            })
            .expect("tmux load-buffer");
        assert!(loaded.success(), "tmux load-buffer failed");
        self.tmux(&["paste-buffer", "-p", "-d", "-b", name]);
    }

    /// From now on, copies all the program writes to the terminal into `path` (escape
    /// sequences included): what the screen does not show, such as a bell or a notification.
    pub fn record_output(&self, path: &std::path::Path) {
        let command = format!("cat >> '{}'", path.display());
        let started = self.tmux(&["pipe-pane", "-o", &command]);
        assert!(started.status.success(), "tmux pipe-pane failed");
    }

    /// The newest paste buffer: what the program last put on the clipboard with OSC 52.
    pub fn clipboard(&self) -> String {
        text(&self.tmux(&["show-buffer"]).stdout)
    }

    /// Presses keys by tmux's names (`Enter`, `C-c`, `Escape`, `Up`, `Tab`).
    pub fn press(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The screen as text, one line per row (trailing spaces trimmed).
    pub fn screen(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p"]);
        text(&output.stdout)
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The screen and the scrollback above it.
    pub fn everything(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-S", "-"]);
        text(&output.stdout)
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until the screen (scrollback included) satisfies `done`; fails the test with
    /// the screen after [`PATIENCE`].
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.everything();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited {PATIENCE:?} for {what}; the terminal shows:\n{screen}"
            );
            // A poll, not a delay: the condition is checked again at once when it changes
            // quickly, and the test ends as soon as it holds.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `needle` is on the screen or in the scrollback.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?}"), |s| s.contains(needle))
    }

    /// The program's exit status once it has exited.
    pub fn exit_status(&self) -> Option<i32> {
        let screen = self.everything();
        let at = screen.rfind("[exit status ")?;
        screen[at + "[exit status ".len()..]
            .split(']')
            .next()
            .and_then(|n| n.parse().ok())
    }

    /// Waits for the program to exit and returns its status.
    pub fn wait_exit(&self) -> i32 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.exit_status() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the program did not exit; the terminal shows:\n{}",
                self.everything()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The program's process id: the pane runs a shell that runs it, so it is that shell's
    /// child.
    pub fn program_pid(&self) -> u32 {
        let output = self.tmux(&["display-message", "-p", "#{pane_pid}"]);
        let shell: u32 = text(&output.stdout).trim().parse().expect("the pane's pid");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        children
            .split_whitespace()
            .next()
            .and_then(|pid| pid.parse().ok())
            .expect("the program runs under the pane's shell")
    }

    /// The size of the terminal changes, as when its window is resized.
    pub fn resize(&self, width: u16, height: u16) {
        self.tmux(&[
            "resize-window",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
