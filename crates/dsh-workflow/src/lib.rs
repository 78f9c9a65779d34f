//! Workflows: a JavaScript script that orchestrates agents, run in QuickJS.
//!
//! The script is the body of an async function: it may `await` and `return` at its top level,
//! and its return value, which must be plain JSON data, is the workflow's result. It sees the
//! ECMAScript built-ins and the workflow API only: `agent(prompt, opts?)` (a child agent's
//! answer: its text, or the value its `schema` asked for; `null` when it failed),
//! `parallel(thunks)`, `pipeline(items, ...stages)`, `phase(title)`, `log(message)` and `args`.
//! There is no file, process, network or timer access: QuickJS has none without its `std`
//! and `os` modules, which are not built in. Memory, the stack, wall time and the number of
//! agents are bounded ([`Limits`]).
//!
//! The engine only asks for agents: whoever runs a workflow ([`run`]) starts them and answers
//! through [`Host`], so this crate knows nothing of the agent. A run is blocking and belongs
//! on a thread of its own; the caller stays async.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rquickjs::promise::PromiseState;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Persistent, Promise, Runtime, Value,
};

/// The bounds of one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most memory the script's heap may take.
    pub memory_bytes: usize,
    /// How long the whole run may take, agents included.
    pub time: Duration,
    /// The most `agent()` calls a run may make (a runaway-loop backstop).
    pub max_agents: u32,
    /// The most items one `parallel()` or `pipeline()` call may take.
    pub max_items: usize,
    /// What `log()` may say in one run, in lines and in bytes (each line cut at
    /// [`LOG_LINE_CHARS`]); past either, one [`LOG_CUT`] line and nothing more.
    pub log_lines: u32,
    pub log_bytes: usize,
}

/// The most characters of one `log()` line that are passed on.
pub const LOG_LINE_CHARS: usize = 4096;

/// The most characters of an agent's label, and of its phase, that are passed on.
pub const LABEL_CHARS: usize = 200;

/// The most UTF-16 units (what JavaScript's `length` counts) a prompt may have: prompts leave
/// the engine's bounded heap for the host's.
pub const MAX_PROMPT_UNITS: usize = 262_144;

/// The line a run's log ends with when it said more than its budget.
pub const LOG_CUT: &str = "[log output cut: this workflow logged more than its limit; \
                           later lines are not shown]";

/// How many log lines may wait for the host before more are dropped (and counted).
pub const LOG_QUEUE: usize = 256;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            time: Duration::from_secs(3600),
            max_agents: 1000,
            max_items: 4096,
            log_lines: 2000,
            log_bytes: 1 << 20,
        }
    }
}

/// An agent the script asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCall {
    /// Its number in the run, from 1.
    pub seq: u32,
    pub prompt: String,
    /// What to show it as: the script's label, else the prompt's first line, shortened; at
    /// most [`LABEL_CHARS`] characters.
    pub label: String,
    /// The phase it belongs to, when the script named one; at most [`LABEL_CHARS`].
    pub phase: Option<String>,
    /// The JSON Schema its answer must match, when the script gave one.
    pub schema: Option<serde_json::Value>,
}

/// What runs a workflow's agents: the calls arrive on `calls`; each answer goes back on
/// `answers` with its call's `seq` (the text, the structured value, or `null` when the agent
/// failed). `cancelled` stops the run at its next step.
pub struct Host {
    pub calls: tokio::sync::mpsc::UnboundedSender<AgentCall>,
    pub answers: Receiver<(u32, serde_json::Value)>,
    /// What the script says with `log(message)`, for whoever watches the run: a bounded
    /// queue, so a script that logs in a loop cannot fill the host's memory; a line that finds
    /// it full is dropped and counted ([`Finished::logs_dropped`]).
    pub logs: tokio::sync::mpsc::Sender<String>,
    pub cancelled: Arc<AtomicBool>,
    /// Whether a schema an `agent()` call gives can hold an answer; why not, when it cannot
    /// (the call then throws `UNSUPPORTED_SCHEMA` before any agent starts).
    pub check_schema: SchemaCheck,
}

/// How a host says whether a schema can hold an answer ([`Host::check_schema`]).
pub type SchemaCheck =
    Arc<dyn Fn(&serde_json::Value) -> Result<(), UnsupportedSchema> + Send + Sync>;

