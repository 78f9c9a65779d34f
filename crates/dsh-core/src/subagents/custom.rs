//! Custom subagents: Markdown files whose front matter names an agent, says when to use it
//! and what it may do, and whose body is its instructions. Read from `$DSH_HOME/agents/`, the
//! workspace's `.claude/agents/` (Claude Code's files, read where their fields mean the same)
//! and `.dsh/agents/`, later folders winning a name. A file that cannot be used is reported
//! with its path and line, and the others still load.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One custom subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CustomAgent {
    pub(crate) name: String,
    pub(crate) description: String,
    /// Only these tools (dsh's names); `None`: the caller's.
    pub(crate) tools: Option<Vec<String>>,
    /// A model of the session's provider; `None`: the session's model.
    pub(crate) model: Option<String>,
    /// Under a read-only sandbox, whatever the caller's mode.
    pub(crate) read_only: bool,
    /// Its instructions: the file's body.
    pub(crate) prompt: String,
    pub(crate) file: PathBuf,
}

/// The custom subagents found, and what was wrong with the files that could not be used.
#[derive(Debug, Default)]
pub(crate) struct CustomAgents {
    pub(crate) agents: Vec<CustomAgent>,
    /// One line per file not loaded or field not followed, naming the file (and line).
    pub(crate) problems: Vec<String>,
    /// The `agent` parameter, made once for every agent of the run ([`parameter`]).
    param: std::sync::OnceLock<Option<dsh_tools::Param>>,
}

