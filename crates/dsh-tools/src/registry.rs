use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use dsh_protocol::{ErrorInfo, ToolOutputPart, ToolSpec};
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::{Arguments, Tool, ToolContext, ToolError, ToolOutput};

/// The result of one call, ready to be sent back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub parts: Vec<ToolOutputPart>,
    pub is_error: bool,
    pub error: Option<ErrorInfo>,
    /// What the call asks of the agent beyond its result.
    pub effect: Option<crate::ToolEffect>,
    /// What the call billed, for the step's usage.
    pub usage: dsh_protocol::Usage,
    /// For a command: how it ended.
    pub command: Option<dsh_protocol::CommandOutcome>,
}

impl ToolOutcome {
    pub fn success(output: ToolOutput) -> Self {
        ToolOutcome {
            parts: output.parts,
            is_error: false,
            error: None,
            effect: output.effect,
            usage: output.usage,
            command: output.command,
        }
    }

    pub fn failure(error: ToolError) -> Self {
        ToolOutcome {
            parts: vec![ToolOutputPart::Text {
                text: error.model_text(),
            }],
            is_error: true,
            error: error.info,
            effect: error.effect.map(|effect| *effect),
            usage: error.usage,
            command: None,
        }
    }

    /// The text of all parts, as the model reads it.
    pub fn text(&self) -> String {
        self.parts.iter().map(ToolOutputPart::text).collect()
    }
}

/// The tools of a session.
#[derive(Default)]
pub struct ToolRegistry {
    /// Sorted by name: the order the schemas are sent in, stable across runs for prompt caching.
    tools: Vec<Entry>,
    /// Where groups that arrive during the session come from.
    joins: Option<UnboundedReceiver<ToolGroup>>,
    /// The listing of each group in place.
    listings: std::collections::HashMap<String, u64>,
    /// Which names may be offered; a tool it withholds is never put in place.
    filter: crate::ToolFilter,
    /// What front ends look calls up in: kept equal to `tools` after every change.
    catalog: crate::ToolCatalog,
    /// Tools never offered that still answer a call by name ([`ToolRegistry::answer_unoffered`]).
    unoffered: Vec<Entry>,
}

struct Entry {
    tool: Arc<dyn Tool>,
    /// The group that brought it, if any.
    group: Option<String>,
}

/// Tools that arrive, or change, while the session runs: an MCP server's tools once it is
/// ready, and again whenever it says its list changed. A group replaces every tool the same
/// group brought before.
pub struct ToolGroup {
    pub name: String,
    /// Which listing of the group this is, counted up by whoever lists it: a group older than
    /// the one in place (a slow listing overtaken by a newer one) is dropped.
    pub listing: u64,
    pub tools: Vec<Box<dyn Tool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The file tools of a session. `confining`: whether mutations are fenced by the sandbox
    /// (the escalation arguments are then offered).
    pub fn with_file_tools(confining: bool) -> Self {
        let mut registry = Self::new();
        registry.register(Box::new(crate::Read::default()));
        registry.register(Box::new(crate::ReadImage::default()));
        registry.register(Box::new(crate::Write::new(confining)));
        registry.register(Box::new(crate::Edit::new(confining)));
        registry.register(Box::new(crate::Glob::default()));
        registry.register(Box::new(crate::Grep::default()));
        registry
    }

    /// Adds `bash` and the job tools. `confining`: whether commands run in a sandbox (the
    /// escalation arguments are then offered).
    pub fn add_shell_tools(&mut self, confining: bool) {
        self.register(Box::new(crate::Bash::new(confining)));
        self.register(Box::new(crate::JobOutput::default()));
        self.register(Box::new(crate::JobList::default()));
        self.register(Box::new(crate::JobKill::default()));
    }

    /// Adds a tool; a tool of the same name is replaced.
    pub fn register(&mut self, tool: Box<dyn Tool>) {
        self.insert(tool, None);
        self.publish();
    }