/// A schema the host cannot hold an answer to: why, as the script's `UNSUPPORTED_SCHEMA`
/// error says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedSchema(pub String);

impl std::fmt::Display for UnsupportedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnsupportedSchema {}

/// How a run ended, other than with a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowError {
    /// The script does not parse: the engine's message (`SyntaxError: ...`).
    Parse(String),
    /// The script threw, or its result is not JSON data: what it threw, rendered.
    Failed(String),
    /// The run was cancelled.
    Cancelled,
    /// The run took longer than its time limit.
    TimedOut(Duration),
    /// The script waits for something that will never come (a promise nothing settles).
    Stalled,
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The result as two-space JSON (`null` for none).
    pub result: String,
    /// How many agents the script asked for.
    pub agents: u32,
    /// How many `log()` lines were not passed on (past the budget, or the queue full).
    pub logs_dropped: u64,
}

/// The prelude that installs the API, in our words.
const PRELUDE: &str = include_str!("prelude.js");

/// The script as an async function, parsed and not run (the `AsyncFunction` constructor
/// takes a body that cannot close its own function early); the engine's message, with where,
/// when it does not parse.
fn parse<'js>(ctx: &Ctx<'js>, script: &str) -> Result<Function<'js>, WorkflowError> {
    let failed = |e: rquickjs::Error| WorkflowError::Failed(e.to_string());
    let constructor: Function = ctx
        .eval("Object.getPrototypeOf(async function () {}).constructor")
        .map_err(failed)?;
    let made: rquickjs::Result<Function> = constructor.call((script,));
    match made.catch(ctx) {
        Ok(function) => Ok(function),
        Err(CaughtError::Exception(exception)) => {
            let mut message = headline(&exception, "SyntaxError");
            if let Some((line, column)) = exception.stack().as_deref().and_then(position) {
                let line = line.saturating_sub(BODY_LINE - 1).max(1);
                message.push_str(&format!(" (line {line}, column {column})"));
            }
            Err(WorkflowError::Parse(message))
        }
        Err(error) => Err(WorkflowError::Failed(rendered(ctx, error))),
    }
}

/// The line of the function constructor's source where the script's body starts: the
/// engine counts from there, so its line numbers are this much past the script's own.
const BODY_LINE: u32 = 3;

/// A rendered failure with its stack said in the script's terms: each frame of the script
/// (`<input>:<line>:<column>`) with the script's own line number, and the prelude's frames
/// (`eval_script`), which are dsh's and not the script's, left out.
fn script_stack(rendered: &str) -> String {
    let mut out = Vec::new();
    for line in rendered.lines() {
        let frame = line.trim_start().starts_with("at ");
        if frame && line.contains("(eval_script:") {
            continue;
        }
        out.push(match line.split_once("<input>:") {
            Some((before, after)) if frame => {
                let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
                match digits.parse::<u32>() {
                    Ok(n) => format!(
                        "{before}<input>:{}{}",
                        n.saturating_sub(BODY_LINE - 1).max(1),
                        &after[digits.len()..]
                    ),
                    Err(_) => line.to_owned(),
                }
            }
            _ => line.to_owned(),
        });
    }
    out.join("\n")
}

/// The line and column of a stack's first `<name>:<line>:<column>` frame.
fn position(stack: &str) -> Option<(u32, u32)> {
    let frame = stack.lines().find(|line| line.contains(':'))?;
    let at = frame.find(':')? + 1;
    let stack = frame;
    let mut numbers = stack[at..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<u32>().ok());
    Some((numbers.next()??, numbers.next()??))
}