impl CustomAgents {
    pub(crate) fn get(&self, name: &str) -> Option<&CustomAgent> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// The names of the custom subagents, for an error that names one the run lacks.
pub(crate) fn names(agents: &CustomAgents) -> String {
    if agents.agents.is_empty() {
        return "there are none (.dsh/agents/NAME.md, $DSH_HOME/agents/NAME.md)".to_owned();
    }
    let names: Vec<&str> = agents.agents.iter().map(|a| a.name.as_str()).collect();
    format!("use one of {}", names.join(", "))
}

/// The tools a child gets: the call's list, narrowed to the custom subagent's when it has
/// one (a name in both, or in the one given).
pub(crate) fn narrowed(
    call: Option<Vec<String>>,
    role: Option<&CustomAgent>,
) -> Option<Vec<String>> {
    let Some(own) = role.and_then(|r| r.tools.clone()) else {
        return call;
    };
    Some(match call {
        None => own,
        Some(call) => call.into_iter().filter(|n| own.contains(n)).collect(),
    })
}

/// The `subagent` tool's `agent` parameter: the custom subagents by name, each with its
/// description; `None` when there are none.
pub(crate) fn parameter(agents: &CustomAgents) -> Option<dsh_tools::Param> {
    agents.param.get_or_init(|| make_parameter(agents)).clone()
}

fn make_parameter(agents: &CustomAgents) -> Option<dsh_tools::Param> {
    if agents.agents.is_empty() {
        return None;
    }
    let mut description = String::from(
        "A custom subagent to hand the task to: it works from its own instructions, with its \
         own tools and model. Leave out for a general subagent. Available:",
    );
    for agent in &agents.agents {
        let said: Vec<&str> = agent.description.split_whitespace().collect();
        description.push_str(&format!("\n- {}: {}", agent.name, said.join(" ")));
    }
    // The schema's names are 'static: made once per run (every agent of it shares the
    // parameter), what is kept is small and bounded by the files.
    let names: Vec<&'static str> = (agents.agents.iter())
        .map(|a| &*Box::leak(a.name.clone().into_boxed_str()))
        .collect();
    Some(
        dsh_tools::Param::optional("agent", dsh_tools::ParamType::String, description)
            .one_of(&names),
    )
}

/// The folders read, lowest first: a later one's agent replaces an earlier one's of the same
/// name.
/// Each with whether its agents' `model` is followed: the workspace's only once you trust
/// it, since another model can cost more ([`dsh_config::trust`]).
pub(crate) fn folders(home: &Path, workspace: &Path, trusted: bool) -> [(PathBuf, bool); 3] {
    [
        (home.join("agents"), true),
        (workspace.join(".claude/agents"), trusted),
        (workspace.join(".dsh/agents"), trusted),
    ]
}

/// Every custom subagent in `folders`.
pub(crate) fn load(folders: &[(PathBuf, bool)]) -> CustomAgents {
    let mut found = CustomAgents::default();
    for (folder, trusted) in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        for file in files {
            match read(&file, &mut found.problems) {
                Ok(mut agent) => {
                    if !trusted && let Some(model) = agent.model.take() {
                        found.problems.push(format!(
                            "custom subagent {}: model \"{model}\" is set aside, as this \
                             folder is not trusted (run `dsh trust` in it); it runs on the \
                             session's model",
                            file.display()
                        ));
                    }
                    found.agents.retain(|a| a.name != agent.name);
                    found.agents.push(agent);
                }
                Err(problem) => found.problems.push(problem),
            }
        }
    }
    found.agents.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The front matter's fields: dsh's, and Claude Code's spellings of the same.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Tools>,
    model: Option<String>,
    #[serde(alias = "permissionMode")]
    permission_mode: Option<String>,
    /// Claude Code's colour for its own interface: nothing to dsh.
    #[allow(dead_code)]
    color: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tools {
    Line(String),
    List(Vec<String>),
}

/// Claude Code's tool names and dsh's for the same tool.
const CLAUDE_TOOLS: &[(&str, &str)] = &[
    ("Bash", "bash"),
    ("BashOutput", "job_output"),
    ("Edit", "edit"),
    ("ExitPlanMode", "exit_plan_mode"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("KillShell", "job_kill"),
    ("LS", "glob"),
    ("MultiEdit", "edit"),
    ("Read", "read"),
    ("Task", "subagent"),
    ("TodoWrite", "todo_write"),
    ("WebFetch", "web_fetch"),
    ("WebSearch", "web_search"),
    ("Write", "write"),
];

/// Claude Code's tools dsh has nothing like: left out of the list, said once.
const CLAUDE_ONLY: &[&str] = &["NotebookEdit", "NotebookRead", "SlashCommand"];

/// Claude Code's model aliases: its own models, which the session's route does not serve.
const CLAUDE_MODELS: &[&str] = &["sonnet", "opus", "haiku"];

/// The agent in `file`, or the line saying why it cannot be used; `notes` gets what of it
/// is not followed.
fn read(file: &Path, notes: &mut Vec<String>) -> Result<CustomAgent, String> {
    let problem = |line: Option<usize>, what: String| {
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        format!(
            "custom subagent {}{at} is not loaded: {what} (see docs/config.md#custom-subagents)",
            file.display()
        )
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| problem(None, format!("it cannot be read: {e}")))?;
    let Some((front, body)) = split_front_matter(&text) else {
        return Err(problem(
            Some(1),
            "it does not start with a front matter between --- lines".into(),
        ));
    };
    // An empty front matter is no fields, not a YAML error.
    let front = if front.trim().is_empty() { "{}" } else { front };
    let front: Front = yaml_serde::from_str(front).map_err(|e| {
        // The front matter starts on the file's second line.
        let line = e.location().map(|l| l.line() + 1);
        problem(line, e.to_string())
    })?;
    let line_of = |key: &str| {
        text.lines()
            .position(|l| l.trim_start().starts_with(&format!("{key}:")))
            .map(|i| i + 1)
    };
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = front.name.or(stem).unwrap_or_default();
    let named = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !named {
        return Err(problem(
            line_of("name"),
            format!("its name \"{name}\" is not letters, digits, - and _"),
        ));
    }
    let Some(description) = front.description.filter(|d| !d.trim().is_empty()) else {
        return Err(problem(
            line_of("description").or(Some(1)),
            "its front matter has no description (what the agent is for, and when to use it)"
                .into(),
        ));
    };
    let tools = match front.tools {
        None => None,
        Some(tools) => {
            Some(tool_names(tools, file, notes).map_err(|e| problem(line_of("tools"), e))?)
        }
    };
    let model = match front.model.as_deref().map(str::trim) {
        None | Some("" | "inherit") => None,
        Some(alias) if CLAUDE_MODELS.contains(&alias) => {
            notes.push(format!(
                "custom subagent {}: model \"{alias}\" is Claude Code's; it runs on the \
                 session's model",
                file.display()
            ));
            None
        }
        Some(reference) if reference.contains('/') => {
            return Err(problem(
                line_of("model"),
                format!(
                    "model \"{reference}\" names a provider; a subagent runs on the session's \
                     provider: give a model name it serves, or inherit"
                ),
            ));
        }
        Some(model) => Some(model.to_owned()),
    };
    let read_only = match front.permission_mode.as_deref().map(str::trim) {
        None | Some("" | "inherit" | "default" | "acceptEdits" | "workspace-write") => false,
        Some("read-only" | "plan") => true,
        Some(wider @ ("bypassPermissions" | "dontAsk" | "danger-full-access")) => {
            notes.push(format!(
                "custom subagent {}: permission mode \"{wider}\" would widen the caller's; it \
                 works under the caller's",
                file.display()
            ));
            false
        }
        Some(other) => {
            return Err(problem(
                line_of("permission_mode").or_else(|| line_of("permissionMode")),
                format!("permission mode \"{other}\" is not read-only or inherit"),
            ));
        }
    };
    Ok(CustomAgent {
        name,
        description: description.trim().to_owned(),
        tools,
        model,
        read_only,
        prompt: body.trim().to_owned(),
        file: file.to_path_buf(),
    })
}

/// dsh's names for a `tools` field: a comma-separated line or a list, of dsh's names,
/// Claude Code's, or MCP tools'.
fn tool_names(tools: Tools, file: &Path, notes: &mut Vec<String>) -> Result<Vec<String>, String> {
    let given: Vec<String> = match tools {
        Tools::Line(line) => line
            .split(',')
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect(),
        Tools::List(list) => list,
    };
    let mut names = Vec::new();
    for name in given {
        let dsh = if let Some((_, ours)) = CLAUDE_TOOLS.iter().find(|(theirs, _)| *theirs == name) {
            (*ours).to_owned()
        } else if CLAUDE_ONLY.contains(&name.as_str()) {
            notes.push(format!(
                "custom subagent {}: dsh has no tool like Claude Code's {name}; it is left out",
                file.display()
            ));
            continue;
        } else if dsh_config::BUILTIN_TOOLS.contains(&name.as_str()) || name.starts_with("mcp__") {
            name
        } else {
            return Err(format!(
                "tools names \"{name}\", which is no tool dsh has: use dsh's names ({}), Claude \
                 Code's, or mcp__<server>__<tool>",
                dsh_config::BUILTIN_TOOLS.join(", ")
            ));
        };
        if !names.contains(&dsh) {
            names.push(dsh);
        }
    }
    Ok(names)
}

/// `(front matter, body)` of a file that starts with a `---` block.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---")?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    if let Some(body) = rest.strip_prefix("---") {
        return Some(("", body));
    }
    let end = rest.find("\n---")?;
    Some((&rest[..end], &rest[end + 4..]))
}

#[cfg(test)]
mod tests;
