//! `workflow`: the model hands dsh a JavaScript script that orchestrates subagents at scale
//! (fan-out with `parallel`, staged work with `pipeline`, structured answers with a schema),
//! and gets the script's JSON result. The script runs in `dsh-workflow`'s confined engine on a
//! thread of its own; each `agent()` it calls is a subagent of the caller, started here, at
//! most `subagents.max_concurrent` at once, and bounded by the workflow's own agent cap rather
//! than `subagents.max_total`. What they bill is the caller's, each is a `subagent/run` in the
//! caller's log, and a stop of the caller stops every one of them.
//!
//! The schema, the API, the checks and the texts are the reference's; its engine is V8, so a
//! script that does not parse is described in QuickJS's words (the code is the same).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Shape, Tool, ToolContext, ToolError, ToolFacts,
    ToolFuture, ToolKind, ToolOutput,
};
use dsh_workflow::{AgentCall, Host, Limits, WorkflowError};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;

use super::SubagentTool;
use super::ended::{ChildrenSpent, EndedChild, utf16_head};
use crate::OutputSchema;

/// The longest result the caller reads, in UTF-16 units of its JSON.
const MAX_RESULT_CHARS: usize = 50_000;

/// The `workflow` tool.
pub(crate) struct WorkflowTool {
    children: Arc<SubagentTool>,
    limits: Limits,
    parameters: Parameters,
}

impl WorkflowTool {
    pub(crate) fn new(children: Arc<SubagentTool>) -> WorkflowTool {
        let text = |name, description: &str| Param::optional(name, ParamType::String, description);
        let phase = Shape {
            params: vec![
                Param::required("title", ParamType::String, "The phase's title."),
                text("detail", "What happens in it."),
                text("provider", "Informational: the provider its agents suit."),
                text("model", "Informational: the model its agents suit."),
            ],
            additional: Some(true),
        };
        let meta = Shape {
            params: vec![
                Param::required(
                    "name",
                    ParamType::String,
                    "The workflow's name, shown with its result.",
                ),
                Param::required(
                    "description",
                    ParamType::String,
                    "What it does, in a sentence.",
                ),
                text("whenToUse", "When it is the right workflow."),
                Param::optional(
                    "phases",
                    ParamType::Array(Box::new(ParamType::Shape(Box::new(phase)))),
                    "Its phases, in order, for display.",
                ),
            ],
            additional: Some(true),
        };
        let limits = children.kit.workflows;
        WorkflowTool {
            children,
            limits,
            parameters: Parameters::new(vec![
                Param::required(
                    "script",
                    ParamType::String,
                    "The body of an async JavaScript function: await agent(prompt, {label, \
                     phase, schema}) for a subagent's answer (its text, or the object its \
                     schema asks for; null when it failed), parallel([() => ...]) and \
                     pipeline(items, ...stages) to fan out, phase(title), log(text), and the \
                     global args. It must return plain JSON data.",
                ),
                Param::required(
                    "meta",
                    ParamType::Shape(Box::new(meta)),
                    "name and description (whenToUse and phases are optional).",
                ),
                Param::optional(
                    "args",
                    ParamType::Shape(Box::new(Shape {
                        params: Vec::new(),
                        additional: Some(true),
                    })),
                    "Values the script reads as the global args.",
                ),
            ]),
        }
    }
}

impl Tool for WorkflowTool {
    fn name(&self) -> &str {
        "workflow"
    }

    fn description(&self) -> &str {
        "Run a JavaScript workflow that orchestrates many subagents: fan out over files or \
         questions with parallel(), chain stages with pipeline(), ask for structured answers \
         with a JSON schema, and combine what they return into one JSON result. Use it only \
         when the user asks for a workflow or for work at a scale plain subagent calls do not \
         fit; for one or two delegations, call subagent. The script has no file, process or \
         network access of its own: its agents do the work."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`workflow` only when the user asks for a workflow or for large orchestration (many \
             agents, stages, fan-out); for one or two delegations, subagent is simpler.",
        )
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, "Workflow")
            .summary(workflow_summary)
            .needs_no_review()
    }

    /// Its agents inherit plan mode, so what they may do is checked there.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn stops_itself(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(self.run(args, ctx))
    }
}

/// How often a workflow's new `log()` lines are passed to a front end that shows them.
const LOG_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The workflow's name.
fn workflow_summary(args: &Value) -> Option<String> {
    args.get("meta")?.get("name")?.as_str().map(str::to_owned)
}

