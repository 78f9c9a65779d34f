//! Hooks: commands the user's configuration runs at points of a session, in the `hooks.json`
//! format Claude Code and Codex share:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! read from `$DSH_HOME/hooks.json` and then the project's `.dsh/hooks.json` (both apply; the
//! project's only in a folder the user trusts, `ConfigFiles::project_hooks`). Each
//! hook gets the event as JSON on stdin and runs under the session's sandbox, as `bash` would,
//! within its time limit. Exit status 2 blocks what the event allows blocking, and the hook's
//! stderr says why (to the model, or for a prompt to the user); any other failure is reported
//! to the user and the run goes on.

mod approvals;
pub(crate) mod install;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::SetupError;
use crate::agent::events::AgentEvent;

/// A hook's time limit when its entry gives none (as Claude Code's).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Where in a session a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A run begins (`source`: `startup`, or `resume` for a resumed session).
    SessionStart,
    /// The user's message is about to be sent; exit 2 withholds it.
    UserPromptSubmit,
    /// A tool call is about to run; exit 2 blocks it, and the model reads why.
    PreToolUse,
    /// A tool call has run; exit 2 shows the model the hook's stderr after the result.
    PostToolUse,
    /// The model has answered and the turn would end; exit 2 has it go on, with the hook's
    /// stderr as the next message.
    Stop,
    /// The `subagent` tool is about to start a child (`agent_id`, `agent_type`,
    /// `description`); what a hook prints is added to the child's task.
    SubagentStart,
    /// A subagent has answered and its turn would end: a child's Stop, with Stop's rules.
    SubagentStop,
    /// The run is closing (`reason`); nothing to block.
    SessionEnd,
    /// The history is about to be summarised (`trigger`: `manual` or `auto`, which a matcher
    /// chooses); nothing to block.
    PreCompact,
    /// An approval is about to be put to the user (`tool_name`, `reason`); exit 2 refuses it
    /// with nobody asked.
    PermissionRequest,
    /// The user is being asked for an approval (`message`, `notification_type`); nothing to
    /// block.
    Notification,
}

impl HookEvent {
    const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
        HookEvent::PermissionRequest,
        HookEvent::Notification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::Notification => "Notification",
        }
    }

    /// Whether a matcher chooses among its occasions: tool names for tool events, the
    /// `source` for SessionStart, the `trigger` for PreCompact.
    fn uses_matcher(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::SessionStart
                | HookEvent::PreCompact
                | HookEvent::PermissionRequest
        )
    }

    /// Whether exit status 2 blocks anything (a start or an end has nothing to block).
    fn can_block(self) -> bool {
        !matches!(
            self,
            HookEvent::SessionStart
                | HookEvent::SubagentStart
                | HookEvent::SessionEnd
                | HookEvent::PreCompact
                | HookEvent::Notification
        )
    }

    /// Whether the event happens in a subagent's run too (its tool calls, and its Stop as
    /// SubagentStop).
    fn in_subagents(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::SubagentStop
        )
    }
}

/// One configured command.
#[derive(Debug, Clone)]
struct Hook {
    event: HookEvent,
    /// Tool names it applies to (tool events only); `None`: all.
    matcher: Option<regex::Regex>,
    command: String,
    timeout: Duration,
}

/// The hooks of a run, in the order they were configured.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    hooks: Vec<Hook>,
    /// What was left out, for the user: `(file, what)`.
    pub skipped: Vec<String>,
}

