//! `[tools]` and `preset`: which tools the model is offered by name.

use dsh_tools::ToolFilter;
use serde::Deserialize;

use crate::environment::SetupError;
use crate::files::AgentPreset;
use crate::flags::Flags;
use crate::resolver::{Resolver, flag};
use crate::shown::Shown;
use crate::sourced::{Source, Sourced};

/// No key here widens anything ([`crate::trust_look::Widens`]); `allow` has a rule of its own
/// ([`crate::trust_rules`]).
pub(crate) const GUARDS: &[crate::trust_look::Guard] = &[crate::trust_look::Guard::neither(
    "tools.str_replace_editor",
    "another way to edit, with the same checks as edit",
)];

/// Which optional tools are offered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Offer `str_replace_editor` next to `read`, `write` and `edit`.
    pub str_replace_editor: Option<bool>,
    /// Offer only the tools these names cover (`mcp__<server>__*` covers a server's tools).
    pub allow: Option<Vec<String>>,
    /// Never offer the tools these names cover; the lists of every layer add up.
    pub deny: Option<Vec<String>>,
}

/// Which tools are offered.
#[derive(Debug, Clone)]
pub struct Tools {
    /// Whether `str_replace_editor` is offered beside `read`, `write` and `edit`.
    pub str_replace_editor: Sourced<bool>,
    /// Which tools are offered by name (`tools.allow`, `tools.deny`, `--tools`,
    /// `--disallowed-tools`).
    pub filter: ToolFilter,
}

/// The preset (`--preset`, `preset`), the tools it offers and the tool lists over it.
pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &ToolsConfig,
    preset: Option<AgentPreset>,
    flags: &Flags,
) -> Result<Tools, SetupError> {
    let preset = r.setting(
        "preset",
        [flag(flags.preset, "--preset"), r.file("preset", preset)],
        AgentPreset::Standard,
    );
    let minimal = (preset.value == AgentPreset::Minimal).then_some(Source::Preset("minimal"));
    let str_replace_editor = r.setting(
        "tools.str_replace_editor",
        [
            r.file("tools.str_replace_editor", config.str_replace_editor),
            minimal.clone().map(|source| Sourced::new(true, source)),
        ],
        false,
    );
    let filter = filter(r, config, flags, minimal)?;
    Ok(Tools {
        str_replace_editor,
        filter,
    })
}

/// Every tool dsh itself can offer, whichever crate holds it; MCP tools are
/// `mcp__<server>__<tool>`. The names `--tools` and `tools.allow`/`tools.deny` accept: every
/// debug run checks that each tool it registers is here.
pub const BUILTIN_TOOLS: &[&str] = &[
    "ask_user_question",
    "bash",
    "create_goal",
    "edit",
    "exit_plan_mode",
    "get_goal",
    "glob",
    "grep",
    "interrupt_agent",
    "job_kill",
    "job_list",
    "job_output",
    "list_agents",
    "list_mcp_resources",
    "present",
    "ralph",
    "read",
    "read_image",
    "read_mcp_resource",
    "send_message",
    "skill",
    "str_replace_editor",
    "subagent",
    "subagent_fork",
    "todo_write",
    "update_goal",
    "web_fetch",
    "web_search",
    "workflow",
    "write",
];

/// The tools of the minimal preset: the reference's two-tool coding agent.
const MINIMAL_TOOLS: [&str; 2] = ["bash", "str_replace_editor"];

/// Which tools are offered. An allow list comes from `--tools`, else the last layer that gives
/// `tools.allow`; deny lists add up: every layer's `tools.deny` and `--disallowed-tools` (a tool
/// any of them withholds stays withheld). Every name must cover a tool dsh has.
fn filter(
    r: &mut Resolver<'_>,
    config: &ToolsConfig,
    flags: &Flags,
    minimal: Option<Source>,
) -> Result<ToolFilter, SetupError> {
    let allow = r.setting(
        "tools.allow",
        [
            flag(flags.tools.clone().map(Some), "--tools"),
            r.file("tools.allow", config.allow.clone().map(Some)),
            minimal.map(|source| {
                Sourced::new(Some(MINIMAL_TOOLS.map(str::to_owned).to_vec()), source)
            }),
        ],
        None,
    );
    r.none_means(&allow, "all");
    let mut deny = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    let from_files = r.layers().every_layer_list(&["tools", "deny"]);
    let from_flag = flags
        .disallowed_tools
        .iter()
        .map(|name| (name.clone(), "--disallowed-tools".to_owned()));
    for (name, source) in from_files
        .into_iter()
        .map(|(name, path)| (name, path.display().to_string()))
        .chain(from_flag)
    {
        if !deny.contains(&name) {
            deny.push(name);
        }
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    let source = if sources.is_empty() {
        Source::Default.to_string()
    } else {
        sources.join(", ")
    };
    r.record_text("tools.deny", deny.shown(), source);
    let filter = ToolFilter {
        allow: allow.value,
        deny,
    };
    if let Some(name) = filter.unknown_name(BUILTIN_TOOLS) {
        return Err(SetupError::config(format!(
            "the tool list names \"{name}\", which is no tool dsh has: use the names of \
             built-in tools ({}) or mcp__<server>__<tool> (a trailing * covers several)",
            BUILTIN_TOOLS.join(", ")
        )));
    }
    Ok(filter)
}
