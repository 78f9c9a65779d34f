//! What front ends show of a tool call. Each tool describes itself next to its schema
//! ([`Tool::facts`]); the [`ToolCatalog`] is the one place every front end (the terminal UI,
//! ACP, the MCP server mode, hooks) asks, so adding a tool never means editing a table
//! somewhere else. Facts are plain values (functions where words or a diff need reading from
//! the arguments): a front end holding the catalog keeps no tool, and with it no channel or
//! process of the run, alive.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::Tool;

/// The kind of work a tool does, for a front end's icon and grouping: ACP's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

/// What a call is about in a few words, read from its arguments.
pub type SummaryFn = fn(&Value) -> Option<String>;

/// The change a call asks for, read from its arguments.
pub type ChangeFn = for<'a> fn(&'a Value) -> Option<CallChange<'a>>;

/// What front ends need to know about a tool, whatever the call.
#[derive(Debug, Clone)]
pub struct ToolFacts {
    pub kind: ToolKind,
    /// The verb a call's title starts with: "Read", "Run", "Search the web for".
    pub verb: Cow<'static, str>,
    /// The argument that says in a few words what a call is about: the command, the file,
    /// the pattern. `None` shows the arguments themselves.
    pub subject: Option<&'static str>,
    /// The argument naming the file the call reads or changes: where the agent then looks for
    /// nested instruction files, and where an editor opens.
    pub file: Option<&'static str>,
    /// The argument naming a folder the call works in (a search's root), for an editor.
    pub folder: Option<&'static str>,
    /// The argument naming a line of that file.
    pub line: Option<&'static str>,
    /// The argument holding a document a front end shows whole, as markdown (a submitted
    /// plan), rather than in the call's one-line summary.
    pub document: Option<&'static str>,
    /// Its names in other agents' hook vocabularies (Claude Code's `Bash`, `Read`), so a
    /// hook written for them matches it.
    pub hook_names: &'static [&'static str],
    /// It changes nothing outside the conversation: it may run in plan mode, and a review
    /// that lets reads through lets it through.
    pub read_only: bool,
    /// It changes only the session's own state (its goal), or hands work to subagents whose
    /// own calls are confined and reviewed where they run: Auto review lets its calls
    /// through, though plan mode still keeps them out.
    pub needs_no_review: bool,
    /// Words for a call where the subject argument alone does not say it (an editor's
    /// command and its path); `None` uses the subject.
    pub summary: Option<SummaryFn>,
    /// The change a call asks for, when the tool changes a file: front ends show a diff.
    pub change: Option<ChangeFn>,
}

impl ToolFacts {
    /// A tool of this kind whose title starts with `verb`, with nothing else declared.
    pub fn new(kind: ToolKind, verb: impl Into<Cow<'static, str>>) -> Self {
        ToolFacts {
            kind,
            verb: verb.into(),
            subject: None,
            file: None,
            folder: None,
            line: None,
            document: None,
            hook_names: &[],
            read_only: false,
            needs_no_review: false,
            summary: None,
            change: None,
        }
    }

    /// Whether Auto review looks at its calls before they run: every tool that can change
    /// something a command or a file could see.
    pub fn auto_reviewed(&self) -> bool {
        !self.read_only && !self.needs_no_review
    }

    pub fn summary(mut self, summary: SummaryFn) -> Self {
        self.summary = Some(summary);
        self
    }

    pub fn change(mut self, change: ChangeFn) -> Self {
        self.change = Some(change);
        self
    }

    /// A call is about the argument `name`.
    pub fn subject(mut self, name: &'static str) -> Self {
        self.subject = Some(name);
        self
    }

    /// The argument `name` is the file the call reads or changes (and what it is about).
    pub fn file(mut self, name: &'static str) -> Self {
        self.file = Some(name);
        self.subject.get_or_insert(name);
        self
    }

    pub fn folder(mut self, name: &'static str) -> Self {
        self.folder = Some(name);
        self
    }

    pub fn line(mut self, name: &'static str) -> Self {
        self.line = Some(name);
        self
    }

    pub fn document(mut self, name: &'static str) -> Self {
        self.document = Some(name);
        self
    }

    pub fn hook_names(mut self, names: &'static [&'static str]) -> Self {
        self.hook_names = names;
        self
    }

    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    pub fn needs_no_review(mut self) -> Self {
        self.needs_no_review = true;
        self
    }
}

