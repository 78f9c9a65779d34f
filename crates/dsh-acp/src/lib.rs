//! `dsh acp`: dsh as an Agent Client Protocol agent on stdin and stdout, for editors (Zed,
//! JetBrains IDEs, Neovim and Emacs clients). It speaks protocol v1 through the official SDK
//! (`agent-client-protocol`).
//!
//! A session is one of dsh's own: `session/new` opens one as `dsh` would, `session/load`
//! opens an existing one and replays its history, `session/resume` opens it without the
//! replay, `session/list` lists the folder's sessions from their logs. Each `session/prompt`
//! is a turn of `dsh_core::Agent`, built with `AgentBuilder` like every other front end's; its
//! events go to the editor as they happen (answer and reasoning chunks, tool calls with their
//! status, locations and diffs, the todo list as the plan, context usage), escalations and
//! the model's questions become permission requests, and `session/cancel` stops the turn as
//! Esc does in the terminal UI.
//!
//! The dispatch loop of the SDK runs one handler at a time, so every handler that waits (a
//! session opening, a turn) runs as a task of the connection and answers from there.

mod client;
mod mcp;
mod prompt;
mod session;
mod updates;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, CloseSessionRequest,
    CloseSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionId, SessionInfo, SessionListCapabilities,
    SessionNotification, SessionResumeCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use dsh_core::{Environment, Flags, SetupError, SetupKind};
use serde_json::json;

use crate::session::{Failure, OpenSession, Queued};
use dsh_core::Opening;

/// Why the server could not run.
#[derive(Debug)]
pub struct ServeError(pub String);

/// How many sessions one `session/list` page holds.
const LIST_PAGE: usize = 50;

/// Serves ACP on stdin and stdout until the client closes stdin. `base` holds the command
/// line's settings (`--model`, `--permission-mode`, `--patch`, ...), which every session
/// starts from.
pub fn serve_stdio(base: Flags) -> Result<(), ServeError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ServeError(format!("cannot read the current directory: {e}")))?;
    let runtime = dsh_core::runtime().map_err(ServeError)?;
    let server = Arc::new(Server {
        base,
        cwd,
        client: Mutex::default(),
        sessions: Mutex::default(),
        opening: Mutex::default(),
    });
    let outcome = runtime.block_on(serve(server));
    runtime.shutdown_background();
    outcome.map_err(|e| ServeError(format!("the ACP connection failed: {}", e.message)))
}

struct Server {
    base: Flags,
    /// Where the server was started: the folder listed when `session/list` names none.
    cwd: PathBuf,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<SessionId, Arc<OpenSession>>>,
    /// A lock per session id being loaded or resumed: a second request for the same session
    /// waits for the first and gets the session it opened.
    opening: Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<()>>>>,
}

impl Server {
    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<OpenSession>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn session(&self, id: &SessionId) -> Result<Arc<OpenSession>, Error> {
        self.lock_sessions()
            .get(id)
            .cloned()
            .ok_or_else(|| not_found(id))
    }

    fn client(&self) -> ClientCapabilities {
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Opens a session and keeps it; the client gets its id in the response.
    async fn open(
        &self,
        cwd: &Path,
        opening: Opening,
        servers: &[McpServer],
        connection: ConnectionTo<Client>,
    ) -> Result<Arc<OpenSession>, Error> {
        check_cwd(cwd)?;
        let existing = match &opening {
            Opening::Resume(id) | Opening::Fork(id) => Some(SessionId::new(id.as_str())),
            Opening::New => None,
        };
        let client = self.client();
        let opened = OpenSession::open(&self.base, cwd, opening, servers, connection, &client);
        let session = opened
            .await
            .map_err(|failure| open_failed(failure, existing.as_ref(), cwd))?;
        let session = Arc::new(session);
        self.lock_sessions()
            .insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// An open session, or the session of that id opened now.
    async fn open_existing(
        &self,
        id: &SessionId,
        cwd: &Path,
        servers: &[McpServer],
        connection: ConnectionTo<Client>,
    ) -> Result<Arc<OpenSession>, Error> {
        let lock = {
            let mut opening = self
                .opening
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            opening.entry(id.clone()).or_default().clone()
        };
        let _opening = lock.lock().await;
        if let Ok(open) = self.session(id) {
            return Ok(open);
        }
        self.open(cwd, Opening::Resume(id.0.to_string()), servers, connection)
            .await
    }

    /// Stops every session: their turns, commands, jobs and MCP servers.
    async fn close_all(&self) {
        let open: Vec<Arc<OpenSession>> = self.lock_sessions().drain().map(|(_, s)| s).collect();
        for session in open {
            session.close().await;
        }
    }

    fn list(&self, request: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let cwd = request.cwd.clone().unwrap_or_else(|| self.cwd.clone());
        let home = dsh_core::config::home(&Environment::from_process())
            .map_err(|e| failed(Failure::from(e)))?
            .value;
        let start = match &request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                Error::invalid_params().data(json!({
                    "message": format!("cursor \"{cursor}\" is not one this agent gave")
                }))
            })?,
        };
        let sessions: Vec<SessionInfo> = dsh_core::list_sessions(&home, &cwd)
            .into_iter()
            // A subagent's session is part of its parent's, not one to open on its own.
            .filter(|s| s.parent_session.is_none())
            .skip(start)
            .take(LIST_PAGE + 1)
            .map(|s| {
                let updated = std::fs::metadata(&s.path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(s.created_at, |d| {
                        u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
                    });
                let title = Some(s.name().to_owned()).filter(|t| !t.is_empty());
                SessionInfo::new(s.id, cwd.clone())
                    .title(title)
                    .updated_at(rfc3339(updated))
            })
            .collect();
        let more = sessions.len() > LIST_PAGE;
        let sessions: Vec<SessionInfo> = sessions.into_iter().take(LIST_PAGE).collect();
        let next = more.then(|| (start + LIST_PAGE).to_string());
        Ok(ListSessionsResponse::new(sessions).next_cursor(next))
    }
}

