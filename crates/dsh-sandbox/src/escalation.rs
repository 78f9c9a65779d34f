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
    /// The reference's text, then the user's reason when they gave one.
    #[error("the user rejected escalating this {subject} to \"{mode}\"{}", said(reason.as_deref()))]
    Rejected {
        mode: SandboxMode,
        subject: &'static str,
        reason: Option<String>,
    },
    #[error("approval for escalating to \"{0}\" was cancelled")]
    Cancelled(SandboxMode),
    /// Not the reference's text: under `never` it says "the user rejected", though nobody was
    /// asked; the model should know the refusal is standing policy.
    #[error(
        "sandbox escalation to \"{0}\" was refused by the approval policy \"never\": no one was \
         asked, and every escalation in this session is refused the same way; do not set \
         sandbox_permissions again, finish what the current mode allows and report what needs \
         the wider mode"
    )]
    RefusedByPolicy(SandboxMode),
}

/// Whether escalation requests may be put to an approver (`--approval-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Ask the approver; without one the request fails closed as `unavailable`.
    #[default]
    Ask,
    /// Refuse every request at once, asking no one.
    Never,
}

impl ApprovalPolicy {
    /// The default for a mode, as the reference's: `never` under `danger-full-access` (there is
    /// nothing wider to ask for), `ask` otherwise.
    pub fn default_for(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::DangerFullAccess => ApprovalPolicy::Never,
            _ => ApprovalPolicy::Ask,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::Never => "never",
        }
    }
}

impl std::fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An approval policy name that is not `ask` or `never`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval policy \"{0}\": use ask or never")]
pub struct UnknownApprovalPolicy(pub String);

impl std::str::FromStr for ApprovalPolicy {
    type Err = UnknownApprovalPolicy;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "ask" => Ok(ApprovalPolicy::Ask),
            "never" => Ok(ApprovalPolicy::Never),
            other => Err(UnknownApprovalPolicy(other.to_owned())),
        }
    }
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    AllowedOnce,
    /// Allowed, and every later request with the same [`ApprovalRequest::grant`] in this
    /// session is allowed without asking ([`SessionGrants`] remembers it).
    AllowedForSession,
    /// Refused; the reason, when the user gave one, is passed on to the model.
    Rejected {
        reason: Option<String>,
    },
    Cancelled,
    Unavailable,
}

impl ApprovalOutcome {
    pub fn is_allowed(&self) -> bool {
        matches!(
            self,
            ApprovalOutcome::AllowedOnce | ApprovalOutcome::AllowedForSession
        )
    }
}

/// One question to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub tool: String,
    pub call_id: String,
    /// `escalate sandbox to <mode>: <justification>`.
    pub reason: String,
    /// What allowing it for the session covers, as the dialog names it (`sandbox
    /// danger-full-access`, `network`): requests with the same grant are one permission.
    /// `None`: it can only be allowed once (no "for the session" choice is offered).
    pub grant: Option<String>,
}

/// `: <reason>` after a refusal the user explained, nothing otherwise.
fn said(reason: Option<&str>) -> String {
    match reason.map(str::trim) {
        Some(reason) if !reason.is_empty() => format!("; the user said: {reason}"),
        _ => String::new(),
    }
}

/// An approver that remembers what the user allowed for the session: a request whose grant
/// was allowed that way is allowed again without asking.
pub struct SessionGrants<A> {
    inner: A,
    granted: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// One question at a time: calls asking in parallel for the same thing wait for the first
    /// answer, and an "allow for the session" covers them without asking again.
    asking: tokio::sync::Mutex<()>,
}

impl<A: Approver> SessionGrants<A> {
    pub fn new(inner: A) -> Self {
        SessionGrants {
            inner,
            granted: std::sync::Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Forgets every grant: a new session starts asking again.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The grants allowed for the session so far, sorted.
    pub fn granted(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.granted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<A: Approver> Approver for SessionGrants<A> {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
        Box::pin(async move {
            let _turn = self.asking.lock().await;
            if let Some(grant) = &request.grant
                && self.lock().contains(grant)
            {
                return ApprovalOutcome::AllowedOnce;
            }
            let grant = request.grant.clone();
            let outcome = self.inner.request(request).await;
            if outcome == ApprovalOutcome::AllowedForSession
                && let Some(grant) = grant
            {
                self.lock().insert(grant);
            }
            outcome
        })
    }
}

/// Someone who can say yes or no (the terminal UI, a supervisor's channel).
pub trait Approver: Send + Sync {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>>;
}

/// Who decides escalation requests in a session.
#[derive(Clone, Copy)]
pub struct Approval<'a> {
    pub policy: ApprovalPolicy,
    pub approver: Option<&'a dyn Approver>,
}

/// The noun a denial or hint uses for what was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A shell command (`bash`).
    Command,
    /// A file mutation (`write`, `edit`).
    Operation,
}

impl Subject {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Subject::Command => "command",
            Subject::Operation => "operation",
        }
    }
}