    /// Keeps `tool` out of the schemas, the prompt and the catalog, yet answers a call to it:
    /// for a tool the reference offers where it can only refuse (`exit_plan_mode` outside plan
    /// mode, `skill` without skills). Offering it would cost every request its schema and
    /// invite calls; a model that calls it anyway reads the tool's own refusal, which says
    /// why, instead of `unknown tool`. A tool of the same name that is offered wins, and the
    /// tool lists withhold it like any other.
    pub fn answer_unoffered(&mut self, tool: Box<dyn Tool>) {
        self.unoffered.push(Entry {
            tool: Arc::from(tool),
            group: None,
        });
    }

    /// What is wrong with how its tools describe themselves ([`crate::description_problems`]).
    pub fn description_problems(&self) -> Vec<String> {
        (self.tools.iter())
            .flat_map(|e| crate::description_problems(e.tool.as_ref()))
            .collect()
    }

    /// The run's tools as front ends look them up; it follows every later change.
    pub fn catalog(&self) -> crate::ToolCatalog {
        self.catalog.clone()
    }

    fn publish(&self) {
        let tools: Vec<Arc<dyn Tool>> = self.tools.iter().map(|e| e.tool.clone()).collect();
        self.catalog.publish(&tools);
    }

    /// The lists that decide which tools this registry takes.
    pub fn filter(&self) -> &crate::ToolFilter {
        &self.filter
    }

    /// Withholds the tools `filter` does not allow, now and whenever tools arrive.
    pub fn restrict(&mut self, filter: crate::ToolFilter) {
        self.tools.retain(|e| filter.allows(e.tool.name()));
        self.filter = filter;
        self.publish();
    }

    fn insert(&mut self, tool: Box<dyn Tool>, group: Option<String>) {
        if !self.filter.allows(tool.name()) {
            return;
        }
        self.tools.retain(|e| e.tool.name() != tool.name());
        self.tools.push(Entry {
            tool: Arc::from(tool),
            group,
        });
        self.tools.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
    }

    /// Puts a group's tools in place of the ones it brought before, unless the group in place
    /// is a newer listing.
    pub fn set_group(&mut self, group: ToolGroup) {
        match self.listings.get(&group.name) {
            Some(&current) if current > group.listing => return,
            _ => {
                self.listings.insert(group.name.clone(), group.listing);
            }
        }
        self.tools
            .retain(|e| e.group.as_deref() != Some(group.name.as_str()));
        for tool in group.tools {
            self.insert(tool, Some(group.name.clone()));
        }
        self.publish();
    }

    /// Takes groups from `joins` whenever [`ToolRegistry::take_joins`] is called.
    pub fn follow(&mut self, joins: UnboundedReceiver<ToolGroup>) {
        self.joins = Some(joins);
    }

    /// Puts in place the groups that arrived since the last call; whether anything did.
    pub fn take_joins(&mut self) -> bool {
        let mut arrived = Vec::new();
        if let Some(joins) = &mut self.joins {
            while let Ok(group) = joins.try_recv() {
                arrived.push(group);
            }
        }
        let changed = !arrived.is_empty();
        for group in arrived {
            self.set_group(group);
        }
        changed
    }