/// What is wrong with how `tool` describes itself: an argument its facts name that its
/// schema does not have (renamed, say), or no verb to title its calls with. Empty when
/// nothing is.
pub fn description_problems(tool: &dyn Tool) -> Vec<String> {
    let facts = tool.facts();
    let schema = tool.parameters().json_schema();
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    if facts.verb.trim().is_empty() {
        problems.push(format!("{}: no verb for its calls' titles", tool.name()));
    }
    let named = [
        ("subject", facts.subject),
        ("file", facts.file),
        ("folder", facts.folder),
        ("line", facts.line),
        ("document", facts.document),
    ];
    for (role, argument) in named {
        if let Some(argument) = argument
            && !properties.is_some_and(|p| p.contains_key(argument))
        {
            problems.push(format!(
                "{}: its {role} argument \"{argument}\" is not in its schema",
                tool.name()
            ));
        }
    }
    problems
}

/// The text argument `name` of a call, as a summary or change function reads it.
pub fn text_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// The change a file-changing call asks for, read from its own arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallChange<'a> {
    /// The file, as the call names it.
    pub path: &'a str,
    /// The text replaced; `None` when text is only added.
    pub old: Option<&'a str>,
    pub new: &'a str,
    /// Whether `new` is the whole file (a `write`, a `create`), not a piece of it.
    pub whole_file: bool,
}

/// One call as a front end shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallView<'a> {
    pub kind: ToolKind,
    /// "Run cargo test", "Read src/main.rs": the verb and the summary.
    pub title: String,
    /// What the call is about, on one line of at most 200 characters.
    pub summary: String,
    /// The file or folder it works on, as the call names it, and a line in it.
    pub path: Option<&'a str>,
    pub line: Option<u32>,
    /// The change it asks for, when it changes a file.
    pub change: Option<CallChange<'a>>,
    /// A document it carries, to show whole as markdown (a submitted plan).
    pub document: Option<&'a str>,
    pub hook_names: &'static [&'static str],
    pub read_only: bool,
}

/// The longest summary, in characters.
const SUMMARY_CHARS: usize = 200;

impl<'a> CallView<'a> {
    /// A call, with `args`, of a tool with these facts.
    pub fn of(facts: &ToolFacts, args: &'a Value) -> Self {
        let text = |name: Option<&str>| name.and_then(|n| text_arg(args, n));
        let words = facts.summary.and_then(|words| words(args));
        let summary = one_line(words.or_else(|| match facts.subject {
            Some(name) => text(Some(name)).map(str::to_owned),
            None => Some(shown_arguments(args)),
        }));
        let line = (facts.line.and_then(|n| args.get(n)))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        CallView {
            kind: facts.kind,
            title: title(&facts.verb, &summary),
            summary,
            path: text(facts.file).or_else(|| text(facts.folder)),
            line,
            change: facts.change.and_then(|change| change(args)),
            document: text(facts.document),
            hook_names: facts.hook_names,
            read_only: facts.read_only,
        }
    }

    /// A call of a tool this run does not have (a session's earlier MCP tool): its name and
    /// its arguments.
    pub fn unknown(name: &str, args: &'a Value) -> Self {
        let summary = one_line(Some(shown_arguments(args)));
        CallView {
            kind: ToolKind::Other,
            title: title(name, &summary),
            summary,
            path: None,
            line: None,
            change: None,
            document: None,
            hook_names: &[],
            read_only: false,
        }
    }
}

fn title(verb: &str, summary: &str) -> String {
    if summary.is_empty() {
        verb.to_owned()
    } else {
        format!("{verb} {summary}")
    }
}

