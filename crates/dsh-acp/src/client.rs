//! The editor's side of [`dsh_core::ask`]: an escalation and the model's questions become
//! `session/request_permission` requests the client answers, and when the client offers its
//! file system, the file tools read and write through `fs/read_text_file` and
//! `fs/write_text_file`, so they see unsaved changes and the editor's buffers follow theirs.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, PermissionOption, PermissionOptionKind, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, ToolCallUpdate,
    ToolCallUpdateFields, WriteTextFileRequest,
};
use dsh_core::ask::{
    Answer, ApprovalOutcome, ApprovalRequest, Approver, AskOutcome, EditorFiles, EditorFuture,
    Question, UserQuestions,
};

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_SESSION: &str = "allow-session";
const REJECT: &str = "reject";
const SKIP: &str = "skip";

/// The client of one session. The session's id is known once the session is open, which is
/// after the run (and so this) was built.
#[derive(Clone)]
pub struct EditorClient {
    connection: ConnectionTo<Client>,
    session: Arc<OnceLock<SessionId>>,
    /// What the client said it offers at `initialize`.
    fs: FileSystemCapabilities,
}

impl EditorClient {
    pub fn new(connection: ConnectionTo<Client>, fs: FileSystemCapabilities) -> Self {
        EditorClient {
            connection,
            session: Arc::default(),
            fs,
        }
    }

    fn session_id(&self) -> Result<SessionId, String> {
        (self.session.get().cloned()).ok_or_else(|| "the session is not open yet".to_owned())
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

impl Approver for EditorClient {
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

impl UserQuestions for EditorClient {
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

impl EditorFiles for EditorClient {
    fn reads(&self) -> bool {
        self.fs.read_text_file
    }

    fn writes(&self) -> bool {
        self.fs.write_text_file
    }

    fn read_text<'a>(&'a self, path: &'a Path) -> EditorFuture<'a, String> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.session_id()?, path.to_path_buf());
            let response = self.connection.send_request(request).block_task().await;
            response.map(|r| r.content).map_err(|e| e.message)
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: String) -> EditorFuture<'a, ()> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session_id()?, path.to_path_buf(), text);
            let response = self.connection.send_request(request).block_task().await;
            response.map(|_| ()).map_err(|e| e.message)
        })
    }
}
