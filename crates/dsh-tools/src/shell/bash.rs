//! The `bash` tool: one `bash -c` per call, in a fresh shell, confined by the sandbox.
//!
//! A command still running at its timeout is moved to a background job (the reference's later,
//! 0.2.x behaviour) unless the job limit is reached, in which case it is stopped and reported
//! as timed out. The result text and its markers are the reference's.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use dsh_sandbox::{Backend, ConfinedCommand, SandboxUnavailable, Subject};

use super::Shell;
use super::capture::SpillTarget;
use super::jobs::SandboxFacts;
use super::process::{Exit, ShellProcess, Spec, signal_name};
use crate::mutate::{call_policy, escalation_params};
use crate::schema::{Param, ParamType, Parameters};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use dsh_protocol::CommandOutcome;

/// The timeout when the call gives none.
pub const DEFAULT_TIMEOUT_MS: f64 = 60_000.0;
/// The longest timeout a call may ask for; longer ones are cut to it.
pub const MAX_TIMEOUT_MS: f64 = 600_000.0;

/// The `bash` tool.
pub struct Bash {
    parameters: Parameters,
    confining: bool,
}

impl Bash {
    /// `confining`: whether commands run under a sandbox, so that escalation is offered.
    pub fn new(confining: bool) -> Self {
        let mut params = vec![
            Param::required(
                "command",
                ParamType::String,
                "The command, run as `bash -c`.",
            ),
            Param::required(
                "description",
                ParamType::String,
                "What the command does, in 5-10 words, for the user (e.g. \"Run the unit tests\").",
            ),
            Param::optional(
                "timeoutMs",
                ParamType::Number,
                "Milliseconds before the command is moved to a background job (default 60000, \
                 at most 600000).",
            ),
            Param::optional(
                "workdir",
                ParamType::String,
                "Folder to run in; a relative path is taken from the workspace (the default).",
            ),
            Param::optional(
                "run_in_background",
                ParamType::Boolean,
                "Start as a background job and return its id at once; read it with job_output, \
                 stop it with job_kill.",
            ),
        ];
        if confining {
            params.extend(escalation_params());
        }
        Bash {
            parameters: Parameters::new(params),
            confining,
        }
    }
}

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Execute, "Run")
            .subject("command")
            .hook_names(&["Bash"])
    }

    fn description(&self) -> &str {
        "Run a shell command with `bash -c` and get its stdout and stderr. Every call starts a \
         new shell in the workspace: nothing (cwd, variables) carries over, so use `workdir` \
         rather than `cd`. A failing command ends with `[exit code: N]`. Long output keeps its \
         end, and the full output is saved to a file whose path is given. Commands may run in a \
         file sandbox: `[sandbox: file access denied under <mode> mode]` means the sandbox \
         refused a write, not that the command is wrong. A command still running at its timeout \
         becomes a background job; `run_in_background` starts one directly."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// Its commands run in the sandbox, which plan mode makes read-only.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Read the `[exit code: N]` marker of every `bash` result and look into a failure \
             before going on. Background jobs report when they finish; do not poll them with \
             sleep, and collect or kill the ones you started before the final answer.",
        )
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = args.str("command").unwrap_or_default().to_owned();
            if command.trim().is_empty() {
                return Err(ToolError::plain(
                    "invalid command: expected a non-empty string",
                ));
            }
            crate::redact::refuse_placeholder_command(&ctx.session, &command)?;
            if args
                .str("description")
                .unwrap_or_default()
                .trim()
                .is_empty()
            {
                return Err(ToolError::plain(
                    "invalid description: expected a non-empty string",
                ));
            }
            let timeout_ms = match args.get("timeoutMs") {
                None => DEFAULT_TIMEOUT_MS,
                Some(value) => match value.as_f64() {
                    Some(ms) if ms > 0.0 && ms.is_finite() => ms.min(MAX_TIMEOUT_MS),
                    _ => {
                        return Err(ToolError::plain(format!(
                            "invalid timeoutMs: expected a positive number, got {value}"
                        )));
                    }
                },
            };
            let policy = call_policy(&args, ctx, "bash", Subject::Command).await?;
            let Some(shell) = ctx.session.shell.clone() else {
                return Err(ToolError::plain(
                    "bash is not available in this session (no shell is set up)",
                ));
            };
            let cwd = workdir(policy.workspace(), args.str("workdir"))?;
            let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), command.clone().into()];
            let confined = shell.sandbox.confine(argv, &policy).map_err(unavailable)?;
            let background = args.bool("run_in_background").unwrap_or(false);
            let jobs = ctx.session.background_jobs;
            if background && !jobs {
                return Err(ToolError::plain(
                    "background jobs unavailable: no job controller serves this agent (load \
                     @deepseek-ai/dsh-tool-jobs in its composition)",
                ));
            }
            if background && !shell.jobs.has_room() {
                return Err(ToolError::plain(super::jobs::LimitReached.to_string()));
            }
            let (n, tag) = shell.next_tag();
            let token = uuid::Uuid::new_v4().simple().to_string();
            let spec = Spec {
                argv: confined.argv.clone(),
                cwd: cwd.clone(),
                env: confined.environment(shell.env.build(std::env::vars_os(), &tag)),
                tag,
                spill: Some(SpillTarget {
                    dir: ctx.session.spill.dir().to_path_buf(),
                    name: format!("{}-bash-{n}", &token[..12]),
                }),
                confinement: confined.child_setup().cloned(),
                stdin: None,
                redactor: ctx.session.redactor.clone(),
                helper: confined.helper().cloned(),
            };
            shell.pending.note(n, confined.watch());
            let process = match ShellProcess::spawn(spec).await {
                Ok(process) => process,
                Err(e) => {
                    shell.pending.remove(n);
                    return Err(spawn_failed(&confined, e));
                }
            };
            let facts = Arc::new(SandboxFacts::new(
                confined,
                cwd,
                self.confining && ctx.session.offers_escalation(),
            ));
            shell.pending.keep(n, &facts);
            if background {
                let job = shell
                    .jobs
                    .adopt(&command, process, facts)
                    .map_err(|e| ToolError::plain(e.to_string()))?;
                let outcome = CommandOutcome {
                    job_id: Some(job.id.clone()),
                    ..CommandOutcome::default()
                };
                return Ok(ToolOutput::command(
                    format!("started background job {}", job.id),
                    outcome,
                ));
            }
            let limit = Duration::from_secs_f64(timeout_ms / 1000.0);
            let shown_ms = timeout_ms.ceil() as u64;
            let settled = watch(&process, ctx.session.progress.as_ref(), &ctx.call_id);
            if let Ok(exit) = tokio::time::timeout(limit, settled).await {
                let (text, outcome) = render(&process, exit, &facts, None)?;
                return Ok(ToolOutput::command(text, outcome));
            }
            let (text, outcome) =
                timed_out(&shell, jobs, &command, process, facts, shown_ms).await?;
            Ok(ToolOutput::command(text, outcome))
        })
    }
}