/// Runs `script` (the body of an async function; `name` is the workflow's, for its stack
/// traces) with `args` as the global `args`, asking `host` for its agents. Blocking.
pub fn run(
    name: &str,
    script: &str,
    args: Option<&serde_json::Value>,
    limits: Limits,
    host: Host,
) -> Result<Finished, WorkflowError> {
    let failed = |e: rquickjs::Error| WorkflowError::Failed(e.to_string());
    let runtime = Runtime::new().map_err(failed)?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(1 << 20);
    let deadline = Instant::now() + limits.time;
    let cancelled = host.cancelled.clone();
    let stop = cancelled.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        Instant::now() > deadline || stop.load(Ordering::SeqCst)
    })));
    let context = Context::full(&runtime).map_err(failed)?;
    let waiting: Waiting = Rc::default();
    // Declared after the engine, so dropped before it, on every way out (a panic included):
    // a resolver still saved would outlive the engine's heap.
    let _release = Release(waiting.clone());
    let started = Rc::new(RefCell::new(0u32));
    let logged: Rc<RefCell<Logged>> = Rc::default();
    let main = context.with(
        |ctx| -> Result<Persistent<Promise<'static>>, WorkflowError> {
            let globals = ctx.globals();
            let fail = |e: rquickjs::Error| WorkflowError::Failed(e.to_string());
            let args_value: Value = match args {
                Some(value) => ctx.json_parse(value.to_string()).map_err(fail)?,
                None => Value::new_undefined(ctx.clone()),
            };
            globals.set("args", args_value).map_err(fail)?;
            globals.set("__agentCap", limits.max_agents).map_err(fail)?;
            globals
                .set("__maxPrompt", MAX_PROMPT_UNITS as u32)
                .map_err(fail)?;
            globals
                .set("__itemCap", limits.max_items as u32)
                .map_err(fail)?;
            let host_agent = host_agent(
                &ctx,
                host.calls.clone(),
                host.check_schema.clone(),
                waiting.clone(),
                started.clone(),
                limits.max_agents,
            )
            .map_err(fail)?;
            globals.set("__hostAgent", host_agent).map_err(fail)?;
            let host_log =
                host_log(&ctx, host.logs.clone(), limits, logged.clone()).map_err(fail)?;
            globals.set("__hostLog", host_log).map_err(fail)?;
            let installed: rquickjs::Result<Value> = ctx.eval(PRELUDE);
            installed
                .catch(&ctx)
                .map_err(|e| WorkflowError::Failed(rendered(&ctx, e)))?;
            let body = parse(&ctx, script)?;
            // Its frames in a stack trace name the workflow.
            let rename: rquickjs::Result<Function> =
                ctx.eval("(f, n) => Object.defineProperty(f, 'name', { value: n })");
            rename
                .and_then(|rename| {
                    rename.call::<_, Value>((body.clone(), format!("workflow:{name}")))
                })
                .map_err(fail)?;
            let started: rquickjs::Result<Promise> = body.call(());
            let promise = started
                .catch(&ctx)
                .map_err(|e| WorkflowError::Failed(rendered(&ctx, e)))?;
            Ok(Persistent::save(&ctx, promise))
        },
    );
    // The first slice of the script runs in the eval: it may have been stopped there.
    let main = main.map_err(|error| stopped(deadline, &cancelled, limits).unwrap_or(error))?;
    let outcome = drive(
        &runtime, &context, &main, &waiting, &host, &cancelled, deadline, limits,
    );
    // What the engine still holds goes before the engine does.
    waiting.borrow_mut().clear();
    drop(main);
    let logs_dropped = logged.borrow().dropped;
    outcome.map(|result| Finished {
        result,
        agents: *started.borrow(),
        logs_dropped,
    })
}

/// What a run's `log()` has said so far.
#[derive(Debug, Default)]
struct Logged {
    lines: u32,
    bytes: usize,
    cut: bool,
    dropped: u64,
}

/// The host side of `log()`. Every bound is kept here, outside the script's reach (the
/// prelude's own cut calls `slice`, which a script can replace): each line is cut to
/// [`LOG_LINE_CHARS`], the run's lines and bytes are counted against its budget, and a line
/// that finds the queue full (but for the place kept for the cut line) is dropped rather than
/// waited for.
fn host_log<'js>(
    ctx: &Ctx<'js>,
    logs: tokio::sync::mpsc::Sender<String>,
    limits: Limits,
    logged: Rc<RefCell<Logged>>,
) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), move |message: rquickjs::String<'js>| {
        let mut logged = logged.borrow_mut();
        if logged.cut {
            logged.dropped += 1;
            return;
        }
        let Ok(message) = message.to_string() else {
            logged.dropped += 1;
            return;
        };
        let line: String = message.chars().take(LOG_LINE_CHARS).collect();
        logged.lines += 1;
        logged.bytes += line.len();
        let line = if logged.lines > limits.log_lines || logged.bytes > limits.log_bytes {
            logged.cut = true;
            logged.dropped += 1;
            LOG_CUT.to_owned()
        } else {
            line
        };
        // The queue's last place is kept for the cut line, which is sent once at most: the
        // host always learns that the log was cut, however slowly it reads.
        let room = logged.cut || logs.capacity() > 1;
        if !room || logs.try_send(line).is_err() {
            logged.dropped += 1;
        }
    })
}

