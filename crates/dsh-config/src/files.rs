//! The values the configuration files hold, as types: the named values (a mode, a kind, a
//! compression) as enums, and the readers that refuse a wrong value (an unknown name, a 0 where
//! at least 1 is needed) when the file is read, with its file and line. Each section's own
//! table is in [`crate::sections`].

use std::fmt;
use std::str::FromStr;

use dsh_sandbox::SandboxMode;

use serde::{Deserialize, Deserializer};

/// Reads an enum-like value through its `FromStr`, whose error (which names the choices) is
/// the file's error.
pub(crate) fn parsed<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

/// A resource limit: a whole number of at least 1 (0 would stop every command).
pub(crate) fn limit<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    match u64::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom(
            "a limit of 0 would stop every command; give at least 1, or leave the key out for \
             no limit",
        )),
        n => Ok(Some(n)),
    }
}

/// A count that must be at least 1.
pub(crate) fn at_least_one<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    match u64::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom(
            "give a whole number of at least 1",
        )),
        n => Ok(Some(n)),
    }
}

/// Declares an enum read from and shown as fixed names, with the error that lists them.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value it takes, as an error message lists them.
            pub const CHOICES: &'static str = named_enum!(@list $($text),+);

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", $what, " \"{}\": use ", named_enum!(@list $($text),+)),
                        other
                    )),
                }
            }
        }
    };
    (@list $only:literal) => { $only };
    (@list $first:literal, $last:literal) => { concat!($first, " or ", $last) };
    (@list $first:literal, $($rest:literal),+) => { concat!($first, ", ", named_enum!(@list $($rest),+)) };
}

named_enum! {
    /// The wire format of a model route (`providers.<name>.kind`).
    ProviderKind, "provider kind" {
        /// The DeepSeek API (chat completions with its reasoning switch).
        DeepSeek = "deepseek",
        OpenAiCompletions = "openai-completions",
        OpenAiResponses = "openai-responses",
        AnthropicMessages = "anthropic-messages",
    }
}

named_enum! {
    /// Which tools an agent starts from (`preset`, `--preset`).
    AgentPreset, "preset" {
        /// Every tool dsh has.
        Standard = "standard",
        /// `bash` and `str_replace_editor` only: the smallest prompt, for small models and
        /// supervisors (the reference's `minimal` preset).
        Minimal = "minimal",
    }
}

named_enum! {
    /// How session logs are written (`sessions.compression`).
    Compression, "compression" {
        /// Plain JSON lines, `session.jsonl`.
        None = "none",
        /// One Zstandard frame per line, `session.jsonl.zst`.
        Zstd = "zstd",
    }
}

named_enum! {
    /// The role the system prompt is sent with on an OpenAI-compatible route.
    SystemRole, "system role" {
        System = "system",
        /// OpenAI's reasoning models.
        Developer = "developer",
    }
}

named_enum! {
    /// What a run's tools may change (`--permission-mode`, `DSH_PERMISSION_MODE`,
    /// `sandbox.mode`): a sandbox mode, or plan mode.
    PermissionMode, "permission mode" {
        ReadOnly = "read-only",
        WorkspaceWrite = "workspace-write",
        DangerFullAccess = "danger-full-access",
        /// Explore and plan: only tools that change nothing run, commands under a read-only
        /// sandbox, and `exit_plan_mode` submits the plan.
        Plan = "plan",
        /// Auto review: full access, but a reviewer model allows or denies every call that
        /// could change something before it runs (`[auto_review]`).
        Auto = "auto",
    }
}

impl PermissionMode {
    /// The sandbox mode that confines commands and file tools.
    pub fn sandbox(self) -> SandboxMode {
        match self {
            PermissionMode::ReadOnly | PermissionMode::Plan => SandboxMode::ReadOnly,
            PermissionMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            // No file sandbox: the review is the guard (docs/sandbox.md says what it can and
            // cannot catch).
            PermissionMode::DangerFullAccess | PermissionMode::Auto => {
                SandboxMode::DangerFullAccess
            }
        }
    }

    pub fn is_auto(self) -> bool {
        self == PermissionMode::Auto
    }

    /// Whether it lets calls do more than `other` does: Auto review runs unconfined, but
    /// with every changing call reviewed, so it sits between workspace-write and
    /// danger-full-access (a caller that may narrow a mode must not trade a review away).
    pub fn is_wider_than(self, other: PermissionMode) -> bool {
        fn reach(mode: PermissionMode) -> u8 {
            match mode {
                PermissionMode::ReadOnly | PermissionMode::Plan => 0,
                PermissionMode::WorkspaceWrite => 1,
                PermissionMode::Auto => 2,
                PermissionMode::DangerFullAccess => 3,
            }
        }
        reach(self) > reach(other)
    }

    pub fn is_plan(self) -> bool {
        self == PermissionMode::Plan
    }
}

named_enum! {
    /// A `web_search` backend (`web.search.provider`).
    SearchProvider, "search provider" {
        Native = "native",
        Searxng = "searxng",
        Brave = "brave",
    }
}

named_enum! {
    /// When the terminal UI asks the terminal to notify you (`tui.notify`): a bell and an OSC 9
    /// notification, while the terminal is not focused.
    Notify, "notify setting" {
        /// Never.
        Off = "off",
        /// An approval or question waiting, and a turn of 30 seconds or more ending.
        LongTurns = "long-turns",
        /// An approval or question waiting, and every turn ending.
        Always = "always",
    }
}
