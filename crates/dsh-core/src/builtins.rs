//! The built-in tools and the skills, wired into every agent: the file tools, bash and jobs,
//! the todo list, `present`, `ask_user_question`, the web tools, plan mode's exit, the skills
//! found and `str_replace_editor`, as the run's tool lists let it have them. A child is never
//! offered `ask_user_question` and may be given a narrower list.

use std::sync::Arc;

use dsh_sandbox::SandboxMode;
use dsh_tools::{
    AskUserQuestion, ExitPlanMode, StrReplaceEditor, TodoWrite, ToolFilter, ToolRegistry,
};

use crate::config::Settings;
use crate::install::{Draft, Role, Seat, Wiring};

/// The tools a run offers before its MCP servers join, and what they say of its skills.
pub(crate) struct BaseTools {
    pub(crate) tools: ToolRegistry,
    /// The skill catalog for the system prompt, when there are skills.
    catalog: Option<String>,
    /// Every skill found (name, description), for a front end to list.
    skills: Vec<(String, String)>,
    /// Each skill that could not be loaded: which, and why.
    skill_problems: Vec<String>,
}

/// Gives the agent the built-in tools and the skills. The top agent's user is told of each
/// skill that could not be loaded (it is left out), and the run lists the skills found.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let settings = &wiring.settings;
    let BaseTools {
        mut tools,
        catalog,
        skills,
        skill_problems,
    } = base_tools(settings);
    match &mut seat.role {
        Role::Top(top) => {
            for problem in skill_problems {
                let _ = top.notices.send(problem);
            }
            top.skills = skills;
        }
        Role::Child { spec, .. } => {
            let mut deny = settings.tool_filter().deny.clone();
            deny.push("ask_user_question".to_owned());
            tools.restrict(ToolFilter {
                allow: (spec.allow.clone()).or_else(|| settings.tool_filter().allow.clone()),
                deny,
            });
        }
    }
    draft.tools = tools;
    draft.skill_catalog = catalog;
}

/// The built-in tools and skills of a run with `settings`, under its tool lists.
pub(crate) fn base_tools(settings: &Settings) -> BaseTools {
    let mode = settings.permission_mode().value;
    let confining = mode.sandbox() != SandboxMode::DangerFullAccess;
    let mut tools = ToolRegistry::with_file_tools(confining);
    tools.register(Box::new(TodoWrite::default()));
    tools.register(Box::new(dsh_tools::Present::default()));
    // No one answers in a run built here yet: the tool tells the model so at once.
    tools.register(Box::new(AskUserQuestion::default()));
    let (web_fetch, web_search) = dsh_web::tools(settings.web().clone());
    tools.register(Box::new(web_fetch));
    // Offered only where a backend can serve it: a tool whose every call fails is noise in
    // the prompt (`--dump-config` says why it is off).
    if settings.web().search.is_ok() {
        tools.register(Box::new(web_search));
    }
    if mode.is_plan() {
        tools.register(Box::new(ExitPlanMode::default()));
    } else {
        tools.answer_unoffered(Box::new(ExitPlanMode::default()));
    }
    let dsh_tools::skill::Discovered {
        skills,
        problems: skill_problems,
    } = dsh_tools::skill::discover(&settings.skill_roots());
    // A skill's description is the workspace's text, like a file a tool reads: the run's
    // secrets come out of it before it reaches the prompt or a front end's list.
    let redactor = settings.redactor();
    let redact = |text: String| dsh_tools::redacted(redactor.as_ref(), text);
    let catalog = dsh_tools::skill::catalog(&skills).map(redact);
    let listed = (skills.iter())
        .map(|skill| (skill.name.clone(), redact(skill.description.clone())))
        .collect();
    if catalog.is_some() {
        tools.register(Box::new(dsh_tools::skill::SkillTool::new(skills)));
    } else {
        tools.answer_unoffered(Box::new(dsh_tools::skill::SkillTool::new(Vec::new())));
    }
    if settings.str_replace_editor().value {
        tools.register(Box::new(StrReplaceEditor::default()));
    }
    // bash is offered in every mode, as the reference does: where no backend can confine a
    // command, each call is refused with SANDBOX_UNAVAILABLE and the model reads why.
    tools.add_shell_tools(confining);
    tools.restrict(settings.tool_filter().clone());
    BaseTools {
        tools,
        catalog,
        skills: listed,
        skill_problems,
    }
}

/// The tools of `tools` that are neither MCP tools nor in [`dsh_config::BUILTIN_TOOLS`].
pub(crate) fn unlisted_tools(tools: &ToolRegistry) -> Vec<String> {
    (tools.names())
        .filter(|name| !name.starts_with("mcp__") && !dsh_config::BUILTIN_TOOLS.contains(name))
        .map(str::to_owned)
        .collect()
}
