//! The editor's side of [`dsh_core::ask`]: an escalation and the model's questions become
//! `session/request_permission` requests the client answers, and when the client offers its
//! file system, the file tools read and write through `fs/read_text_file` and
//! `fs/write_text_file`, so they see unsaved changes and the editor's buffers follow theirs. An
//! MCP server's question (elicitation) becomes the editor's own form, `elicitation/create`,
//! where the client said it shows forms.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, Content, ContentBlock, CreateElicitationRequest, ElicitationAction,
    ElicitationFormMode, ElicitationMode, ElicitationSchema, ElicitationScope,
    ElicitationSessionScope, FileSystemCapabilities, PermissionOption, PermissionOptionKind,
    ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest, SessionId,
    TextContent, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};
use dsh_core::ToolCatalog;
use dsh_core::ask::{
    Answer, ApprovalOutcome, ApprovalRequest, Approver, AskOutcome, EditorFiles, EditorFuture,
    Elicitation, ElicitationAnswer, Question, UserQuestions,
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
    /// The run's tools, once it is open: whether a call shows a diff.
    catalog: Arc<OnceLock<ToolCatalog>>,
    /// What the client said it offers at `initialize`.
    fs: FileSystemCapabilities,
    /// Whether it shows forms (`elicitation/create` in form mode): then the MCP servers'
    /// questions go to it.
    forms: bool,
}

impl EditorClient {
    pub fn new(connection: ConnectionTo<Client>, capabilities: &ClientCapabilities) -> Self {
        EditorClient {
            connection,
            session: Arc::default(),
            catalog: Arc::default(),
            fs: capabilities.fs.clone(),
            forms: (capabilities.elicitation.as_ref()).is_some_and(|e| e.form.is_some()),
        }
    }

    fn session_id(&self) -> Result<SessionId, String> {
        (self.session.get().cloned()).ok_or_else(|| "the session is not open yet".to_owned())
    }

    /// Names the session the requests are about, and its tools, once it is open.
    pub fn opened(&self, id: SessionId, catalog: ToolCatalog) {
        let _ = self.session.set(id);
        let _ = self.catalog.set(catalog);
    }

    /// Whether calls of `tool` show the change they make as a diff (a file tool's).
    fn shows_diff(&self, tool: &str) -> bool {
        (self.catalog.get())
            .and_then(|catalog| catalog.facts(tool))
            .is_some_and(|facts| facts.kind == dsh_core::ToolKind::Edit)
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
        after_pending_updates().await;
        let response = self.connection.send_request(request).block_task().await;
        response.ok().map(|answer| answer.outcome)
    }
}

/// Lets the turn's loop send the updates the agent has already reported (the `tool_call` a
/// request is about, above all) before a request goes out: a client shows a permission
/// request on a call it knows, and one that learns of the call after the request takes it
/// for a new call and drops the request. The loop reads the agent's events before it polls
/// the turn again (`session.rs`), so giving way once is enough.
async fn after_pending_updates() {
    tokio::task::yield_now().await;
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
            // The reason goes in the call's content, which the result replaces; the title
            // stays the call's own. A file tool's content is its diff, which it keeps.
            let mut fields = ToolCallUpdateFields::new();
            if !self.shows_diff(&request.tool) {
                let reason = ContentBlock::Text(TextContent::new(request.reason.clone()));
                fields = fields.content(vec![ToolCallContent::Content(Content::new(reason))]);
            }
            let call = ToolCallUpdate::new(request.call_id.clone(), fields);
            let mut options = vec![option(
                ALLOW_ONCE,
                "Allow once",
                PermissionOptionKind::AllowOnce,
            )];
            // A request that can only be allowed once (an Auto review override) offers no
            // "always".
            if let Some(grant) = &request.grant {
                options.push(option(
                    ALLOW_SESSION,
                    format!("Allow {grant} for this session"),
                    PermissionOptionKind::AllowAlways,
                ));
            }
            options.push(option(REJECT, "Reject", PermissionOptionKind::RejectOnce));
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
        call_id: &str,
        questions: Vec<Question>,
    ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
        let call_id = call_id.to_owned();
        Box::pin(async move {
            let mut answers = Vec::new();
            for question in questions {
                let title = match &question.header {
                    Some(header) => format!("{header}: {}", question.question),
                    None => question.question.clone(),
                };
                // The question is asked on the `ask_user_question` call itself, titled with
                // the question being asked.
                let call =
                    ToolCallUpdate::new(call_id.clone(), ToolCallUpdateFields::new().title(title));
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

    fn can_elicit(&self) -> bool {
        self.forms
    }

    /// The server's question as the editor's own form (`elicitation/create`), scoped to the
    /// session; the form's schema goes as the server sent it.
    fn elicit(
        &self,
        request: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(async move {
            let (Ok(session), Ok(schema)) = (
                self.session_id(),
                serde_json::from_value::<ElicitationSchema>(request.schema),
            ) else {
                return ElicitationAnswer::Decline;
            };
            let mode = ElicitationMode::Form(ElicitationFormMode::new(
                ElicitationScope::Session(ElicitationSessionScope::new(session)),
                schema,
            ));
            let message = format!(
                "MCP server \"{}\" asks: {}",
                request.server, request.message
            );
            after_pending_updates().await;
            let sent = CreateElicitationRequest::new(mode, message);
            let Ok(response) = self.connection.send_request(sent).block_task().await else {
                return ElicitationAnswer::Cancel;
            };
            match response.action {
                ElicitationAction::Accept(accepted) => {
                    let content = serde_json::to_value(accepted.content.unwrap_or_default())
                        .ok()
                        .and_then(|v| v.as_object().cloned())
                        .unwrap_or_default();
                    ElicitationAnswer::Accept(content)
                }
                ElicitationAction::Cancel => ElicitationAnswer::Cancel,
                _ => ElicitationAnswer::Decline,
            }
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
            after_pending_updates().await;
            let response = self.connection.send_request(request).block_task().await;
            response.map(|r| r.content).map_err(|e| e.message)
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: String) -> EditorFuture<'a, ()> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session_id()?, path.to_path_buf(), text);
            after_pending_updates().await;
            let response = self.connection.send_request(request).block_task().await;
            response.map(|_| ()).map_err(|e| e.message)
        })
    }
}
