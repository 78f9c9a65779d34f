//! Escalation: one call asking for a wider mode than it runs under.
//!
//! A tool that confines (`bash`, `write`, `edit`) takes `sandbox_permissions` (the mode wanted)
//! and `justification` (one sentence for the user). The pair is checked, the mode must be
//! strictly wider than the call's, and then an [`Approver`] decides. Without one (a headless
//! run) every request is refused as `unavailable`. The texts are the reference's.

use std::future::Future;
use std::pin::Pin;

use crate::SandboxMode;

/// A checked escalation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationRequest {
    pub mode: SandboxMode,
    pub justification: String,
}

/// Why an escalation was not granted; the message is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscalationError {
    #[error("invalid escalation: sandbox_permissions requires a justification")]
    MissingJustification,
    #[error("invalid escalation: justification is only valid together with sandbox_permissions")]
    JustificationAlone,
    #[error("invalid justification: expected a non-empty sentence")]
    BlankJustification,
    #[error(
        "sandbox escalation to \"{wanted}\" is not strictly wider than this call's current \"{current}\" mode"
    )]
    NotWider {
        wanted: SandboxMode,
        current: SandboxMode,
    },
    #[error(
        "sandbox escalation to \"{0}\" requires approval, but no approval channel is available"
    )]
    Unavailable(SandboxMode),
    #[error("the user rejected escalating this {subject} to \"{mode}\"")]
    Rejected {
        mode: SandboxMode,
        subject: &'static str,
    },
    #[error("approval for escalating to \"{0}\" was cancelled")]
    Cancelled(SandboxMode),
}

/// Checks the pairing of the two arguments. `mode` has already passed the schema's enum.
pub fn parse(
    mode: Option<SandboxMode>,
    justification: Option<&str>,
) -> Result<Option<EscalationRequest>, EscalationError> {
    match (mode, justification) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(EscalationError::MissingJustification),
        (None, Some(_)) => Err(EscalationError::JustificationAlone),
        (Some(_), Some(j)) if j.trim().is_empty() => Err(EscalationError::BlankJustification),
        (Some(mode), Some(j)) => Ok(Some(EscalationRequest {
            mode,
            justification: j.to_owned(),
        })),
    }
}

/// What an approver answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalOutcome {
    AllowedOnce,
    Rejected,
    Cancelled,
    Unavailable,
}

/// One question to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub tool: String,
    pub call_id: String,
    /// `escalate sandbox to <mode>: <justification>`.
    pub reason: String,
}

/// Someone who can say yes or no (the terminal UI, a supervisor's channel).
pub trait Approver: Send + Sync {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>>;
}

/// Decides a request for a call running under `current`. Returns the mode granted to that one
/// call. `subject` names the action in a rejection ("command", "operation").
pub async fn approve(
    request: &EscalationRequest,
    current: SandboxMode,
    approver: Option<&dyn Approver>,
    tool: &str,
    call_id: &str,
    subject: crate::Subject,
) -> Result<SandboxMode, EscalationError> {
    if !request.mode.is_wider_than(current) {
        return Err(EscalationError::NotWider {
            wanted: request.mode,
            current,
        });
    }
    let Some(approver) = approver else {
        return Err(EscalationError::Unavailable(request.mode));
    };
    let outcome = approver
        .request(ApprovalRequest {
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            reason: format!(
                "escalate sandbox to {}: {}",
                request.mode, request.justification
            ),
        })
        .await;
    match outcome {
        ApprovalOutcome::AllowedOnce => Ok(request.mode),
        ApprovalOutcome::Rejected => Err(EscalationError::Rejected {
            mode: request.mode,
            subject: subject.noun(),
        }),
        ApprovalOutcome::Cancelled => Err(EscalationError::Cancelled(request.mode)),
        ApprovalOutcome::Unavailable => Err(EscalationError::Unavailable(request.mode)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Subject;

    struct Always(ApprovalOutcome);

    impl Approver for Always {
        fn request(
            &self,
            _: ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
            Box::pin(std::future::ready(self.0))
        }
    }

    fn request(mode: SandboxMode) -> EscalationRequest {
        EscalationRequest {
            mode,
            justification: "needed".into(),
        }
    }

    #[test]
    fn the_arguments_travel_together() {
        let full = SandboxMode::DangerFullAccess;
        assert_eq!(
            parse(Some(full), None),
            Err(EscalationError::MissingJustification)
        );
        assert_eq!(
            parse(None, Some("x")),
            Err(EscalationError::JustificationAlone)
        );
        assert_eq!(
            parse(Some(full), Some("  ")),
            Err(EscalationError::BlankJustification)
        );
        assert_eq!(parse(None, None), Ok(None));
        assert_eq!(parse(Some(full), Some("why")).unwrap().unwrap().mode, full);
    }

    #[tokio::test]
    async fn requests_must_widen_and_need_an_approver() {
        let ww = SandboxMode::WorkspaceWrite;
        let full = SandboxMode::DangerFullAccess;
        let not_wider = approve(&request(ww), ww, None, "write", "c", Subject::Operation).await;
        assert_eq!(
            not_wider.unwrap_err().to_string(),
            "sandbox escalation to \"workspace-write\" is not strictly wider than this call's current \"workspace-write\" mode"
        );
        let none = approve(&request(full), ww, None, "write", "c", Subject::Operation).await;
        assert_eq!(
            none.unwrap_err().to_string(),
            "sandbox escalation to \"danger-full-access\" requires approval, but no approval channel is available"
        );
        let yes = Always(ApprovalOutcome::AllowedOnce);
        assert_eq!(
            approve(&request(full), ww, Some(&yes), "w", "c", Subject::Operation).await,
            Ok(full)
        );
        let no = Always(ApprovalOutcome::Rejected);
        assert_eq!(
            approve(&request(full), ww, Some(&no), "bash", "c", Subject::Command)
                .await
                .unwrap_err()
                .to_string(),
            "the user rejected escalating this command to \"danger-full-access\""
        );
    }
}