/// `2026-12-05T11:03:58Z`.
fn rfc3339(ms: u64) -> String {
    format!("{}Z", dsh_core::utc_date_time(ms).replacen(' ', "T", 1))
}

/// The protocol requires absolute folders; a relative one is refused rather than guessed.
fn check_cwd(cwd: &Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params().data(json!({
            "message": format!("cwd \"{}\" is not absolute: give the project's absolute path", cwd.display())
        })));
    }
    if !cwd.is_dir() {
        return Err(Error::invalid_params().data(json!({
            "message": format!("cwd \"{}\" is not a folder", cwd.display())
        })));
    }
    Ok(())
}

fn not_found(id: &SessionId) -> Error {
    Error::new(
        -32002,
        format!("no open session {id}: open it with session/load or session/resume first"),
    )
    .data(json!({ "sessionId": id }))
}

/// A failure as the client reads it: dsh's code first, as in every other surface, and its
/// hint in the data when there is one.
fn failed(failure: Failure) -> Error {
    let code = match failure.kind {
        SetupKind::SessionNotFound => -32002,
        _ => -32603,
    };
    let mut data = json!({ "code": failure.code });
    if let Some(hint) = &failure.hint {
        data["hint"] = json!(hint);
    }
    Error::new(code, format!("{}: {}", failure.code, failure.message)).data(data)
}

/// A session that could not be opened: an id the folder has no session of is said as the
/// protocol's client can act on it.
fn open_failed(failure: Failure, existing: Option<&SessionId>, cwd: &Path) -> Error {
    match (failure.kind, existing) {
        (SetupKind::SessionNotFound, Some(id)) => unknown_session(id, cwd),
        _ => failed(failure),
    }
}

/// An id no session of `cwd` has, said as the protocol's client can act on it.
fn unknown_session(id: &SessionId, cwd: &Path) -> Error {
    failed(Failure::from(SetupError::of(
        SetupKind::SessionNotFound,
        format!(
            "no session {id} was recorded in {}: session/list shows the folder's sessions",
            cwd.display()
        ),
    )))
}

fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, Error>,
) -> Result<(), Error> {
    match result {
        Ok(response) => responder.respond(response),
        Err(error) => responder.respond_with_error(error),
    }
}

/// Runs a request's work as a task of the connection, so the dispatch loop goes on to the
/// next message (a cancel, a permission answer) meanwhile, and answers with its outcome.
fn answer_later<T, F>(
    connection: &ConnectionTo<Client>,
    responder: Responder<T>,
    work: F,
) -> Result<(), Error>
where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
    F: Future<Output = Result<T, Error>> + Send + 'static,
{
    connection.spawn(async move { answer(responder, work.await) })
}

impl Server {
    fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        if let Ok(mut client) = self.client.lock() {
            *client = request.client_capabilities.clone();
        }
        let version = request.protocol_version.min(ProtocolVersion::V1);
        InitializeResponse::new(version)
            .agent_capabilities(capabilities())
            .agent_info(
                Implementation::new("dsh", env!("CARGO_PKG_VERSION")).title("dsh".to_owned()),
            )
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let session =
            (self.open(&request.cwd, Opening::New, &request.mcp_servers, connection)).await?;
        Ok(NewSessionResponse::new(session.id.clone()))
    }

    /// Opens the session and replays its history before answering, so the client shows the
    /// session as it was before it sends the next prompt.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let session = self
            .open_existing(
                &request.session_id,
                &request.cwd,
                &request.mcp_servers,
                connection.clone(),
            )
            .await?;
        for update in updates::replay(&session.history(), &session.cwd, &session.catalog) {
            connection.send_notification(SessionNotification::new(session.id.clone(), update))?;
        }
        Ok(LoadSessionResponse::new())
    }

    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<ResumeSessionResponse, Error> {
        self.open_existing(
            &request.session_id,
            &request.cwd,
            &request.mcp_servers,
            connection,
        )
        .await?;
        Ok(ResumeSessionResponse::new())
    }

    async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let removed = self.lock_sessions().remove(&request.session_id);
        let session = removed.ok_or_else(|| not_found(&request.session_id))?;
        session.close().await;
        Ok(CloseSessionResponse::new())
    }

    /// Runs a prompt queued as it arrived (`queued`: a cancel sent after it cancels it even
    /// while it waits for the turn before it).
    async fn prompt(
        queued: Result<(Arc<OpenSession>, Queued), Error>,
        request: PromptRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        let (session, queued) = queued?;
        let text = prompt::message_of(&request.prompt).map_err(|refused| {
            Error::invalid_params().data(json!({ "message": refused.to_string() }))
        })?;
        (session.prompt(queued, text, &connection).await).map_err(failed)
    }
}

