//! The editor's side of [`dsh_core::ask`]: the run's requests, an escalation and the model's
//! questions, become `session/request_permission` requests the client answers, and when the client offers its
//! file system, the file tools read and write through `fs/read_text_file` and
//! `fs/write_text_file`, so they see unsaved changes and the editor's buffers follow theirs. An
//! MCP server's question (elicitation) becomes the editor's own form, `elicitation/create`,
//! where the client said it shows forms.

use std::path::Path;
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
    Answer, Approval, Choice, EditorFiles, EditorFuture, EditorRefused, FormRequest, Questions,
    Request, Requests,
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

    /// Whether the client shows forms, so MCP servers' questions can go to it.
    pub fn forms(&self) -> bool {
        self.forms
    }

    fn session_id(&self) -> Result<SessionId, EditorRefused> {
        (self.session.get().cloned())
            .ok_or_else(|| EditorRefused("the session is not open yet".to_owned()))
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
        let response = self.connection.send_request(request).block_task().await;
        response.ok().map(|answer| answer.outcome)
    }
}

/// Lets the turn's loop send the updates the agent has already reported before a file is read
/// or written through the editor, as the run does before it asks anything: a client shows a
/// permission request on a call it knows, and one that learns of the call after the request
/// takes it for a new call and drops the request. The loop reads the agent's events before
/// it polls the turn again (`session.rs`), so giving way once is enough.
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

impl EditorClient {
    /// Answers the run's requests as they come, each in a task of the connection's (a
    /// question waits for the person while another is asked), until the session's runs are
    /// gone.
    pub async fn answer(self, mut requests: Requests) {
        while let Some(request) = requests.recv().await {
            let editor = self.clone();
            // A connection that has closed asks nobody: the request dropped is cancelled.
            let _ = self.connection.clone().spawn(async move {
                match request {
                    Request::Approval(asked) => editor.approve(asked).await,
                    Request::Questions(asked) => editor.ask_questions(asked).await,
                    Request::Form(asked) => editor.fill(asked).await,
                }
                Ok(())
            });
        }
    }

    /// An escalation as a permission request on its call.
    async fn approve(&self, asked: Approval) {
        let request = &asked.request;
        // The reason goes in the call's content, which the result replaces; the title
        // stays the call's own. A file tool's content is its diff, which it keeps.
        let mut fields = ToolCallUpdateFields::new();
        if !self.shows_diff(&request.tool) {
            let reason = ContentBlock::Text(TextContent::new(request.reason.clone()));
            fields = fields.content(vec![ToolCallContent::Content(Content::new(reason))]);
        }
        let call = ToolCallUpdate::new(request.call_id.clone(), fields);
        // A request that can only be allowed once (an Auto review override) offers no
        // "always".
        let options = (asked.choices().iter())
            .filter_map(|choice| match (choice, &request.grant) {
                (Choice::Once, _) => Some(option(
                    ALLOW_ONCE,
                    "Allow once",
                    PermissionOptionKind::AllowOnce,
                )),
                (Choice::Session, Some(grant)) => Some(option(
                    ALLOW_SESSION,
                    format!("Allow {grant} for this session"),
                    PermissionOptionKind::AllowAlways,
                )),
                (Choice::Session, None) => None,
                (Choice::Deny, _) => {
                    Some(option(REJECT, "Reject", PermissionOptionKind::RejectOnce))
                }
            })
            .collect();
        match self.ask(call, options).await {
            None => asked.unavailable(),
            Some(outcome) => match chosen(&outcome) {
                Some(ALLOW_ONCE) => asked.answer(Choice::Once, None),
                Some(ALLOW_SESSION) => asked.answer(Choice::Session, None),
                Some(_) => asked.answer(Choice::Deny, None),
                None => asked.cancel(),
            },
        }
    }

    /// One permission request per question, its choices as the options and "Skip" beside
    /// them. The protocol picks one option per request, so a multiple-choice question is
    /// answered with one choice.
    async fn ask_questions(&self, asked: Questions) {
        let mut answers = Vec::new();
        for question in &asked.questions {
            let title = match &question.header {
                Some(header) => format!("{header}: {}", question.question),
                None => question.question.clone(),
            };
            // The question is asked on the `ask_user_question` call itself, titled with the
            // question being asked.
            let call = ToolCallUpdate::new(
                asked.call_id.clone(),
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
                return asked.cancel();
            };
            let Some(id) = chosen(&outcome) else {
                return asked.cancel();
            };
            let selected = (id.strip_prefix("choice-"))
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| question.options.get(i))
                .map(|choice| vec![choice.label.clone()])
                .unwrap_or_default();
            answers.push(Answer {
                id: question.id.clone(),
                selected,
                custom: None,
            });
        }
        asked.answer(answers);
    }

    /// An MCP server's form as the editor's own (`elicitation/create`), scoped to the
    /// session; the form's schema goes as the server sent it.
    async fn fill(&self, asked: FormRequest) {
        let form = &asked.form;
        let (Ok(session), Ok(schema)) = (
            self.session_id(),
            serde_json::from_value::<ElicitationSchema>(form.schema.clone()),
        ) else {
            return asked.decline();
        };
        let mode = ElicitationMode::Form(ElicitationFormMode::new(
            ElicitationScope::Session(ElicitationSessionScope::new(session)),
            schema,
        ));
        let message = format!("MCP server \"{}\" asks: {}", form.server, form.message);
        let sent = CreateElicitationRequest::new(mode, message);
        let Ok(response) = self.connection.send_request(sent).block_task().await else {
            return asked.cancel();
        };
        match response.action {
            ElicitationAction::Accept(accepted) => {
                let content = serde_json::to_value(accepted.content.unwrap_or_default())
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                asked.accept(content);
            }
            ElicitationAction::Cancel => asked.cancel(),
            _ => asked.decline(),
        }
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
            response
                .map(|r| r.content)
                .map_err(|e| EditorRefused(e.message))
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: String) -> EditorFuture<'a, ()> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session_id()?, path.to_path_buf(), text);
            after_pending_updates().await;
            let response = self.connection.send_request(request).block_task().await;
            response.map(|_| ()).map_err(|e| EditorRefused(e.message))
        })
    }
}