/// How often a running command's new output is passed to a live receiver.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Waits for `process` to end, passing its output to `progress` as it comes (stdout and
/// stderr as they are read, never half a character).
async fn watch(
    process: &ShellProcess,
    progress: Option<&crate::ToolProgress>,
    call_id: &str,
) -> super::process::Exit {
    let Some(progress) = progress else {
        return process.settled().await;
    };
    let mut cursors = [0u64; 2];
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    // A character the pipe delivered in two reads waits for its end, so no chunk shows half
    // of one; at the end, whatever is left is passed on as it is.
    let pass_on = |cursors: &mut [u64; 2], last: bool| {
        for (capture, cursor) in [&process.stdout, &process.stderr].into_iter().zip(cursors) {
            let capture = capture
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if capture.total() <= *cursor {
                continue;
            }
            let bytes = capture.bytes_since(*cursor);
            let whole = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                Err(e) if e.error_len().is_none() && !last => e.valid_up_to(),
                Err(_) => bytes.len(),
            };
            *cursor = capture.total() - (bytes.len() - whole) as u64;
            if whole > 0 {
                progress(call_id, &String::from_utf8_lossy(&bytes[..whole]));
            }
        }
    };
    loop {
        tokio::select! {
            exit = process.settled() => {
                pass_on(&mut cursors, true);
                return exit;
            }
            _ = tick.tick() => pass_on(&mut cursors, false),
        }
    }
}