async fn serve(server: Arc<Server>) -> Result<(), Error> {
    let on_initialize = server.clone();
    let on_new = server.clone();
    let on_load = server.clone();
    let on_resume = server.clone();
    let on_list = server.clone();
    let on_close = server.clone();
    let on_prompt = server.clone();
    let on_cancel = server.clone();
    let on_exit = server;
    Agent
        .v1()
        .name("dsh")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _connection: ConnectionTo<Client>| {
                responder.respond(on_initialize.initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        connection: ConnectionTo<Client>| {
                let (server, to) = (on_new.clone(), connection.clone());
                let work = async move { server.new_session(request, to).await };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        connection: ConnectionTo<Client>| {
                let (server, to) = (on_load.clone(), connection.clone());
                let work = async move { server.load_session(request, to).await };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest,
                        responder: Responder<ResumeSessionResponse>,
                        connection: ConnectionTo<Client>| {
                let (server, to) = (on_resume.clone(), connection.clone());
                let work = async move { server.resume_session(request, to).await };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        connection: ConnectionTo<Client>| {
                // Every log of the folder is read: not on the dispatch loop.
                let server = on_list.clone();
                let work = async move {
                    let listed = tokio::task::spawn_blocking(move || server.list(&request)).await;
                    listed.map_err(|e| {
                        Error::internal_error().data(json!({
                            "message": format!("listing the sessions failed: {e}")
                        }))
                    })?
                };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest,
                        responder: Responder<CloseSessionResponse>,
                        connection: ConnectionTo<Client>| {
                let server = on_close.clone();
                let work = async move { server.close_session(request).await };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        connection: ConnectionTo<Client>| {
                // In the dispatch loop, so that a cancel read after it counts for it.
                let queued = (on_prompt.session(&request.session_id)).map(|s| {
                    let queued = s.queue();
                    (s, queued)
                });
                let to = connection.clone();
                let work = async move { Server::prompt(queued, request, to).await };
                answer_later(&connection, responder, work)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _connection: ConnectionTo<Client>| {
                if let Ok(session) = on_cancel.session(&notification.session_id) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(Stdio::new(), async |connection: ConnectionTo<Client>| {
            // The editor closed stdin: its sessions' turns are stopped and their processes
            // with them while the connection still runs the turns, so each log ends with
            // its turn closed (aborted), not cut off.
            connection.incoming_closed().await;
            on_exit.close_all().await;
            Ok(())
        })
        .await
}

fn capabilities() -> AgentCapabilities {
    AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(error: &Error) -> &str {
        &error.message
    }

    #[test]
    fn an_unknown_session_is_told_by_its_kind_not_its_code_text() {
        let id = SessionId::new("session-nope");
        let cwd = Path::new("/work/project");
        let not_found = |message: &str| {
            Failure::from(SetupError::of(SetupKind::SessionNotFound, message.into()))
        };
        let unknown = open_failed(not_found("no session"), Some(&id), cwd);
        assert_eq!(i32::from(unknown.code), -32002);
        assert_eq!(
            message(&unknown),
            "SESSION_NOT_FOUND: no session session-nope was recorded in /work/project: \
             session/list shows the folder's sessions"
        );
        // A new session has no id to name: the failure is passed on as it is.
        let new = open_failed(not_found("no session"), None, cwd);
        assert_eq!(message(&new), "SESSION_NOT_FOUND: no session");
        // A turn's failure that happens to carry the code is no unknown session.
        let turn = open_failed(Failure::turn("SESSION_NOT_FOUND", "x"), Some(&id), cwd);
        assert_eq!(i32::from(turn.code), -32603);
        let config = failed(Failure::from(
            SetupError::config("bad".into()).with_hint("fix it"),
        ));
        assert_eq!(i32::from(config.code), -32603);
        assert_eq!(
            config.data,
            Some(json!({"code": "CONFIG", "hint": "fix it"}))
        );
    }
}
