//! The editor's side of [`dsh_core::ask`]: an escalation and the model's questions become
//! `session/request_permission` requests the client answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_core::ask::{
    Answer, ApprovalOutcome, ApprovalRequest, Approver, AskOutcome, Question, UserQuestions,
};

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_SESSION: &str = "allow-session";
const REJECT: &str = "reject";
const SKIP: &str = "skip";

/// Asks the client of one session. The session's id is known once the session is open,
/// which is after the run (and so this) was built.
#[derive(Clone)]
pub struct AskTheClient {
    connection: ConnectionTo<Client>,
    session: Arc<OnceLock<SessionId>>,
}

impl AskTheClient {
    pub fn new(connection: ConnectionTo<Client>) -> Self {
        AskTheClient {
            connection,
            session: Arc::default(),
        }
    }

    /// Names the session the requests are about, once it is open.
    pub fn opened(&self, id: SessionId) {
        let _ = self.session.set(id);
    }

    /// Sends one permission request and waits for its answer; `None` when the client could
    /// not be asked (no session yet, the connection closed) or answered with an error.
    async fn ask(
        &self,
        call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Option<RequestPermissionOutcome> {
        let session = self.session.get()?.clone();
        let request = RequestPermissionRequest::new(session, call, options);
        let response = self.connection.send_request(request).block_task().await;
        response.ok().map(|answer| answer.outcome)
    }
}

fn option(id: &str, name: impl Into<String>, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption::new(id.to_owned(), name.into(), kind)
}

fn chosen(outcome: &RequestPermissionOutcome) -> Option<&str> {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => Some(&selected.option_id.0),
        _ => None,
    }
}

impl Approver for AskTheClient {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
        Box::pin(async move {
            let call = ToolCallUpdate::new(
                request.call_id.clone(),
                ToolCallUpdateFields::new().title(request.reason.clone()),
            );
            let options = vec![
                option(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                option(
                    ALLOW_SESSION,
                    format!("Allow {} for this session", request.grant),
                    PermissionOptionKind::AllowAlways,
                ),
                option(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ];
            match self.ask(call, options).await {
                None => ApprovalOutcome::Unavailable,
                Some(outcome) => match chosen(&outcome) {
                    Some(ALLOW_ONCE) => ApprovalOutcome::AllowedOnce,
                    Some(ALLOW_SESSION) => ApprovalOutcome::AllowedForSession,
                    Some(_) => ApprovalOutcome::Rejected { reason: None },
                    None => ApprovalOutcome::Cancelled,
                },
            }
        })
    }
}

impl UserQuestions for AskTheClient {
    /// One permission request per question, its choices as the options and "Skip" beside
    /// them. The protocol picks one option per request, so a multiple-choice question is
    /// answered with one choice.
    fn ask(
        &self,
        questions: Vec<Question>,
    ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
        Box::pin(async move {
            let mut answers = Vec::new();
            for question in questions {
                let title = match &question.header {
                    Some(header) => format!("{header}: {}", question.question),
                    None => question.question.clone(),
                };
                let call = ToolCallUpdate::new(
                    format!("question-{}", question.id),
                    ToolCallUpdateFields::new().title(title),
                );
                let mut options: Vec<PermissionOption> = (question.options.iter().enumerate())
                    .map(|(i, choice)| {
                        option(
                            &format!("choice-{i}"),
                            choice.label.clone(),
                            PermissionOptionKind::AllowOnce,
                        )
                    })
                    .collect();
                options.push(option(SKIP, "Skip", PermissionOptionKind::RejectOnce));
                let Some(outcome) = self.ask(call, options).await else {
                    return AskOutcome::Cancelled;
                };
                let selected = match chosen(&outcome) {
                    None => return AskOutcome::Cancelled,
                    Some(id) => (id.strip_prefix("choice-"))
                        .and_then(|i| i.parse::<usize>().ok())
                        .and_then(|i| question.options.get(i))
                        .map(|choice| vec![choice.label.clone()])
                        .unwrap_or_default(),
                };
                answers.push(Answer {
                    id: question.id,
                    selected,
                    custom: None,
                });
            }
            AskOutcome::Answered(answers)
        })
    }
}
