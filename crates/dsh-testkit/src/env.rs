use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::{ScriptedServer, Turn, check_event};

/// A workspace, a dsh home, a user's home and a scripted server, all temporary.
pub struct TestEnv {
    pub ws: TempDir,
    pub home: TempDir,
    /// `HOME` for what the test runs: the user's own dotfiles (Git's global config and
    /// excludes, a shell's rc files) neither change a test's outcome nor are changed by it.
    pub user_home: TempDir,
    pub server: ScriptedServer,
    /// Whether writing the workspace's `.dsh/config.toml`, `.dsh/hooks.json` or `.env` makes the
    /// home trust the workspace
    /// ([`TestEnv::write`]); [`TestEnv::distrust`] turns it off.
    pub trusting: std::sync::atomic::AtomicBool,
}

impl TestEnv {
    pub fn new(turns: Vec<Turn>) -> TestEnv {
        TestEnv::with_server(ScriptedServer::start(turns))
    }

    /// An environment around a server started another way (a shell or read session).
    pub fn with_server(server: ScriptedServer) -> TestEnv {
        TestEnv {
            ws: tempfile::Builder::new()
                .prefix("dsh-test-ws-")
                .tempdir()
                .unwrap(),
            home: tempfile::Builder::new()
                .prefix("dsh-test-home-")
                .tempdir()
                .unwrap(),
            user_home: tempfile::Builder::new()
                .prefix("dsh-test-user-")
                .tempdir()
                .unwrap(),
            server,
            trusting: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// The entry of `$DSH_HOME/config.toml` that trusts the workspace's own config.
    pub fn trust_entry(&self) -> String {
        let folder = self.ws_path().display().to_string();
        format!("[projects.{folder:?}]\ntrusted = true\n")
    }

    /// Takes the trust entry out of the home's `config.toml` (the file goes when nothing else is
    /// in it), and writing the files above no longer adds it: the workspace is then a
    /// repository's the user never trusted.
    pub fn distrust(&self) {
        self.trusting
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let path = self.home.path().join("config.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let rest = text.replace(&self.trust_entry(), "");
        if rest.trim().is_empty() {
            let _ = std::fs::remove_file(&path);
        } else {
            std::fs::write(&path, rest).unwrap();
        }
    }

    /// The workspace's real path (what dsh reports as its working directory).
    pub fn ws_path(&self) -> std::path::PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    /// Writes a file in the workspace. Writing its `.dsh/config.toml`, `.dsh/hooks.json`,
    /// `.env` or a saved workflow or prompt (`.dsh/workflows/`, `.dsh/prompts/`: what needs trust) also trusts the workspace ([`TestEnv::trust_entry`] added to
    /// the home's `config.toml`), as a user who wrote it would: a test of what a project's
    /// files do is of a trusted project's, and an attack by an untrusted one calls
    /// [`TestEnv::distrust`].
    pub fn write(&self, relative: &str, content: &str) {
        let path = self.ws.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
        let saved = [".dsh/workflows/", ".dsh/prompts/"];
        if ([".dsh/config.toml", ".dsh/hooks.json", ".env"].contains(&relative)
            || saved.iter().any(|folder| relative.starts_with(folder)))
            && self.trusting.load(std::sync::atomic::Ordering::Relaxed)
        {
            let home_config = self.home.path().join("config.toml");
            let text = std::fs::read_to_string(&home_config).unwrap_or_default();
            if !text.contains(&self.trust_entry()) {
                std::fs::write(home_config, format!("{text}\n{}", self.trust_entry())).unwrap();
            }
        }
    }

    /// A command running `bin` in the workspace against the server, with a clean environment:
    /// inherited `DSH_*` and `DEEPSEEK_*` variables removed, `HOME` the test's own, stdin
    /// empty.
    pub fn command(&self, bin: &Path) -> Command {
        let mut command = Command::new(bin);
        for (name, _) in std::env::vars_os() {
            let upper = name.to_string_lossy().to_uppercase();
            if upper.starts_with("DSH_") || upper.starts_with("DEEPSEEK_") {
                command.env_remove(&name);
            }
        }
        command
            .current_dir(self.ws.path())
            .env("DEEPSEEK_BASE_URL", self.server.base_url())
            .env("DEEPSEEK_API_KEY", "test-key")
            .env("DSH_HOME", self.home.path())
            .env("HOME", self.user_home.path())
            .stdin(Stdio::null());
        command
    }

    /// The variables [`TestEnv::command`] sets, for a program started another way (in tmux).
    pub fn variables(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DEEPSEEK_BASE_URL", self.server.base_url()),
            ("DEEPSEEK_API_KEY", "test-key".into()),
            ("DSH_HOME", self.home.path().display().to_string()),
            ("HOME", self.user_home.path().display().to_string()),
        ]
    }

    /// Runs `bin` with `args` to completion.
    pub fn run(&self, bin: &Path, args: &[&str]) -> RunOutput {
        RunOutput::of(self.command(bin).args(args))
    }

    /// Every session log under the home, concatenated (empty when there is none).
    pub fn session_logs(&self) -> String {
        let mut text = String::new();
        let Ok(projects) = std::fs::read_dir(self.home.path().join("sessions")) else {
            return text;
        };
        for project in projects.flatten() {
            for session in std::fs::read_dir(project.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if let Ok(log) = std::fs::read_to_string(session.path().join("session.jsonl")) {
                    text.push_str(&log);
                }
            }
        }
        text
    }

    /// The text of the one session log under the home (panics unless there is exactly one).
    pub fn session_log(&self) -> String {
        let mut logs = Vec::new();
        let sessions = self.home.path().join("sessions");
        for project in std::fs::read_dir(sessions).unwrap() {
            for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
                logs.push(session.unwrap().path().join("session.jsonl"));
            }
        }
        assert_eq!(logs.len(), 1, "expected one session log, found {logs:?}");
        std::fs::read_to_string(&logs[0]).unwrap()
    }
}

/// What a finished run printed.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for RunOutput {
    fn from(output: std::process::Output) -> Self {
        RunOutput {
            status: output.status,
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl RunOutput {
    /// Runs a prepared command to completion.
    pub fn of(command: &mut Command) -> RunOutput {
        RunOutput::from(command.output().unwrap())
    }

    /// Runs a prepared command to completion with `input` on its stdin.
    pub fn fed(command: &mut Command, input: &[u8]) -> RunOutput {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // A run that refuses before it reads its input (an address it will not send a key
        // to) has closed it: that is its answer, not the test's failure.
        match std::io::Write::write_all(&mut stdin, input) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            written => written.unwrap(),
        }
        drop(stdin);
        RunOutput::from(child.wait_with_output().unwrap())
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The `--json` events, each checked against the published schema.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                let event: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
                check_event(&event);
                event
            })
            .collect()
    }

    /// The `type` (and `phase`, for status events) of every event.
    pub fn event_kinds(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| match e["phase"].as_str() {
                Some(phase) => format!("status:{phase}"),
                None => e["type"].as_str().unwrap_or_default().to_owned(),
            })
            .collect()
    }
}