impl WorkflowTool {
    async fn run(&self, args: Arguments, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let script = args.str("script").unwrap_or_default().to_owned();
        let meta = args.get("meta").cloned().unwrap_or(Value::Null);
        let name = check_meta(&meta)?;
        if starts_with_meta_export(&script) {
            return Err(workflow_error(
                "SCRIPT_PARSE",
                "workflow meta rides the `meta` request field, not the script: remove the \
                 `export const meta = {...}` statement from the body",
            ));
        }
        let script_args = args.get("args").cloned();
        let (calls, mut asked) = tokio::sync::mpsc::unbounded_channel();
        let (reply, answers) = std::sync::mpsc::channel();
        let (logs, mut said) = tokio::sync::mpsc::channel::<String>(dsh_workflow::LOG_QUEUE);
        let cancelled = Arc::new(AtomicBool::new(false));
        let host = Host {
            calls,
            answers,
            logs,
            cancelled: cancelled.clone(),
            check_schema: Arc::new(|schema| {
                OutputSchema::of(schema, "").map(|_| ()).ok_or_else(|| {
                    dsh_workflow::UnsupportedSchema(
                        "schema does not compile as a JSON Schema".to_owned(),
                    )
                })
            }),
        };
        // However this call ends, dropped included, the engine stops at its next step.
        let _stop_engine = StopOnDrop(cancelled.clone());
        let (done, mut finished) = tokio::sync::oneshot::channel();
        let limits = self.limits;
        let engine_name = name.clone();
        std::thread::Builder::new()
            .name("dsh-workflow".into())
            .spawn(move || {
                let outcome =
                    dsh_workflow::run(&engine_name, &script, script_args.as_ref(), limits, host);
                let _ = done.send(outcome);
            })
            .map_err(|e| ToolError::plain(format!("workflow could not start its engine: {e}")))?;
        // The agents stop with the call, and with the run when it ends first.
        let agents_ctx = ToolContext {
            cancel: ctx.cancel.child_token(),
            ..ctx.clone()
        };
        let concurrency = self.children.kit.limits.max_concurrent.max(1) as usize;
        let mut queued: VecDeque<AgentCall> = VecDeque::new();
        let mut running = FuturesUnordered::new();
        let mut spent = ChildrenSpent::default();
        // `log()` lines show live under the call, where a front end shows output: gathered
        // and passed on once a tick, so a script that logs in a loop makes one event per
        // tick, not one per line.
        let mut unsaid = String::new();
        let mut tick = tokio::time::interval(LOG_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let pass_on = |unsaid: &mut String| {
            if let (false, Some(progress)) = (unsaid.is_empty(), &ctx.session.progress) {
                progress(&ctx.call_id, unsaid);
            }
            unsaid.clear();
        };
        let outcome = loop {
            while running.len() < concurrency
                && let Some(call) = queued.pop_front()
            {
                running.push(self.agent(call, &agents_ctx));
            }
            tokio::select! {
                Some(call) = asked.recv() => queued.push_back(call),
                Some(line) = said.recv() => {
                    unsaid.push_str(&line);
                    unsaid.push('\n');
                }
                _ = tick.tick(), if !unsaid.is_empty() => pass_on(&mut unsaid),
                Some((seq, answer, ended)) = running.next() => {
                    if let Some(ended) = &ended {
                        spent.add(ended);
                    }
                    let _ = reply.send((seq, answer));
                }
                () = ctx.cancel.cancelled(), if !cancelled.load(Ordering::SeqCst) => {
                    cancelled.store(true, Ordering::SeqCst);
                }
                outcome = &mut finished => break outcome,
            }
        };
        while let Ok(line) = said.try_recv() {
            unsaid.push_str(&line);
            unsaid.push('\n');
        }
        pass_on(&mut unsaid);
        // Agents the script never waited for are stopped; what they billed still counts.
        agents_ctx.cancel.cancel();
        while let Some((_, _, ended)) = running.next().await {
            if let Some(ended) = &ended {
                spent.add(ended);
            }
        }
        let outcome = outcome.unwrap_or(Err(WorkflowError::Failed(
            "the workflow engine stopped before the run settled".into(),
        )));
        match outcome {
            Ok(finished) => {
                let plural = if finished.agents == 1 { "" } else { "s" };
                let text = format!(
                    "workflow \"{name}\" completed ({} agent{plural}).\nReturn value:\n{}",
                    finished.agents,
                    bounded(&finished.result)
                );
                Ok(spent.onto_output(ToolOutput::text(text)))
            }
            Err(WorkflowError::Parse(message)) => Err(spent.onto_error(workflow_error(
                "SCRIPT_PARSE",
                format!("workflow script does not parse: {message}"),
            ))),
            Err(error) => Err(spent.onto_error(ToolError::plain(match error {
                WorkflowError::Parse(message) => message,
                WorkflowError::Failed(message) => format!("workflow run failed: {message}"),
                WorkflowError::Cancelled => "workflow run was cancelled (workflow run \
                                             cancelled: workflow signal aborted)"
                    .to_owned(),
                WorkflowError::TimedOut(limit) => format!(
                    "workflow run failed: the run reached its time limit of {} s \
                     (workflows.timeout_ms)",
                    limit.as_secs()
                ),
                WorkflowError::Stalled => "workflow run failed: the script waits for a promise \
                                           that nothing will settle"
                    .to_owned(),
            }))),
        }
    }

    /// One `agent()` call, run as a subagent of the caller: the call's number, its answer for
    /// the script (the text, or the structured value a schema asked for; `null` when the agent
    /// did not complete or could not start), and its run, for the caller's bill and log.
    async fn agent(&self, call: AgentCall, ctx: &ToolContext) -> (u32, Value, Option<EndedChild>) {
        // The engine let through only schemas that compile.
        let schema = (call.schema.as_ref())
            .and_then(|schema| OutputSchema::of(schema, "the workflow's schema for this agent"))
            .map(Arc::new);
        let wants_structure = schema.is_some();
        let label = match &call.phase {
            Some(phase) if !phase.is_empty() => format!("{phase} · {}", call.label),
            _ => call.label.clone(),
        };
        let Ok(ended) = self
            .children
            .run_fresh_child(label, call.prompt, schema, ctx)
            .await
        else {
            return (call.seq, Value::Null, None);
        };
        let answer = match (ended.summary.reason.is_completed(), wants_structure) {
            (false, _) => Value::Null,
            (true, true) => ended.structured.clone().unwrap_or(Value::Null),
            (true, false) => Value::String(ended.summary.text.clone()),
        };
        (call.seq, answer, Some(ended))
    }
}

/// Stops the engine when the call that runs it ends, however it ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The reference's checks of `meta`, every violation in its order; the name when it passes.
fn check_meta(meta: &Value) -> Result<String, ToolError> {
    let mut problems = Vec::new();
    let Some(fields) = meta.as_object() else {
        return Err(workflow_error(
            "META_INVALID",
            "invalid meta: meta must be an object",
        ));
    };
    for key in fields.keys() {
        if !["name", "description", "whenToUse", "phases"].contains(&key.as_str()) {
            problems.push(format!(
                "meta.{key} is not a recognized field (name/description/whenToUse/phases)"
            ));
        }
    }
    let filled = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    for key in ["name", "description"] {
        if !filled(key) {
            problems.push(format!("meta.{key} must be a non-empty string"));
        }
    }
    if fields.get("whenToUse").is_some_and(|v| !v.is_string()) {
        problems.push("meta.whenToUse must be a string".into());
    }
    match fields.get("phases") {
        None => {}
        Some(Value::Array(phases)) => {
            for (i, phase) in phases.iter().enumerate() {
                let Some(phase) = phase.as_object() else {
                    problems.push(format!("meta.phases[{i}] must be an object"));
                    continue;
                };
                for key in phase.keys() {
                    if !["title", "detail", "provider", "model"].contains(&key.as_str()) {
                        problems.push(format!("meta.phases[{i}].{key} is not a recognized field"));
                    }
                }
                if phase
                    .get("title")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    problems.push(format!("meta.phases[{i}].title must be a non-empty string"));
                }
                for key in ["detail", "provider", "model"] {
                    if phase.get(key).is_some_and(|v| !v.is_string()) {
                        problems.push(format!("meta.phases[{i}].{key} must be a string"));
                    }
                }
            }
        }
        Some(_) => problems.push("meta.phases must be an array".into()),
    }
    if !problems.is_empty() {
        return Err(workflow_error(
            "META_INVALID",
            format!("invalid meta: {}", problems.join("; ")),
        ));
    }
    Ok(fields["name"].as_str().unwrap_or_default().to_owned())
}