/// Arguments with nothing to name them by, as JSON; none at all as nothing.
fn shown_arguments(args: &Value) -> String {
    match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn one_line(summary: Option<String>) -> String {
    let summary = summary.unwrap_or_default();
    let first = summary.lines().next().unwrap_or("");
    let mut short: String = first.chars().take(SUMMARY_CHARS).collect();
    if summary.lines().count() > 1 || first.chars().count() > SUMMARY_CHARS {
        short.push_str(" …");
    }
    short
}

/// The tools of a run, as front ends look them up: the registry keeps it current, MCP
/// servers' tools included once they arrive. Cheap to clone; every clone sees the same tools.
#[derive(Clone, Default)]
pub struct ToolCatalog {
    /// Each tool's name and facts.
    facts: Arc<RwLock<Vec<(String, ToolFacts)>>>,
}

impl ToolCatalog {
    /// Replaces the tools looked up.
    pub(crate) fn publish(&self, tools: &[Arc<dyn Tool>]) {
        let facts = (tools.iter())
            .map(|tool| (tool.name().to_owned(), tool.facts()))
            .collect();
        if let Ok(mut slot) = self.facts.write() {
            *slot = facts;
        }
    }

    /// A call of the tool `name` with `args`, as front ends show it.
    pub fn describe<'a>(&self, name: &str, args: &'a Value) -> CallView<'a> {
        match self.facts(name) {
            Some(facts) => CallView::of(&facts, args),
            None => CallView::unknown(name, args),
        }
    }

    /// The facts of the tool `name`, when the run has it.
    pub fn facts(&self, name: &str) -> Option<ToolFacts> {
        let facts = self.facts.read().ok()?;
        (facts.iter())
            .find(|(tool, _)| tool == name)
            .map(|(_, facts)| facts.clone())
    }
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = (self.facts.read().ok())
            .map(|facts| facts.iter().map(|(name, _)| name.clone()).collect())
            .unwrap_or_default();
        f.debug_tuple("ToolCatalog").field(&names).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolRegistry;
    use serde_json::json;

    /// Every tool of this crate, as a run with all of them has them.
    fn every_tool() -> ToolRegistry {
        let mut tools = ToolRegistry::with_file_tools(true);
        tools.add_shell_tools(true);
        tools.register(Box::new(crate::TodoWrite::default()));
        tools.register(Box::new(crate::AskUserQuestion::default()));
        tools.register(Box::new(crate::ExitPlanMode::default()));
        tools.register(Box::new(crate::StrReplaceEditor::default()));
        tools.register(Box::new(crate::skill::SkillTool::new(Vec::new())));
        tools
    }

    #[test]
    fn every_tool_names_arguments_its_schema_has() {
        let tools = every_tool();
        assert_eq!(tools.names().count(), 15);
        assert_eq!(tools.description_problems(), Vec::<String>::new());
    }

    #[test]
    fn a_call_is_titled_by_its_tool() {
        let catalog = every_tool().catalog();
        let command = json!({"command": "cargo test\nand more"});
        let run = catalog.describe("bash", &command);
        assert_eq!(run.kind, ToolKind::Execute);
        assert_eq!(run.title, "Run cargo test …");
        assert_eq!(run.hook_names, ["Bash"]);
        assert!(!run.read_only);
        let args = json!({"file_path": "src/a.rs", "offset": 40});
        let read = catalog.describe("read", &args);
        assert_eq!(
            (read.title.as_str(), read.path, read.line),
            ("Read src/a.rs", Some("src/a.rs"), Some(40))
        );
        assert!(read.read_only);
        let args = json!({"pattern": "fn main", "path": "src"});
        let grep = catalog.describe("grep", &args);
        assert_eq!(
            (grep.title.as_str(), grep.path),
            ("Search fn main", Some("src"))
        );
        let args = json!({"todos": [{"content": "a", "status": "pending"}]});
        assert_eq!(
            catalog.describe("todo_write", &args).title,
            "Update the plan"
        );
        let args = json!({"questions": [{"question": "Which one?"}]});
        assert_eq!(
            catalog.describe("ask_user_question", &args).title,
            "Ask Which one?"
        );
    }

    #[test]
    fn a_change_is_read_from_the_calls_own_arguments() {
        let catalog = every_tool().catalog();
        let args = json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"});
        let change = catalog.describe("edit", &args).change.unwrap();
        assert_eq!(
            (change.path, change.old, change.new),
            ("a.rs", Some("x"), "y")
        );
        let args = json!({"command": "create", "path": "/w/b.rs", "file_text": "all"});
        let view = catalog.describe("str_replace_editor", &args);
        assert_eq!(view.title, "Edit create /w/b.rs");
        assert!(view.change.unwrap().whole_file);
        assert_eq!(
            catalog.describe("read", &json!({"file_path": "a"})).change,
            None
        );
    }

    #[test]
    fn a_tool_the_run_does_not_have_shows_its_name_and_arguments() {
        let catalog = every_tool().catalog();
        let args = json!({"q": 1});
        let view = catalog.describe("mcp__gone__search", &args);
        assert_eq!(view.kind, ToolKind::Other);
        assert_eq!(view.title, r#"mcp__gone__search {"q":1}"#);
        assert_eq!(
            catalog.describe("job_list", &json!({})).title,
            "List the jobs"
        );
    }

    #[test]
    fn the_catalog_follows_the_registry() {
        let mut tools = ToolRegistry::with_file_tools(true);
        let catalog = tools.catalog();
        assert_eq!(catalog.describe("bash", &json!({})).kind, ToolKind::Other);
        tools.add_shell_tools(true);
        assert_eq!(catalog.describe("bash", &json!({})).kind, ToolKind::Execute);
        tools.restrict(crate::ToolFilter {
            allow: None,
            deny: vec!["bash".into()],
        });
        assert!(catalog.facts("bash").is_none());
    }
}
