//! dsh's settings, resolved once for a run: what the configuration files say ([`Config`],
//! typed, read as layers by [`ConfigFiles`]), the reference's patch rows translated onto the
//! same keys, the credentials of the environment and its `.env` files ([`Credentials`]), and
//! [`Settings::resolve`], the one place that holds every default and every precedence rule
//! (files, then the environment, then flags), model routing included ([`Route`]).
//!
//! Nothing here knows the agent: the agent (`dsh-core`) is built from a [`Settings`], and adds
//! to `--dump-config`'s rows the two facts only it knows (the tools offered, the session that
//! `--continue` finds).

mod dotenv;
mod environment;
mod files;
mod flags;
mod home;
mod layer;
mod layers;
pub mod project;
mod resolver;
mod route;
mod rows;
mod saved_keys;
mod secrets;
mod sections;
mod settings;
mod shown;
mod sourced;
pub mod trust;
mod trust_file;
mod trust_limits;
mod trust_look;
mod trust_rules;

pub use dotenv::{Credentials, DotenvError, EnvSource};
pub use environment::{Environment, SetupError, SetupKind};
pub use files::{AgentPreset, Compression, Notify, PermissionMode, ProviderKind, SystemRole};
pub use flags::{Flags, SessionChoice, Usd};
pub use home::{dsh_home, saved_keys_path};
pub use layer::{ConfigError, Layer};
pub use layers::ConfigFiles;
pub use route::{
    ApiKey, DEFAULT_CONTEXT_WINDOW, DEFAULT_MODEL, ModelConfig, OTHER_WINDOW_DEFAULT,
    ProviderConfig, Route,
};
pub use saved_keys::{SavedKeyError, forget_key, save_key};
pub use sections::Config;
pub use sections::approval::ApprovalConfig;
pub use sections::auto_review::{
    AutoReviewConfig, AutoReviewSettings, DEFAULT_REVIEW_MESSAGES, DEFAULT_REVIEW_TIMEOUT,
};
pub use sections::checkpoints::CheckpointRules;
pub use sections::compaction::{
    CompactionConfig, CompactionRules, DEFAULT_THRESHOLD as DEFAULT_COMPACTION_THRESHOLD,
};
pub use sections::goals::{GoalRules, GoalsConfig};
pub use sections::instructions::InstructionsConfig;
pub use sections::jobs::{DEFAULT_JOB_WAIT, JobsConfig};
pub use sections::mcp::{McpConfig, McpServerConfig, McpServerSettings, McpTransport};
pub use sections::requests::RequestsConfig;
pub use sections::rules::{PATH_TOOLS, RulesConfig};
pub use sections::sandbox::SandboxConfig;
pub use sections::sessions::SessionsConfig;
pub use sections::shell::ShellConfig;
pub use sections::skills::SkillsConfig;
pub use sections::stored_auth::{StoredAuth, StoredAuthConfig};
pub use sections::subagents::SubagentLimits;
pub use sections::tools::{BUILTIN_TOOLS, ToolsConfig};
pub use settings::{DEFAULT_MAX_STEPS, Settings, home, sandbox_only};
pub use shown::SettingRow;
pub use sourced::{Source, Sourced};
pub use trust::{ProjectConfig, ProjectTrust, Reason, SetAside, Trust};
pub use trust_file::{TrustError, set_trust};

// The value types of settings that flags also set, so a front end parses them as they are read.
pub use dsh_llm::Effort;
/// What a permission mode confines commands to ([`PermissionMode::sandbox`]).
pub use dsh_sandbox::SandboxMode;
pub use dsh_sandbox::escalation::ApprovalPolicy;
