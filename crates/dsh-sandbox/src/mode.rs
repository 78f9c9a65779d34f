use std::fmt;
use std::str::FromStr;

/// How much a tool call may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum SandboxMode {
    /// Nothing may be written.
    ReadOnly,
    /// Writes only under the workspace, the temporary areas and granted directories.
    #[default]
    WorkspaceWrite,
    /// No confinement at all.
    DangerFullAccess,
}

impl SandboxMode {
    /// Every mode, narrowest first.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess,
    ];

    /// The modes a call may escalate to (advertised in tool schemas).
    pub const ESCALATION_TARGETS: [SandboxMode; 2] =
        [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    /// Whether `self` grants strictly more than `other`.
    pub fn is_wider_than(self, other: SandboxMode) -> bool {
        self > other
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode \"{0}\": use read-only, workspace-write or danger-full-access")]
pub struct UnknownMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| UnknownMode(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders_modes() {
        assert_eq!(
            "read-only".parse::<SandboxMode>(),
            Ok(SandboxMode::ReadOnly)
        );
        assert!("root".parse::<SandboxMode>().is_err());
        assert!(SandboxMode::DangerFullAccess.is_wider_than(SandboxMode::WorkspaceWrite));
        assert!(!SandboxMode::WorkspaceWrite.is_wider_than(SandboxMode::WorkspaceWrite));
    }
}