impl HookSet {
    /// Reads `$DSH_HOME/hooks.json` and the project's hooks file, when the folder is trusted
    /// (`project`, from `ConfigFiles::project_hooks`: an untrusted repository's hooks are set
    /// aside there, and said so); a file that is missing is fine, one that cannot be used stops
    /// the run before anything is sent, naming the file. A project file that is the home's
    /// (through a link) is read once.
    pub fn load(home: &Path, project: Option<&Path>) -> Result<HookSet, SetupError> {
        let mut set = HookSet::default();
        let own = home.join("hooks.json");
        let same = |p: &Path| {
            matches!(
                (std::fs::canonicalize(p), std::fs::canonicalize(&own)),
                (Ok(a), Ok(b)) if a == b
            )
        };
        let project = project.filter(|p| !same(p)).map(Path::to_path_buf);
        for file in std::iter::once(own.clone()).chain(project) {
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(hooks_error(&file, &format!("cannot be read: {e}"))),
            };
            set.read(&file, &text)?;
        }
        Ok(set)
    }

    fn read(&mut self, file: &Path, text: &str) -> Result<(), SetupError> {
        let fail = |what: String| hooks_error(file, &what);
        let value: Value =
            serde_json::from_str(text).map_err(|e| fail(format!("is not JSON: {e}")))?;
        let Some(events) = value.get("hooks").and_then(Value::as_object) else {
            return Err(fail("has no \"hooks\" object".into()));
        };
        for (name, groups) in events {
            let Some(event) = HookEvent::ALL.into_iter().find(|e| e.name() == name) else {
                return Err(fail(format!(
                    "names the event {name:?}, which dsh does not have (it has SessionStart, \
                     UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStart, \
                     SubagentStop, SessionEnd, PreCompact, \
                     PermissionRequest and Notification)"
                )));
            };
            let groups = groups
                .as_array()
                .ok_or_else(|| fail(format!("hooks.{name} must be a list")))?;
            for group in groups {
                let matcher = match group.get("matcher").and_then(Value::as_str) {
                    None | Some("" | "*") => None,
                    Some(pattern) if event.uses_matcher() => Some(
                        regex::Regex::new(&format!("^(?:{pattern})$"))
                            .map_err(|e| fail(format!("hooks.{name}: matcher {pattern:?}: {e}")))?,
                    ),
                    Some(_) => None,
                };
                let commands = group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        fail(format!("hooks.{name}: each entry needs a \"hooks\" list"))
                    })?;
                for command in commands {
                    match command.get("type").and_then(Value::as_str) {
                        Some("command") => {}
                        Some(other) => {
                            self.skipped.push(format!(
                                "hooks file {}: a {name} hook of type {other:?} is not run \
                                 (dsh runs \"command\" hooks)",
                                file.display()
                            ));
                            continue;
                        }
                        None => {
                            return Err(fail(format!(
                                "hooks.{name}: a hook needs \"type\": \"command\""
                            )));
                        }
                    }
                    let Some(script) = command.get("command").and_then(Value::as_str) else {
                        return Err(fail(format!("hooks.{name}: a hook needs a \"command\"")));
                    };
                    let timeout = match command.get("timeout") {
                        None => DEFAULT_HOOK_TIMEOUT,
                        Some(seconds) => seconds
                            .as_f64()
                            .filter(|s| s.is_finite() && *s > 0.0)
                            .map(Duration::from_secs_f64)
                            .ok_or_else(|| {
                                fail(format!("hooks.{name}: timeout must be a number of seconds"))
                            })?,
                    };
                    self.hooks.push(Hook {
                        event,
                        matcher: matcher.clone(),
                        command: script.to_owned(),
                        timeout,
                    });
                }
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks of `event` whose matcher takes one of `names`: a tool call's tool by dsh's
    /// name and its names in other agents' hook vocabularies ([`dsh_tools::ToolFacts`]), or a
    /// session start's source.
    fn for_event<'a>(
        &'a self,
        event: HookEvent,
        names: Option<&'a [&'a str]>,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks.iter().filter(move |hook| {
            hook.event == event
                && match (&hook.matcher, names) {
                    (None, _) => true,
                    (Some(matcher), Some(names)) => names.iter().any(|n| matcher.is_match(n)),
                    (Some(_), None) => false,
                }
        })
    }
}