    /// The schemas sent to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|Entry { tool, .. }| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters().json_schema().clone(),
            })
            .collect()
    }

    /// The system-prompt advice of every tool that has some, in tool order.
    pub fn guidance(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.iter().filter_map(|e| e.tool.guidance())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.iter().map(|e| e.tool.name())
    }

    /// Looks a call's tool up and parses and checks its arguments, once: what the agent then
    /// asks of the call (may it run in parallel, which path does it touch) and running it use
    /// the same parsed arguments.
    pub fn prepare(&self, name: &str, arguments: &str) -> PreparedCall {
        let found = (self.tools.iter())
            .chain(
                self.unoffered
                    .iter()
                    .filter(|e| self.filter.allows(e.tool.name())),
            )
            .find(|e| e.tool.name() == name);
        let Some(tool) = found else {
            return PreparedCall {
                name: name.to_owned(),
                json: parse_arguments(arguments).1,
                checked: Err(ToolError::coded(
                    "ToolNotFoundError",
                    "UNKNOWN_TOOL",
                    format!("unknown tool \"{name}\""),
                )),
                hook_names: &[],
            };
        };
        let (value, json) = parse_arguments(arguments);
        PreparedCall {
            name: name.to_owned(),
            json,
            hook_names: tool.tool.facts().hook_names,
            checked: tool
                .tool
                .parameters()
                .validate(value)
                .map(|args| (tool.tool.clone(), args)),
        }
    }

    /// Runs one call. Every failure, from an unknown tool to a panic inside one, becomes an
    /// error result.
    pub async fn execute(&self, name: &str, arguments: &str, ctx: &ToolContext) -> ToolOutcome {
        self.prepare(name, arguments).run(ctx).await
    }
}

/// One call whose tool was looked up and whose arguments were parsed and checked; an unknown
/// tool or bad arguments are kept as the error the call answers with.
pub struct PreparedCall {
    name: String,
    /// Whether the argument text is whole JSON (an answer cut off mid-call leaves it torn, or
    /// empty when it was cut right after the tool's name).
    json: bool,
    checked: Result<(Arc<dyn Tool>, Arguments), ToolError>,
    hook_names: &'static [&'static str],
}

impl PreparedCall {
    /// Whether it may run next to other parallel-safe calls: a known tool that says so, with
    /// valid arguments.
    pub fn parallel_safe(&self) -> bool {
        self.checked
            .as_ref()
            .is_ok_and(|(tool, _)| tool.parallel_safe())
    }

    /// Whether running it cannot change a file: its tool only reads ([`ToolFacts::read_only`]),
    /// or it fails without running (an unknown tool, bad arguments). The agent checkpoints
    /// the workspace only before a call that can.
    ///
    /// [`ToolFacts::read_only`]: crate::ToolFacts::read_only
    pub fn changes_no_file(&self) -> bool {
        self.checked
            .as_ref()
            .map_or(true, |(tool, _)| tool.facts().read_only)
    }

    /// Whether its argument text is whole JSON: not torn, not empty (running the call still
    /// reads empty text as `{}`).
    pub fn arguments_are_json(&self) -> bool {
        self.json
    }