/// Runs the script's jobs, and hands it each answer as it comes, until its promise settles.
#[allow(clippy::too_many_arguments)]
fn drive(
    runtime: &Runtime,
    context: &Context,
    main: &Persistent<Promise<'static>>,
    waiting: &RefCell<HashMap<u32, Persistent<Function<'static>>>>,
    host: &Host,
    cancelled: &AtomicBool,
    deadline: Instant,
    limits: Limits,
) -> Result<String, WorkflowError> {
    loop {
        // Run the script as far as it goes.
        loop {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                // A job's exception rejects the promise that awaited it; the state says.
                Err(_) => {}
            }
        }
        if let Some(stop) = stopped(deadline, cancelled, limits) {
            return Err(stop);
        }
        let settled = context.with(|ctx| -> Option<Result<String, WorkflowError>> {
            let promise = main.clone().restore(&ctx).ok()?;
            match promise.state() {
                PromiseState::Pending => None,
                PromiseState::Resolved => Some(result_text(&ctx, &promise)),
                PromiseState::Rejected => {
                    let reason: rquickjs::Result<Value> = promise.result()?;
                    Some(Err(WorkflowError::Failed(match reason.catch(&ctx) {
                        Ok(value) => render_value(&ctx, value),
                        Err(error) => rendered(&ctx, error),
                    })))
                }
            }
        });
        if let Some(outcome) = settled {
            return outcome;
        }
        if waiting.borrow().is_empty() {
            return Err(WorkflowError::Stalled);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let (seq, answer) = match host
            .answers
            .recv_timeout(left.min(Duration::from_millis(200)))
        {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return Err(WorkflowError::Cancelled),
        };
        let Some(resolve) = waiting.borrow_mut().remove(&seq) else {
            continue;
        };
        context.with(|ctx| -> Result<(), WorkflowError> {
            let fail = |e: rquickjs::Error| WorkflowError::Failed(e.to_string());
            let resolve = resolve.restore(&ctx).map_err(fail)?;
            let value: Value = ctx.json_parse(answer.to_string()).map_err(fail)?;
            resolve.call::<_, ()>((value,)).map_err(fail)
        })?;
    }
}

/// Why the engine stopped the script, when it did: its time ran out or the run was cancelled
/// (the script then sees an uncatchable `interrupted`, which is not its failure).
fn stopped(deadline: Instant, cancelled: &AtomicBool, limits: Limits) -> Option<WorkflowError> {
    if cancelled.load(Ordering::SeqCst) {
        return Some(WorkflowError::Cancelled);
    }
    (Instant::now() > deadline).then_some(WorkflowError::TimedOut(limits.time))
}

/// Clears the saved resolvers when dropped.
struct Release(Waiting);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.borrow_mut().clear();
    }
}

/// What was started so far, and the resolvers of the answers still awaited.
type Waiting = Rc<RefCell<HashMap<u32, Persistent<Function<'static>>>>>;