fn hooks_error(file: &Path, what: &str) -> SetupError {
    // What a file says is quoted in the message: no escape sequence of it reaches a terminal.
    let what: String = what
        .chars()
        .flat_map(|c| match c {
            '\n' => vec![c],
            c if c.is_control() => c.escape_default().collect(),
            c => vec![c],
        })
        .collect();
    SetupError::config(format!(
        "hooks file {} {what} (see docs/hooks.md)",
        file.display()
    ))
}

/// What the hooks of one event said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookVerdict {
    /// A hook exited 2: its stderr (or a line saying it gave none).
    pub blocked: Option<String>,
    /// What hooks that succeeded printed, for the events that add it to the conversation
    /// (SessionStart, UserPromptSubmit).
    pub context: Vec<String>,
}

/// Runs a session's hooks: its shell and sandbox, its identity for the payload, and where to
/// report a hook that failed.
#[derive(Clone)]
pub struct HookRunner {
    pub hooks: HookSet,
    /// The run's secrets, taken out of what hooks print before it reaches the model, the log
    /// or the user.
    pub redactor: Option<dsh_tools::Redactor>,
    /// A subagent's runner: only its tool calls have hooks.
    pub subagent: bool,
    pub shell: Arc<dsh_tools::Shell>,
    pub policy: dsh_sandbox::SandboxPolicy,
    pub cwd: PathBuf,
    pub session_id: String,
    pub transcript: PathBuf,
    pub events: UnboundedSender<AgentEvent>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("hooks", &self.hooks)
            .finish()
    }
}

