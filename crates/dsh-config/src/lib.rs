//! dsh's settings, resolved once for a run: what the configuration files say ([`Config`],
//! typed, read as layers by [`ConfigFiles`]), the reference's patch rows translated onto the
//! same keys, the credentials of the environment and its `.env` files ([`Credentials`]), and
//! [`Settings::resolve`], the one place that holds every default and every precedence rule
//! (files, then the environment, then flags), model routing included ([`Route`]).
//!
//! Nothing here knows the agent: the agent (`dsh-core`) is built from a [`Settings`], and adds
//! to `--dump-config`'s rows the two facts only it knows (the tools offered, the session that
//! `--continue` finds).

mod auto_review;
mod checkpoints;
mod dotenv;
mod files;
mod home;
mod layers;
pub mod project;
mod resolver;
mod route;
mod rows;
mod saved_keys;
mod settings;
mod shown;
mod sourced;

pub use auto_review::{AutoReviewSettings, DEFAULT_REVIEW_MESSAGES, DEFAULT_REVIEW_TIMEOUT};
pub use checkpoints::CheckpointRules;
pub use dotenv::{Credentials, DotenvError, EnvSource};
pub use files::{
    AgentPreset, ApprovalConfig, AutoReviewConfig, Compression, Config, GoalsConfig,
    InstructionsConfig, JobsConfig, McpConfig, McpServerConfig, ModelConfig, PermissionMode,
    ProviderConfig, ProviderKind, RequestsConfig, SandboxConfig, SessionsConfig, ShellConfig,
    SkillsConfig, SystemRole, ToolsConfig,
};
pub use home::dsh_home;
pub use layers::{ConfigError, ConfigFiles, Layer};
pub use resolver::{Environment, SetupError};
pub use route::{ApiKey, DEFAULT_CONTEXT_WINDOW, OTHER_WINDOW_DEFAULT, Route};
pub use saved_keys::{SavedKeyError, forget_key, save_key, saved_keys_path};
pub use settings::{
    BUILTIN_TOOLS, DEFAULT_JOB_WAIT, DEFAULT_MAX_STEPS, DEFAULT_MODEL, Flags, GoalRules,
    McpServerSettings, McpTransport, SessionChoice, Settings, SubagentLimits, Usd, home,
    sandbox_only,
};
pub use shown::SettingRow;
pub use sourced::{Source, Sourced};

// The value types of settings that flags also set, so a front end parses them as they are read.
pub use dsh_llm::Effort;
/// What a permission mode confines commands to ([`PermissionMode::sandbox`]).
pub use dsh_sandbox::SandboxMode;
pub use dsh_sandbox::escalation::ApprovalPolicy;