/// Decides a request for a call running under `current`. Returns the mode granted to that one
/// call. `subject` names the action in a rejection ("command", "operation").
pub async fn approve(
    request: &EscalationRequest,
    current: SandboxMode,
    approval: Approval<'_>,
    tool: &str,
    call_id: &str,
    subject: Subject,
) -> Result<SandboxMode, EscalationError> {
    if !request.mode.is_wider_than(current) {
        return Err(EscalationError::NotWider {
            wanted: request.mode,
            current,
        });
    }
    if approval.policy == ApprovalPolicy::Never {
        return Err(EscalationError::RefusedByPolicy(request.mode));
    }
    let Some(approver) = approval.approver else {
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
            grant: Some(format!("sandbox {}", request.mode)),
        })
        .await;
    match outcome {
        ApprovalOutcome::AllowedOnce | ApprovalOutcome::AllowedForSession => Ok(request.mode),
        ApprovalOutcome::Rejected { reason } => Err(EscalationError::Rejected {
            mode: request.mode,
            subject: subject.noun(),
            reason,
        }),
        ApprovalOutcome::Cancelled => Err(EscalationError::Cancelled(request.mode)),
        ApprovalOutcome::Unavailable => Err(EscalationError::Unavailable(request.mode)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Always(ApprovalOutcome);

    impl Approver for Always {
        fn request(
            &self,
            _: ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
            Box::pin(std::future::ready(self.0.clone()))
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
        let ask = |approver| Approval {
            policy: ApprovalPolicy::Ask,
            approver,
        };
        let not_wider = approve(
            &request(ww),
            ww,
            ask(None),
            "write",
            "c",
            Subject::Operation,
        )
        .await;
        assert_eq!(
            not_wider.unwrap_err().to_string(),
            "sandbox escalation to \"workspace-write\" is not strictly wider than this call's current \"workspace-write\" mode"
        );
        let none = approve(
            &request(full),
            ww,
            ask(None),
            "write",
            "c",
            Subject::Operation,
        )
        .await;
        assert_eq!(
            none.unwrap_err().to_string(),
            "sandbox escalation to \"danger-full-access\" requires approval, but no approval channel is available"
        );
        let yes = Always(ApprovalOutcome::AllowedOnce);
        assert_eq!(
            approve(
                &request(full),
                ww,
                ask(Some(&yes)),
                "w",
                "c",
                Subject::Operation
            )
            .await,
            Ok(full)
        );
        let no = Always(ApprovalOutcome::Rejected { reason: None });
        assert_eq!(
            approve(
                &request(full),
                ww,
                ask(Some(&no)),
                "bash",
                "c",
                Subject::Command
            )
            .await
            .unwrap_err()
            .to_string(),
            "the user rejected escalating this command to \"danger-full-access\""
        );
        let explained = Always(ApprovalOutcome::Rejected {
            reason: Some("not on my laptop".into()),
        });
        assert_eq!(
            approve(
                &request(full),
                ww,
                ask(Some(&explained)),
                "bash",
                "c",
                Subject::Command
            )
            .await
            .unwrap_err()
            .to_string(),
            "the user rejected escalating this command to \"danger-full-access\"; the user said: \
             not on my laptop"
        );
        // `never` decides before any approver, and says it was the policy.
        let never = Approval {
            policy: ApprovalPolicy::Never,
            approver: Some(&yes),
        };
        let refused = approve(&request(full), ww, never, "bash", "c", Subject::Command).await;
        assert_eq!(
            refused,
            Err(EscalationError::RefusedByPolicy(full)),
            "an approver must not be consulted under never"
        );
        assert!(
            refused
                .unwrap_err()
                .to_string()
                .starts_with("sandbox escalation to \"danger-full-access\" was refused by the approval policy \"never\"")
        );
    }

    /// Counts the questions it was asked, and answers each with the next outcome.
    struct Scripted {
        asked: std::sync::atomic::AtomicUsize,
        outcome: ApprovalOutcome,
    }

    impl Approver for Scripted {
        fn request(
            &self,
            _: ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(std::future::ready(self.outcome.clone()))
        }
    }

    #[tokio::test]
    async fn a_grant_for_the_session_is_asked_once() {
        let grants = SessionGrants::new(Scripted {
            asked: 0.into(),
            outcome: ApprovalOutcome::AllowedForSession,
        });
        let ask = |grant: &str| ApprovalRequest {
            tool: "bash".into(),
            call_id: "c".into(),
            reason: "escalate".into(),
            grant: Some(grant.into()),
        };
        assert!(
            grants
                .request(ask("sandbox danger-full-access"))
                .await
                .is_allowed()
        );
        assert_eq!(
            grants.request(ask("sandbox danger-full-access")).await,
            ApprovalOutcome::AllowedOnce
        );
        assert!(grants.request(ask("network")).await.is_allowed());
        assert_eq!(
            grants.inner.asked.load(std::sync::atomic::Ordering::SeqCst),
            2
        );
        assert_eq!(grants.granted(), ["network", "sandbox danger-full-access"]);
    }
}