/// A command past its timeout: moved to a job, or stopped when no job may start (the limit is
/// reached, or the job tools that would read it are withheld).
async fn timed_out(
    shell: &Arc<Shell>,
    jobs: bool,
    command: &str,
    process: Arc<ShellProcess>,
    facts: Arc<SandboxFacts>,
    ms: u64,
) -> Result<(String, CommandOutcome), ToolError> {
    let adopted = if jobs {
        shell.jobs.adopt(command, process.clone(), facts.clone())
    } else {
        Err(super::jobs::LimitReached)
    };
    match adopted {
        Ok(job) => {
            // Reported as running: how it ends (and its sandbox notices) come with job_output.
            let mut text = job.read(false);
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[still running after {ms}ms; moved to background job {}]\nThe command keeps \
                 running in the background. You will be notified when it finishes; read newer \
                 output with job_output, stop it with job_kill.",
                job.id
            ));
            let outcome = CommandOutcome {
                job_id: Some(job.id.clone()),
                ..CommandOutcome::default()
            };
            Ok((text, outcome))
        }
        Err(_) => {
            process.terminate();
            let exit = process.settled().await;
            render(&process, exit, &facts, Some(ms))
        }
    }
}

/// A confined command that could not start is the sandbox's failure (the Landlock
/// restrictions could not be applied, `bwrap` vanished): never retried unconfined.
fn spawn_failed(confined: &ConfinedCommand, error: std::io::Error) -> ToolError {
    // A program that is not there is not the sandbox's fault (the workdir was checked before).
    if confined.backend == Backend::None || error.kind() == std::io::ErrorKind::NotFound {
        return ToolError::plain(format!(
            "cannot start bash: {error}; check that bash is installed and on PATH"
        ));
    }
    unavailable(SandboxUnavailable::runner_failed(
        confined.mode,
        format!(
            "the {} sandbox could not start the command: {error}",
            confined.backend
        ),
    ))
}

fn workdir(base: &std::path::Path, raw: Option<&str>) -> Result<std::path::PathBuf, ToolError> {
    let Some(raw) = raw else {
        return Ok(base.to_path_buf());
    };
    let path = base.join(raw);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Ok(path),
        Ok(_) => Err(ToolError::plain(format!(
            "workdir \"{raw}\" is not a directory ({}); give a folder to run the command in",
            path.display()
        ))),
        Err(e) => Err(ToolError::plain(format!(
            "workdir \"{raw}\" cannot be used ({}: {}); give an existing folder, absolute or \
             relative to the workspace",
            path.display(),
            crate::path::io_reason(&e)
        ))),
    }
}

fn unavailable(error: SandboxUnavailable) -> ToolError {
    ToolError::coded(
        SandboxUnavailable::NAME,
        SandboxUnavailable::CODE,
        error.to_string(),
    )
}

/// The result text: stdout, then `[stderr]` and stderr, or `(no output)`; then the markers.
/// A runner failure is the sandbox's error, not a result.
fn render(
    process: &ShellProcess,
    exit: Exit,
    facts: &SandboxFacts,
    timed_out_ms: Option<u64>,
) -> Result<(String, CommandOutcome), ToolError> {
    let block = |capture: &std::sync::Mutex<super::capture::StreamCapture>| {
        let capture = capture
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let text = capture.text();
        let notice = capture.truncated().then(|| {
            format!(
                "\n[output truncated; full output: {}]",
                capture.spill_path()
            )
        });
        (text, notice)
    };
    let (stdout, stdout_notice) = block(&process.stdout);
    let (stderr, stderr_notice) = block(&process.stderr);
    let mut markers = facts.markers(exit, &stdout, &stderr).map_err(unavailable)?;
    let stdout = stdout + stdout_notice.as_deref().unwrap_or("");
    let stderr = stderr + stderr_notice.as_deref().unwrap_or("");
    let mut body = stdout;
    if !stderr.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(&stderr);
    }
    if body.is_empty() {
        body.push_str("(no output)");
    }
    if let Some(ms) = timed_out_ms {
        markers.push(format!("[timed out after {ms}ms]"));
    }
    match (exit.signal, exit.code) {
        (Some(signal), _) => markers.push(format!("[killed by signal: {}]", signal_name(signal))),
        (None, Some(code)) if code != 0 => markers.push(format!("[exit code: {code}]")),
        _ => {}
    }
    let outcome = CommandOutcome {
        exit_code: exit.signal.is_none().then_some(exit.code).flatten(),
        signal: exit.signal.map(signal_name),
        timed_out: timed_out_ms.is_some(),
        job_id: None,
        truncated: stdout_notice.is_some() || stderr_notice.is_some(),
    };
    if markers.is_empty() {
        return Ok((body, outcome));
    }
    if !body.ends_with('\n') {
        body.push('\n');
    }
    Ok((body + &markers.join("\n"), outcome))
}
