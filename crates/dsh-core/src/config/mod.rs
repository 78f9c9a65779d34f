//! Settings: what the configuration files say ([`Config`], typed, read as layers by
//! [`ConfigFiles`]), the reference's patch rows translated onto the same keys ([`rows`]), and
//! [`Settings::resolve`], the one place that holds every default and every precedence rule
//! (files, then the environment, then flags), model routing included ([`Route`]).

mod files;
mod layers;
mod resolver;
mod route;
mod rows;
mod settings;
mod shown;
mod sourced;

pub use files::{
    ApprovalConfig, Compression, Config, InstructionsConfig, JobsConfig, McpConfig,
    McpServerConfig, ModelConfig, PermissionMode, ProviderConfig, ProviderKind, RequestsConfig,
    SandboxConfig, SessionsConfig, ShellConfig, SkillsConfig, SystemRole, ToolsConfig,
};
pub use layers::{ConfigError, ConfigFiles, Layer};
pub use resolver::{Environment, SetupError};
pub use route::{ApiKey, OTHER_WINDOW_DEFAULT, Route};
pub use settings::{
    DEFAULT_MODEL, Flags, McpServerSettings, McpTransport, Settings, SubagentLimits, Usd, home,
    sandbox_only,
};
pub use shown::SettingRow;
pub use sourced::{Source, Sourced};

// The value types of settings that flags also set, so a front end parses them as core reads them.
pub use dsh_llm::Effort;
/// What a permission mode confines commands to ([`PermissionMode::sandbox`]).
pub use dsh_sandbox::SandboxMode;
pub use dsh_sandbox::escalation::ApprovalPolicy;