/// Whether the script opens with `export const meta`, the reference's saved-file shape.
fn starts_with_meta_export(script: &str) -> bool {
    let mut words = script.split_whitespace();
    words.next() == Some("export")
        && words.next() == Some("const")
        && words
            .next()
            .is_some_and(|w| w == "meta" || w.starts_with("meta=") || w.starts_with("meta:"))
}

fn workflow_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("WorkflowError", code, message)
}

/// The result's JSON within [`MAX_RESULT_CHARS`] UTF-16 units, the cut marked with how much.
fn bounded(json: &str) -> String {
    let units = json.encode_utf16().count();
    if units <= MAX_RESULT_CHARS {
        return json.to_owned();
    }
    format!(
        "{}\n… [truncated: {} more characters]",
        utf16_head(json, MAX_RESULT_CHARS),
        units - MAX_RESULT_CHARS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_checked_with_every_violation_in_the_reference_order() {
        let error = check_meta(&serde_json::json!({
            "name": "",
            "colour": "red",
            "phases": [{"title": "", "size": 1}, 3],
        }))
        .unwrap_err();
        assert_eq!(
            error.message,
            "invalid meta: meta.colour is not a recognized field \
             (name/description/whenToUse/phases); meta.name must be a non-empty string; \
             meta.description must be a non-empty string; meta.phases[0].size is not a \
             recognized field; meta.phases[0].title must be a non-empty string; \
             meta.phases[1] must be an object"
        );
        assert_eq!(error.code(), Some("META_INVALID"));
        assert_eq!(
            check_meta(&serde_json::json!({"name": "n", "description": "d"})).unwrap(),
            "n"
        );
    }

    #[test]
    fn a_meta_export_in_the_script_is_refused() {
        assert!(starts_with_meta_export(
            "  export const meta = {name: 'x'};"
        ));
        assert!(!starts_with_meta_export("const meta = 1;"));
    }
}
