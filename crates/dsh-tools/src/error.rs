use std::fmt;

use dsh_protocol::ErrorInfo;

/// A failed tool call: the message the model reads after `Error: `, and the structured identity
/// the reference attaches to it (absent for plain argument checks, as in the reference).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub message: String,
    pub info: Option<ErrorInfo>,
    /// What the failed call billed (a subagent that failed after some requests).
    pub usage: dsh_protocol::Usage,
    /// What the failed call asks of the agent all the same (a failed subagent's record).
    pub effect: Option<Box<crate::ToolEffect>>,
}

impl ToolError {
    /// An error without a code (the reference's plain `Error`).
    pub fn plain(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            info: None,
            usage: dsh_protocol::Usage::default(),
            effect: None,
        }
    }

    /// An error with a name and code.
    pub fn coded(name: &str, code: &str, message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            info: Some(ErrorInfo::new(name, code)),
            usage: dsh_protocol::Usage::default(),
            effect: None,
        }
    }

    /// A filesystem error (`FsError` with one of the [`fs_code`] codes).
    pub fn fs(code: &str, message: impl Into<String>) -> Self {
        ToolError::coded("FsError", code, message)
    }

    /// The error with what the call billed before it failed.
    pub fn with_usage(mut self, usage: dsh_protocol::Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The error with what it asks of the agent all the same.
    pub fn with_effect(mut self, effect: crate::ToolEffect) -> Self {
        self.effect = Some(Box::new(effect));
        self
    }

    /// The code of the error, if it has one.
    pub fn code(&self) -> Option<&str> {
        self.info.as_ref().map(|info| info.code.as_str())
    }

    /// The text the model reads.
    pub fn model_text(&self) -> String {
        format!("Error: {}", self.message)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// The reference's filesystem error codes.
pub mod fs_code {
    pub const NOT_FOUND: &str = "FS_NOT_FOUND";
    pub const NOT_TEXT: &str = "FS_NOT_TEXT";
    pub const NOT_REGULAR_FILE: &str = "FS_NOT_REGULAR_FILE";
    pub const PERMISSION_DENIED: &str = "FS_PERMISSION_DENIED";
    pub const IO_ERROR: &str = "FS_IO_ERROR";
    pub const TOO_LARGE: &str = "FS_TOO_LARGE";
    pub const SANDBOX_DENIED: &str = "FS_SANDBOX_DENIED";
    pub const STALE_VERSION: &str = "FS_STALE_VERSION";
    pub const NOT_OBSERVED: &str = "FS_NOT_OBSERVED";
    pub const AMBIGUOUS_EDIT: &str = "FS_AMBIGUOUS_EDIT";
    pub const EDIT_NOT_FOUND: &str = "FS_EDIT_NOT_FOUND";
    pub const ABORTED: &str = "FS_ABORTED";
}
