//! `job_output`, `job_list` and `job_kill`: the model's view of background jobs.

use std::sync::Arc;
use std::time::Duration;

use super::Shell;
use super::jobs::Job;
use crate::schema::{Param, ParamType, Parameters};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// How long `wait: true` waits when no `timeout_ms` is given.
pub const DEFAULT_WAIT_MS: f64 = 30_000.0;
/// The longest wait.
pub const MAX_WAIT_MS: f64 = 600_000.0;

fn shell(ctx: &ToolContext) -> Result<Arc<Shell>, ToolError> {
    ctx.session
        .shell
        .clone()
        .ok_or_else(|| ToolError::plain("background jobs are not available in this session"))
}

fn job(ctx: &ToolContext, args: &Arguments) -> Result<Arc<Job>, ToolError> {
    let id = args.str("job_id").unwrap_or_default();
    if id.trim().is_empty() {
        return Err(ToolError::plain(format!(
            "invalid job_id: expected a non-empty string, got {}",
            serde_json::Value::from(id)
        )));
    }
    shell(ctx)?
        .jobs
        .get(id)
        .ok_or_else(|| ToolError::plain(format!("unknown job {id}")))
}

/// The `job_output` tool.
pub struct JobOutput {
    parameters: Parameters,
}

impl Default for JobOutput {
    fn default() -> Self {
        JobOutput {
            parameters: Parameters::new(vec![
                Param::required("job_id", ParamType::String, "The id bash gave the job."),
                Param::optional(
                    "wait",
                    ParamType::Boolean,
                    "Wait until the job ends or timeout_ms passes (a wait that runs out leaves \
                     the job running).",
                ),
                Param::optional(
                    "timeout_ms",
                    ParamType::Number,
                    "With wait: the longest wait in milliseconds (default 30000, at most 600000).",
                ),
            ]),
        }
    }
}

impl Tool for JobOutput {
    fn name(&self) -> &str {
        "job_output"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Execute, "Read the output of job")
            .subject("job_id")
            .read_only()
    }

    fn description(&self) -> &str {
        "Read what a background job printed since the last read, ending with its \
         `[status: ...]`. Returns at once unless `wait` is true."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Keep track of the background jobs you start: you are told when one finishes, so \
             work on something else meanwhile instead of polling. Before the final answer, read \
             the jobs that still matter with job_output and job_kill the rest.",
        )
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let job = job(ctx, &args)?;
            if args.bool("wait").unwrap_or(false) {
                let ms = match args.get("timeout_ms") {
                    None => DEFAULT_WAIT_MS,
                    Some(value) => match value.as_f64() {
                        Some(ms) if ms > 0.0 && ms.is_finite() => ms.min(MAX_WAIT_MS),
                        _ => {
                            return Err(ToolError::plain(format!(
                                "invalid wait timeout: expected a positive number of \
                                 milliseconds, got {value}"
                            )));
                        }
                    },
                };
                job.wait(Duration::from_secs_f64(ms / 1000.0)).await;
            }
            // The status is taken first: once it says the job ended, all its output is in.
            let status = job.status();
            let mut text = job.read(!status.is_live());
            if text.is_empty() {
                text.push_str("(no new output)");
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[status: {}]", status.describe()));
            if !status.is_live() {
                job.mark_reported();
            }
            Ok(ToolOutput::text(text))
        })
    }
}

/// The `job_list` tool.
pub struct JobList {
    parameters: Parameters,
}

impl Default for JobList {
    fn default() -> Self {
        JobList {
            parameters: Parameters::new(Vec::new()),
        }
    }
}

impl Tool for JobList {
    fn name(&self) -> &str {
        "job_list"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Execute, "List the jobs").read_only()
    }

    fn description(&self) -> &str {
        "List this session's background jobs, running and finished, with their ids and status."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn call<'a>(&'a self, _: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let jobs = shell(ctx)?.jobs.list();
            if jobs.is_empty() {
                return Ok(ToolOutput::text("(no background jobs)"));
            }
            let lines: Vec<String> = jobs
                .iter()
                .map(|job| format!("{} [bash] {} — {}", job.id, job.status().word(), job.label))
                .collect();
            Ok(ToolOutput::text(lines.join("\n")))
        })
    }
}

/// The `job_kill` tool.
pub struct JobKill {
    parameters: Parameters,
}

impl Default for JobKill {
    fn default() -> Self {
        JobKill {
            parameters: Parameters::new(vec![
                Param::required("job_id", ParamType::String, "The id of the job to stop."),
                Param::optional(
                    "reason",
                    ParamType::String,
                    "Why, in a few words, for the log.",
                ),
            ]),
        }
    }
}

impl Tool for JobKill {
    fn name(&self) -> &str {
        "job_kill"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Execute, "Stop job").subject("job_id")
    }

    fn description(&self) -> &str {
        "Stop a background job. Returns at once; the job shows as killed once its processes \
         are gone (within a few seconds)."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// Stopping a job changes no file.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let job = job(ctx, &args)?;
            let status = job.status();
            if !status.is_live() {
                return Ok(ToolOutput::text(format!(
                    "job {} had already finished [status: {}]",
                    job.id,
                    status.describe()
                )));
            }
            job.mark_reported();
            job.kill();
            Ok(ToolOutput::text(format!(
                "requested cancellation of job {}",
                job.id
            )))
        })
    }
}