impl HookRunner {
    /// Runs the hooks of `event` whose matcher takes one of `names` (see `for_event`) one after
    /// the other, with `fields` added to the common payload; the first that blocks stops the rest.
    /// A stopped run (`cancel`) stops the hook running and the ones after it.
    ///
    /// Boxed so that it is compiled once, here, and not in every crate that awaits it.
    pub fn fire<'a>(
        &'a self,
        event: HookEvent,
        names: Option<&'a [&'a str]>,
        fields: Value,
        cancel: &'a tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'a, HookVerdict> {
        Box::pin(self.fire_hooks(event, names, fields, cancel))
    }

    async fn fire_hooks(
        &self,
        event: HookEvent,
        names: Option<&[&str]>,
        fields: Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> HookVerdict {
        let mut verdict = HookVerdict::default();
        // A subagent's turn ending is its parent's SubagentStop, not a Stop of the session.
        let event = match event {
            HookEvent::Stop if self.subagent => HookEvent::SubagentStop,
            other => other,
        };
        if self.subagent && !event.in_subagents() {
            return verdict;
        }
        let mut payload = json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript,
            "cwd": self.cwd,
            "hook_event_name": event.name(),
        });
        if let (Some(map), Value::Object(extra)) = (payload.as_object_mut(), fields) {
            map.extend(extra);
        }
        let input = payload.to_string().into_bytes();
        for hook in self.hooks.for_event(event, names) {
            if cancel.is_cancelled() {
                break;
            }
            let script = dsh_tools::Script {
                text: &hook.command,
                input: input.clone(),
                policy: &self.policy,
                cwd: &self.cwd,
                limit: hook.timeout,
                env: vec![(
                    "CLAUDE_PROJECT_DIR".into(),
                    self.cwd.clone().into_os_string(),
                )],
            };
            let run = self.shell.run_script(script, cancel).await;
            if cancel.is_cancelled() {
                break;
            }
            let said =
                |text: &str| dsh_tools::redacted(self.redactor.as_ref(), text.trim().to_owned());
            match run {
                Ok(run) if run.timed_out => self.notice(format!(
                    "{} hook `{}` was stopped after {:?}; the run goes on",
                    event.name(),
                    hook.command,
                    hook.timeout
                )),
                Ok(run) if run.code == Some(0) => {
                    if !said(&run.stdout).is_empty() {
                        verdict.context.push(said(&run.stdout));
                    }
                }
                Ok(run) if run.code == Some(2) && !event.can_block() => self.notice(format!(
                    "{} hook `{}` exited 2, but this event cannot be blocked{}",
                    event.name(),
                    hook.command,
                    match said(&run.stderr) {
                        s if s.is_empty() => String::new(),
                        s => format!(": {s}"),
                    }
                )),
                Ok(run) if run.code == Some(2) => {
                    let why = said(&run.stderr);
                    verdict.blocked = Some(if why.is_empty() {
                        format!("a {} hook blocked this and gave no reason", event.name())
                    } else {
                        why
                    });
                    return verdict;
                }
                Ok(run) => self.notice(format!(
                    "{} hook `{}` failed ({}){}; the run goes on",
                    event.name(),
                    hook.command,
                    run.code.map_or_else(
                        || "killed by a signal".to_owned(),
                        |c| format!("exit status {c}")
                    ),
                    match said(&run.stderr) {
                        s if s.is_empty() => String::new(),
                        s => format!(": {s}"),
                    }
                )),
                Err(e) => self.notice(format!(
                    "{} hook `{}` could not run: {e}; the run goes on",
                    event.name(),
                    hook.command
                )),
            }
        }
        verdict
    }

    fn notice(&self, line: String) {
        let _ = self.events.send(AgentEvent::Notice(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> Result<HookSet, SetupError> {
        let mut set = HookSet::default();
        set.read(Path::new("/h/hooks.json"), text).map(|()| set)
    }

    #[test]
    fn matchers_take_dsh_names_and_the_names_hooks_were_written_for() {
        let set = set(r#"{"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "write|edit", "hooks": [{"type": "command", "command": "b", "timeout": 5}]},
                {"hooks": [{"type": "command", "command": "c"}]}
            ],
            "Stop": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "d"}]}]
        }}"#)
        .unwrap();
        // The names each tool goes by, as its facts give them.
        let known = |tool: &'static str| -> &'static [&'static str] {
            match tool {
                "bash" => &["bash", "Bash"],
                "edit" => &["edit", "Edit"],
                "bash_extra" => &["bash_extra"],
                "str_replace_editor" => &["str_replace_editor"],
                _ => &[],
            }
        };
        let names = |event, tool: Option<&'static str>| -> Vec<String> {
            set.for_event(event, tool.map(known))
                .map(|h| h.command.clone())
                .collect()
        };
        assert_eq!(names(HookEvent::PreToolUse, Some("bash")), ["a", "c"]);
        assert_eq!(names(HookEvent::PreToolUse, Some("edit")), ["b", "c"]);
        assert_eq!(
            names(HookEvent::PreToolUse, Some("bash_extra")),
            ["c"],
            "anchored"
        );
        assert_eq!(names(HookEvent::Stop, None), ["d"]);
        assert!(
            names(HookEvent::PreToolUse, Some("str_replace_editor")).len() == 1,
            "not Edit"
        );
        assert!(names(HookEvent::PostToolUse, Some("bash")).is_empty());
    }

    #[test]
    fn a_file_that_cannot_be_used_names_what_is_wrong() {
        for (text, needle) in [
            ("{", "is not JSON"),
            ("{}", "has no \"hooks\" object"),
            (
                r#"{"hooks": {"Notify": []}}"#,
                "\"Notify\", which dsh does not have",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}"#,
                "needs \"type\"",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#,
                "matcher \"(\"",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}"#,
                "timeout must be",
            ),
        ] {
            let error = set(text).unwrap_err().message;
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.starts_with("hooks file /h/hooks.json"), "{error}");
        }
    }

    #[test]
    fn hooks_of_a_type_dsh_does_not_run_are_left_out_with_a_note() {
        let set = set(r#"{"hooks": {
            "Notification": [{"hooks": [{"type": "command", "command": "n"}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "p"}, {"type": "command", "command": "s"}]}]
        }}"#)
        .unwrap();
        assert_eq!(set.hooks.len(), 2);
        assert_eq!(set.skipped.len(), 1, "{:?}", set.skipped);
    }
}
