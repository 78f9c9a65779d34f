//! The config file by section: a module per `[section]`, each with what the file can say there,
//! what it resolves to, and how; and [`Config`], the whole file, a field per section.

use std::collections::BTreeMap;

use serde::Deserialize;

use dsh_llm::Effort;

use crate::files::{AgentPreset, parsed};
use crate::route::{ModelConfig, ProviderConfig};
use crate::trust::ProjectConfig;

pub(crate) mod approval;
pub(crate) mod auto_review;
pub(crate) mod checkpoints;
pub(crate) mod compaction;
pub(crate) mod goals;
pub(crate) mod instructions;
pub(crate) mod jobs;
pub(crate) mod mcp;
pub(crate) mod requests;
pub(crate) mod rules;
pub(crate) mod sandbox;
pub(crate) mod secrets;
pub(crate) mod sessions;
pub(crate) mod shell;
pub(crate) mod skills;
pub(crate) mod stored_auth;
pub(crate) mod subagents;
pub(crate) mod tools;
pub(crate) mod tui;
pub(crate) mod web;
pub(crate) mod workflows;

/// What a config file can say: a field per section.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The model to use when `--model` is not given.
    pub model: Option<String>,
    /// The reasoning effort when `--effort` is not given: off, low, high or max.
    #[serde(deserialize_with = "parsed")]
    pub effort: Option<Effort>,
    /// Text added at the end of the system prompt when `--system-prompt-append` is not given.
    pub system_prompt_append: Option<String>,
    /// The tool set when `--preset` is not given: standard or minimal.
    #[serde(deserialize_with = "parsed")]
    pub preset: Option<AgentPreset>,
    pub tools: tools::ToolsConfig,
    pub shell: shell::ShellConfig,
    pub jobs: jobs::JobsConfig,
    pub sandbox: sandbox::SandboxConfig,
    pub approval: approval::ApprovalConfig,
    pub sessions: sessions::SessionsConfig,
    pub requests: requests::RequestsConfig,
    pub instructions: instructions::InstructionsConfig,
    pub skills: skills::SkillsConfig,
    pub web: web::WebConfig,
    pub subagents: subagents::SubagentsConfig,
    pub rules: rules::RulesConfig,
    pub goals: goals::GoalsConfig,
    pub compaction: compaction::CompactionConfig,
    pub tui: tui::TuiConfig,
    pub workflows: workflows::WorkflowsConfig,
    pub auto_review: auto_review::AutoReviewConfig,
    pub checkpoints: checkpoints::CheckpointsConfig,
    pub stored_auth: stored_auth::StoredAuthConfig,
    pub mcp: mcp::McpConfig,
    pub secrets: secrets::SecretsConfig,
    /// What is known about models by name, over the built-in table.
    pub models: BTreeMap<String, ModelConfig>,
    /// Model routes by name, used as `--model <provider>/<model>`.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The folders whose own `.dsh/config.toml` you trust, by absolute path; read from
    /// `$DSH_HOME/config.toml` only ([`crate::trust`]).
    pub projects: BTreeMap<String, ProjectConfig>,
}