    /// Its tool's names in other agents' hook vocabularies (also when its arguments are
    /// wrong: a hook may want to see that call); none for an unknown tool.
    pub fn hook_names(&self) -> &'static [&'static str] {
        self.hook_names
    }

    /// Whether Auto review must look at it before it runs ([`ToolFacts::auto_reviewed`]): an
    /// unknown tool or bad arguments fail without running, so there is nothing to review.
    ///
    /// [`ToolFacts::auto_reviewed`]: crate::ToolFacts::auto_reviewed
    pub fn auto_reviewed(&self) -> bool {
        self.checked
            .as_ref()
            .is_ok_and(|(tool, _)| tool.facts().auto_reviewed())
    }

    /// Its arguments as the call will run with them, encoded again from what was parsed
    /// (where the model's text repeats a key, the value that runs); `None` when they were
    /// not valid.
    pub fn canonical_arguments(&self) -> Option<String> {
        let (_, args) = self.checked.as_ref().ok()?;
        serde_json::to_string(args.as_map()).ok()
    }

    /// Whether it asks to run outside the session's sandbox (`sandbox_permissions`): the
    /// agent checkpoints the workspace first.
    pub fn asks_escalation(&self) -> bool {
        self.checked
            .as_ref()
            .is_ok_and(|(_, args)| args.str(crate::mutate::ESCALATION_ARG).is_some())
    }

    /// What the command rules look at ([`dsh_sandbox::rules`]): the command line of a tool
    /// that runs one, the file or folder of a tool that works on one (its working folder when
    /// the call names none), else nothing.
    pub fn rule_target(&self) -> dsh_sandbox::rules::Target<'_> {
        use dsh_sandbox::rules::Target;
        let Ok((tool, args)) = self.checked.as_ref() else {
            return Target::Nothing;
        };
        let facts = tool.facts();
        if facts.kind == crate::ToolKind::Execute && facts.subject == Some("command") {
            return args.str("command").map_or(Target::Nothing, Target::Command);
        }
        if facts.file.is_none() && facts.folder.is_none() {
            return Target::Nothing;
        }
        let named = tool
            .touched_path(args)
            .or_else(|| facts.folder.and_then(|folder| args.str(folder)));
        Target::Path(named.unwrap_or("."))
    }

    /// The file or folder it works on, when its tool works on one.
    pub fn touched_path(&self) -> Option<&str> {
        let (tool, args) = self.checked.as_ref().ok()?;
        tool.touched_path(args)
    }

    /// Runs it. A panic inside the tool, or the run being stopped, is an error result too.
    pub async fn run(self, ctx: &ToolContext) -> ToolOutcome {
        let name = self.name;
        let (tool, args) = match self.checked {
            Ok(checked) => checked,
            Err(error) => return ToolOutcome::failure(error),
        };
        if ctx.session.plan_mode && !tool.plan_safe(&args) {
            return ToolOutcome::failure(ToolError::coded(
                "PlanModeError",
                "PLAN_MODE",
                format!(
                    "{name} is not available in plan mode: it changes files, and plan mode only \
                     explores. Finish the plan and submit it with exit_plan_mode; it is carried \
                     out after the plan is accepted"
                ),
            ));
        }
        let run = AssertUnwindSafe(tool.call(args, ctx)).catch_unwind();
        let result = if tool.stops_itself() {
            run.await
                .unwrap_or_else(|panic| Err(panicked(&name, &panic)))
        } else {
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Err(ToolError::coded("AbortError", "ABORTED", "tool call aborted")),
                result = run => result.unwrap_or_else(|panic| Err(panicked(&name, &panic))),
            }
        };
        let mut outcome = match result {
            Ok(output) => ToolOutcome::success(output),
            Err(error) => ToolOutcome::failure(error),
        };
        // Before the spill: a saved copy must not hold a secret either.
        if let Some(redactor) = &ctx.session.redactor {
            redactor.redact_outcome(&mut outcome);
        }
        // An image result is small text next to an image, which a spill would lose.
        let has_image = outcome
            .parts
            .iter()
            .any(|p| matches!(p, ToolOutputPart::Image { .. }));
        if !tool.bounds_own_output()
            && !has_image
            && let Some(preview) =
                crate::spill::spill_preview(&ctx.session.spill, &name, &outcome.text())
        {
            outcome.parts = vec![ToolOutputPart::Text { text: preview }];
            // A command's result now holds only part of its output.
            if let Some(command) = &mut outcome.command {
                command.truncated = true;
            }
        }
        outcome
    }
}

/// Arguments as the executor reads them, and whether the text was whole JSON: empty text is
/// `{}`; text that is not JSON stays a string, which then fails validation as a non-object.
fn parse_arguments(arguments: &str) -> (Value, bool) {
    match serde_json::from_str(arguments) {
        Ok(value) => (value, true),
        Err(_) if arguments.trim().is_empty() => (Value::Object(Map::new()), false),
        Err(_) => (Value::String(arguments.to_owned()), false),
    }
}