/// The host side of `agent()`: takes a number for the call (or `null` past the cap), sends the
/// call to the host, and returns the promise its answer resolves; or, for a call it refuses,
/// the error code and message the prelude throws, as an array. Every bound on what a call
/// carries out of the script is kept here, since the prelude runs in the script's world,
/// where the built-ins it would cut with (`slice`, `split`) can be replaced: the label and
/// the phase are cut to [`LABEL_CHARS`], and a prompt over [`MAX_PROMPT_UNITS`] is refused.
fn host_agent<'js>(
    ctx: &Ctx<'js>,
    calls: tokio::sync::mpsc::UnboundedSender<AgentCall>,
    check_schema: SchemaCheck,
    waiting: Waiting,
    started: Rc<RefCell<u32>>,
    cap: u32,
) -> rquickjs::Result<Function<'js>> {
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              prompt: String,
              label: String,
              phase: Option<String>,
              schema: Option<String>|
              -> rquickjs::Result<Value<'js>> {
            let units = prompt.encode_utf16().count();
            if units > MAX_PROMPT_UNITS {
                return refusal(
                    &ctx,
                    "INVALID_ARGUMENT",
                    format!(
                        "agent() prompt has {units} characters, over the {MAX_PROMPT_UNITS} a \
                         prompt may have: put the bulk in a file the agent reads"
                    ),
                );
            }
            let unsupported = |why: String| {
                refusal(
                    &ctx,
                    "UNSUPPORTED_SCHEMA",
                    format!(
                        "agent() schema is outside the supported subset \u{2014} unsupported \
                         JSON schema: {why}"
                    ),
                )
            };
            let schema = match schema.map(|text| serde_json::from_str(&text)) {
                None => None,
                Some(Ok(schema)) => match check_schema(&schema) {
                    Ok(()) => Some(schema),
                    Err(why) => return unsupported(why.0),
                },
                Some(Err(e)) => return unsupported(e.to_string()),
            };
            let cut = |text: String| text.chars().take(LABEL_CHARS).collect::<String>();
            let mut count = started.borrow_mut();
            if *count >= cap {
                return Ok(Value::new_null(ctx));
            }
            *count += 1;
            let seq = *count;
            let (promise, resolve, _reject) = Promise::new(&ctx)?;
            waiting
                .borrow_mut()
                .insert(seq, Persistent::save(&ctx, resolve));
            let _ = calls.send(AgentCall {
                seq,
                prompt,
                label: cut(label),
                phase: phase.map(cut),
                schema,
            });
            Ok(promise.into_value())
        },
    )
}

/// `[code, message]`: what the prelude throws for a call [`host_agent`] refused.
fn refusal<'js>(ctx: &Ctx<'js>, code: &str, message: String) -> rquickjs::Result<Value<'js>> {
    let array = rquickjs::Array::new(ctx.clone())?;
    array.set(0, code)?;
    array.set(1, message)?;
    Ok(array.into_value())
}

/// The settled result as two-space JSON, or why it is not JSON data.
fn result_text<'js>(ctx: &Ctx<'js>, promise: &Promise<'js>) -> Result<String, WorkflowError> {
    let value: Value = promise
        .result::<Value>()
        .unwrap_or(Ok(Value::new_undefined(ctx.clone())))
        .map_err(|e| WorkflowError::Failed(e.to_string()))?;
    let to_text: rquickjs::Result<Function> = ctx.globals().get("__result");
    let text: rquickjs::Result<String> = to_text.and_then(|f| f.call((value,)));
    let text = text
        .catch(ctx)
        .map_err(|error| WorkflowError::Failed(rendered(ctx, error)))?;
    // The prelude's check and `JSON.stringify` run in the script's world, where a script can
    // replace the built-ins they call: whatever text came back must be JSON data here too.
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(_) => Ok(text),
        Err(e) => Err(WorkflowError::Failed(format!(
            "WorkflowError: the workflow's return value is not plain JSON data \u{2014} it \
             serialized to text that is not JSON ({e}). Return only JSON-serializable \
             objects/arrays/scalars."
        ))),
    }
}

/// A caught error as the reference's text: the thrown value rendered by the prelude.
fn rendered<'js>(ctx: &Ctx<'js>, error: CaughtError<'js>) -> String {
    match error {
        CaughtError::Exception(exception) => render_value(ctx, exception.into_value()),
        CaughtError::Value(value) => render_value(ctx, value),
        CaughtError::Error(error) => error.to_string(),
    }
}

fn render_value<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> String {
    let render: rquickjs::Result<Function> = ctx.globals().get("__render");
    match render.and_then(|f| f.call::<_, String>((value.clone(),))) {
        Ok(text) => script_stack(&text),
        // Before the prelude (a parse error): the exception's name and message.
        Err(_) => match value.as_exception() {
            Some(exception) => headline(exception, "Error"),
            None => "[unrenderable thrown value]".into(),
        },
    }
}

/// An exception's `<name>: <message>`, `name` when it has none.
fn headline(exception: &rquickjs::Exception<'_>, name: &str) -> String {
    format!(
        "{}: {}",
        exception
            .get::<_, String>("name")
            .unwrap_or_else(|_| name.to_owned()),
        exception.message().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests;