fn panicked(name: &str, panic: &(dyn std::any::Any + Send)) -> ToolError {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no detail".to_owned());
    ToolError::plain(format!(
        "tool \"{name}\" failed unexpectedly (a bug in dsh): {detail}"
    ))
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(join) if join.is_panic() => Err(panicked(name, &join.into_panic())),
        Err(_) => Err(ToolError::coded(
            "AbortError",
            "ABORTED",
            "tool call aborted",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Read, Tool};

    fn ctx(dir: &std::path::Path) -> ToolContext {
        crate::testing::context(dir)
    }

    fn registry() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry.register(Box::new(Read::default()));
        registry
    }

    #[tokio::test]
    async fn unknown_tools_and_bad_arguments_are_error_results() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry();
        let unknown = registry.execute("Read", "{}", &ctx(dir.path())).await;
        assert_eq!(unknown.text(), "Error: unknown tool \"Read\"");
        assert_eq!(unknown.error.unwrap().code, "UNKNOWN_TOOL");
        let bad = registry
            .execute("read", "{not json", &ctx(dir.path()))
            .await;
        assert_eq!(
            bad.text(),
            "Error: invalid arguments: \"arguments\" must be an object"
        );
        let empty = registry.execute("read", "", &ctx(dir.path())).await;
        assert_eq!(
            empty.text(),
            "Error: invalid arguments: missing required property \"file_path\""
        );
    }

    #[tokio::test]
    async fn an_unoffered_tool_answers_by_name_but_is_never_offered() {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = registry();
        registry.answer_unoffered(Box::new(crate::ExitPlanMode::default()));
        assert_eq!(registry.names().collect::<Vec<_>>(), ["read"]);
        assert_eq!(registry.specs().len(), 1);
        let refused = registry
            .execute("exit_plan_mode", r##"{"plan":"# Plan"}"##, &ctx(dir.path()))
            .await;
        assert_eq!(
            refused.text(),
            "Error: exit_plan_mode is only available in plan mode"
        );
        // The tool lists withhold it like any offered tool.
        registry.restrict(crate::ToolFilter {
            allow: None,
            deny: vec!["exit_plan_mode".into()],
        });
        let withheld = registry
            .execute("exit_plan_mode", r##"{"plan":"# Plan"}"##, &ctx(dir.path()))
            .await;
        assert_eq!(withheld.text(), "Error: unknown tool \"exit_plan_mode\"");
    }

    #[tokio::test]
    async fn a_cancelled_call_reports_the_abort() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let context = ctx(dir.path());
        context.cancel.cancel();
        let outcome = registry()
            .execute("read", r#"{"file_path":"a"}"#, &context)
            .await;
        assert_eq!(outcome.text(), "Error: tool call aborted");
    }

    #[test]
    fn a_group_replaces_what_it_brought_before_and_nothing_else() {
        let group = |names: &[&str], listing: u64| ToolGroup {
            name: "g".into(),
            listing,
            tools: names
                .iter()
                .map(|_| Box::new(Read::default()) as Box<dyn Tool>)
                .collect(),
        };
        let mut registry = registry();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        registry.follow(rx);
        assert!(!registry.take_joins());
        tx.send(group(&["read"], 1)).unwrap();
        assert!(registry.take_joins());
        // The group's `read` replaced the built-in one of the same name; an empty group then
        // takes away what it brought.
        assert_eq!(registry.names().collect::<Vec<_>>(), ["read"]);
        tx.send(group(&[], 3)).unwrap();
        assert!(registry.take_joins());
        assert_eq!(registry.names().count(), 0);
        // A listing older than the one in place arrives late: it changes nothing.
        tx.send(group(&["read"], 2)).unwrap();
        registry.take_joins();
        assert_eq!(registry.names().count(), 0);
    }

    #[test]
    fn only_valid_calls_of_parallel_safe_tools_run_in_parallel() {
        let registry = registry();
        let read = registry.prepare("read", r#"{"file_path":"a"}"#);
        assert!(read.parallel_safe());
        assert_eq!(read.touched_path(), Some("a"));
        assert!(
            !registry
                .prepare("read", r#"{"file_path":1}"#)
                .parallel_safe()
        );
        assert!(!registry.prepare("nope", "{}").parallel_safe());
        assert!(!registry.prepare("read", "{\"file_").arguments_are_json());
        assert!(!registry.prepare("read", "").arguments_are_json());
        assert!(registry.prepare("read", "\"a\"").arguments_are_json());
    }
}
