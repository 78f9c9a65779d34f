//! One server's connection: started, listed, called, restarted when a call finds it gone, and
//! stopped with its whole process group.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use dsh_protocol::shown_url;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::{ClientInitializeError, Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::bounded::{BoundedLines, MAX_MESSAGE, Oversized};
use crate::failures::{call_error, http_start_failure};
pub(crate) use crate::handler::Handler;
use crate::handler::{NoticeLimit, Relisting, STDERR_SHOWN, STDERR_WINDOW};
use crate::{McpServer, Transport, oauth};
use dsh_tools::ToolGroup;

/// How many of a server's last stderr lines an error quotes.
const STDERR_TAIL: usize = 8;
/// The longest stderr line passed on; a longer one is passed on in pieces.
const STDERR_LINE: u64 = 8 * 1024;

/// How long a stopping server has to exit once its input is closed, before SIGTERM.
const EXIT_WAIT: Duration = Duration::from_millis(1000);
/// How long it has after SIGTERM, before SIGKILL.
const TERM_WAIT: Duration = Duration::from_millis(1000);
/// How long the stop waits for the last stderr lines once the group is gone.
const STDERR_WAIT: Duration = Duration::from_millis(300);
/// How long an HTTP session has to close.
const HTTP_CLOSE_WAIT: Duration = Duration::from_millis(1000);

type Running = RunningService<RoleClient, Handler>;

/// The running client of one connection, numbered so a failed call drops only the connection
/// it used, never a newer one.
struct Connection {
    number: u64,
    client: Running,
    /// Set when its server sent a message too long to read ([`crate::bounded`]).
    oversized: Oversized,
}

impl Connection {
    /// Ends the session (for stdio, closes the server's input), within [`HTTP_CLOSE_WAIT`].
    async fn close(self) {
        let _ = tokio::time::timeout(HTTP_CLOSE_WAIT, self.client.cancel()).await;
    }
}

/// A server and, while it is connected, the running client.
pub(crate) struct Link {
    pub(crate) server: McpServer,
    running: tokio::sync::Mutex<Option<Connection>>,
    /// Numbers the connections.
    connections: AtomicU64,
    /// The server declared resources when it connected (`list_mcp_resources` then lists them).
    resources: std::sync::atomic::AtomicBool,
    /// The stdio server's process; `closed` once the link is stopped, after which nothing is
    /// spawned again. A plain mutex, so the second Ctrl-C can kill without an await.
    process: Mutex<ProcessSlot>,
    /// The tasks passing the server's stderr on, waited for when it stops.
    stderr_tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Numbers each listing of the tools as it starts, so an older list that arrives late
    /// never replaces a newer one.
    listings: AtomicU64,
    /// Where a new tool list goes when the server says its list changed.
    joins: UnboundedSender<ToolGroup>,
    /// The listings of a changed tool list ([`crate::handler`]).
    pub(crate) relisting: Mutex<Relisting>,
    /// Lines for the user: the server's stderr, re-syncs, failures.
    pub(crate) notices: UnboundedSender<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The run's redactor and who answers questions.
    pub(crate) attached: Attached,
    /// The server's questions being put to the user now (at most one at a time), and how many
    /// were answered: a call's timeout does not count the user's time.
    pub(crate) questions_open: std::sync::atomic::AtomicUsize,
    pub(crate) questions_answered: AtomicU64,
    pub(crate) question_done: tokio::sync::Notify,
    /// What of the notices of declined questions is shown ([`crate::elicit`]).
    pub(crate) declined: Mutex<NoticeLimit>,
}

/// What a link gets from the run beyond its server.
#[derive(Clone, Default)]
pub(crate) struct Attached {
    /// The run's redactor, told of each renewed token.
    pub redactor: Option<dsh_tools::Redactor>,
    /// Who answers the server's questions (elicitation).
    pub questions: Option<Arc<dyn dsh_tools::UserQuestions>>,
}

#[derive(Default)]
struct ProcessSlot {
    closed: bool,
    current: Option<ServerProcess>,
    /// The groups of processes taken out to be stopped and not yet gone: a second Ctrl-C
    /// during their stop sequence kills them too.
    stopping: Vec<libc::pid_t>,
}

/// A stdio server's child, the leader of its own process group.
struct ServerProcess {
    child: tokio::process::Child,
    group: libc::pid_t,
    /// Set once the stop sequence has run, so dropping it sends nothing.
    stopped: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // What a panicking holder left is still the truth about the processes: keep using it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Link {
    pub(crate) fn new(
        server: McpServer,
        joins: UnboundedSender<ToolGroup>,
        notices: UnboundedSender<String>,
        attached: Attached,
    ) -> Arc<Link> {
        Arc::new(Link {
            relisting: Relisting::new(&server.name),
            declined: Mutex::new(NoticeLimit::new(
                &server.name,
                "declined questions",
                crate::elicit::DECLINED_SHOWN,
                crate::elicit::DECLINED_WINDOW,
            )),
            server,
            running: tokio::sync::Mutex::new(None),
            connections: AtomicU64::new(0),
            resources: std::sync::atomic::AtomicBool::new(false),
            process: Mutex::new(ProcessSlot::default()),
            stderr_tasks: Mutex::new(Vec::new()),
            listings: AtomicU64::new(0),
            joins,
            notices,
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
            attached,
            questions_open: std::sync::atomic::AtomicUsize::new(0),
            questions_answered: AtomicU64::new(0),
            question_done: tokio::sync::Notify::new(),
        })
    }

    /// Connects and lists the tools, within the server's startup timeout.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<ToolGroup, String> {
        let limit = self.server.startup_timeout;
        let started = tokio::time::timeout(limit, async {
            let (_, peer, _) = self.connect().await?;
            let group = self.list_tools(&peer).await?;
            // Only a server that started is offered for its resources.
            let resources = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some());
            self.resources.store(resources, Ordering::SeqCst);
            Ok(group)
        })
        .await;
        match started {
            Ok(result) => result,
            Err(_) => Err(format!(
                "it did not answer within {} ms{}; raise startup_timeout_ms if it needs longer",
                limit.as_millis(),
                self.stderr_note()
            )),
        }
    }

    /// Sends a listing to the registry, which keeps the newest.
    pub(crate) fn publish(&self, group: ToolGroup) {
        let _ = self.joins.send(group);
    }

    /// Whether the server declared resources.
    pub(crate) fn has_resources(&self) -> bool {
        self.resources.load(Ordering::SeqCst)
    }

    /// Calls `raw` with `arguments` within the call timeout, restarting the connection first
    /// when it was lost.
    pub(crate) async fn call(
        self: &Arc<Self>,
        raw: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new(raw.to_owned());
        params.arguments = Some(arguments);
        self.request(|peer| async move { peer.call_tool(params).await })
            .await
    }

    /// Every resource the server lists, all pages.
    pub(crate) async fn list_resources(
        self: &Arc<Self>,
    ) -> Result<Vec<rmcp::model::Resource>, String> {
        self.request(|peer| async move { peer.list_all_resources().await })
            .await
    }

    /// The contents of the resource at `uri`.
    pub(crate) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
    ) -> Result<rmcp::model::ReadResourceResult, String> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        self.request(|peer| async move { peer.read_resource(params).await })
            .await
    }

    /// One request within the call timeout, on the live connection or, when it was lost, a new
    /// one; a request whose transport failed drops the connection it used.
    async fn request<T, F>(
        self: &Arc<Self>,
        send: impl FnOnce(Peer<RoleClient>) -> F,
    ) -> Result<T, String>
    where
        F: std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let (connection, peer, oversized) = match self.live_peer().await {
            Some(live) => live,
            None => tokio::time::timeout(self.server.startup_timeout, self.connect())
                .await
                .map_err(|_| {
                    format!(
                        "MCP server \"{}\" was disconnected and did not come back within {} ms",
                        self.server.name,
                        self.server.startup_timeout.as_millis()
                    )
                })?
                .map_err(|e| {
                    format!(
                        "MCP server \"{}\" was disconnected and could not be restarted: {e}",
                        self.server.name
                    )
                })?,
        };
        let limit = self.server.call_timeout;
        match self.within_call_timeout(send(peer)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => {
                if matches!(
                    error,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    self.drop_connection(connection).await;
                }
                if oversized.load(Ordering::SeqCst) {
                    return Err(format!(
                        "MCP server \"{}\" sent a message of more than {} MiB, more than dsh \
                         reads from a server (most likely this call's result), so dsh closed the \
                         connection; the next call starts it again. Ask the tool for less at a \
                         time",
                        self.server.name,
                        MAX_MESSAGE >> 20
                    ));
                }
                if let Some(message) = self.refusal(&error) {
                    return Err(message);
                }
                Err(self.redact(call_error(&self.server.name, &error)))
            }
            Err(_) => Err(format!(
                "MCP error -32001: Request timed out after {} ms (call_timeout_ms of MCP server \
                 \"{}\")",
                limit.as_millis(),
                self.server.name
            )),
        }
    }

    /// `call` within the call timeout, not counting the time the user spends on a question the
    /// server asked meanwhile: the timer starts again when a question is answered.
    async fn within_call_timeout<T>(
        &self,
        call: impl std::future::Future<Output = T>,
    ) -> Result<T, tokio::time::error::Elapsed> {
        let limit = self.server.call_timeout;
        let mut call = std::pin::pin!(call);
        loop {
            let asked = self.questions_answered.load(Ordering::SeqCst);
            match tokio::time::timeout(limit, &mut call).await {
                Ok(done) => return Ok(done),
                Err(elapsed) => {
                    let open = self.questions_open.load(Ordering::SeqCst) > 0;
                    let answered = self.questions_answered.load(Ordering::SeqCst) != asked;
                    if !open && !answered {
                        return Err(elapsed);
                    }
                    // Wait for the answer, then give the call its time again.
                    loop {
                        let done = self.question_done.notified();
                        if self.questions_open.load(Ordering::SeqCst) == 0 {
                            break;
                        }
                        done.await;
                    }
                }
            }
        }
    }

    /// Stops the server for good: the client closed (for stdio, the server's input), then the
    /// process group's stop sequence, then the last stderr lines passed on. Reached only
    /// through [`crate::McpServers::shutdown`], whose boxing keeps it compiled once.
    pub(crate) async fn shutdown(&self) {
        let process = self.take_process(true);
        let connection = self.running.lock().await.take();
        if let Some(connection) = connection {
            connection.close().await;
        }
        if let Some(process) = process {
            self.stop_process(process).await;
        }
        // Together: a pipe still held open by a process that left the group costs the wait
        // once, not once per restart.
        let tasks: Vec<_> = lock(&self.stderr_tasks).drain(..).collect();
        let _ = tokio::time::timeout(STDERR_WAIT, futures_util::future::join_all(tasks)).await;
    }

    /// SIGKILL to the server's process group, now.
    pub(crate) fn kill_now(&self) {
        let mut slot = lock(&self.process);
        slot.closed = true;
        // Dropping it kills the group.
        slot.current = None;
        for group in &slot.stopping {
            signal_group(*group, libc::SIGKILL);
        }
    }

    /// Takes the current process out to be stopped, its group still known to
    /// [`Link::kill_now`] until [`Link::stop_process`] is done; `close` also keeps any new
    /// one from being spawned.
    fn take_process(&self, close: bool) -> Option<ServerProcess> {
        let mut slot = lock(&self.process);
        slot.closed |= close;
        let process = slot.current.take()?;
        slot.stopping.push(process.group);
        Some(process)
    }

    async fn stop_process(&self, process: ServerProcess) {
        /// Forgets the group however the stop ends, finished or dropped half-way (a call's
        /// reconnect that timed out, a run stopped by a signal; the process's own drop kills
        /// the group then): a forgotten pid that was reused must never be signalled.
        struct Forget<'a>(&'a Link, libc::pid_t);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                lock(&self.0.process).stopping.retain(|g| *g != self.1);
            }
        }
        let _forget = Forget(self, process.group);
        process.stop().await;
    }

    /// Forgets a connection that failed under a call, so the next call connects again. A
    /// stdio transport notices a dead server by itself; an HTTP one keeps its session and
    /// would fail every later call the same way.
    async fn drop_connection(&self, number: u64) {
        let connection = {
            let mut running = self.running.lock().await;
            if running.as_ref().is_some_and(|c| c.number == number) {
                running.take()
            } else {
                None
            }
        };
        if let Some(connection) = connection {
            connection.close().await;
        }
    }

    /// What to tell the user when the server refused a request for want of a sign-in or of
    /// scope (remembered for the next login); `None` for any other failure.
    fn refusal(&self, error: &(dyn std::error::Error + 'static)) -> Option<String> {
        let Transport::Http { url, oauth, .. } = &self.server.transport else {
            return None;
        };
        let refusal = oauth::Refusal::find(error)?;
        Some(refusal.report(&self.server.name, url, oauth.as_ref()))
    }

    /// Why connecting failed, a refusal first.
    fn start_failure(&self, error: &ClientInitializeError, url: &str) -> String {
        self.refusal(error)
            .unwrap_or_else(|| http_start_failure(error, url, &self.server.name))
    }

    /// `message` as errors may show it: an HTTP server's URL secrets (query, password) taken
    /// out wherever a library quoted the URL.
    fn redact(&self, message: String) -> String {
        match &self.server.transport {
            Transport::Http { url, .. } => hide_url_secrets(&message, url),
            Transport::Stdio { .. } => message,
        }
    }

    /// The current connection's number and peer, while it is alive.
    async fn live_peer(&self) -> Option<(u64, Peer<RoleClient>, Oversized)> {
        let running = self.running.lock().await;
        running
            .as_ref()
            .filter(|c| !c.client.is_closed() && !c.client.peer().is_transport_closed())
            .map(|c| (c.number, c.client.peer().clone(), c.oversized.clone()))
    }

    /// Starts the transport and the MCP handshake; the running client replaces any old one,
    /// whose process is stopped first.
    async fn connect(self: &Arc<Self>) -> Result<(u64, Peer<RoleClient>, Oversized), String> {
        let oversized = Oversized::default();
        let handler = Handler {
            link: Arc::downgrade(self),
        };
        let old = self.running.lock().await.take();
        if let Some(old) = old {
            old.close().await;
        }
        let running = match &self.server.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                if let Some(old) = self.take_process(false) {
                    self.stop_process(old).await;
                }
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .env_clear()
                    .envs(env.iter().cloned())
                    .current_dir(cwd)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    // Its own process group: a Ctrl-C at the terminal reaches dsh, which then
                    // stops the group, the server's own children included.
                    .process_group(0)
                    .kill_on_drop(true);
                let dsh = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
                // SAFETY: between fork and exec the hook makes system calls only: prctl,
                // getppid and, for an orphan, _exit.
                unsafe {
                    cmd.pre_exec(move || {
                        // A dsh killed outright (SIGKILL from a supervisor) takes the server
                        // with it. The signal follows the spawning thread, a runtime thread
                        // (never the blocking pool's), which lives as long as the runtime.
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                        // Killed before the line above took effect: no server for nobody.
                        if libc::getppid() != dsh {
                            libc::_exit(1);
                        }
                        Ok(())
                    });
                }
                let (stdout, stdin, stderr_closed) = {
                    // Spawned and recorded under the lock, so a stop either finds it or
                    // keeps it from being spawned at all.
                    let mut slot = lock(&self.process);
                    if slot.closed {
                        return Err("dsh is stopping".into());
                    }
                    let mut child = cmd.spawn().map_err(|e| {
                        format!(
                            "cannot run \"{}\": {e}; check the server's command",
                            command.to_string_lossy()
                        )
                    })?;
                    let pipes = (child.stdout.take(), child.stdin.take(), child.stderr.take());
                    let group = child
                        .id()
                        .and_then(|pid| libc::pid_t::try_from(pid).ok())
                        .unwrap_or(0);
                    slot.current = Some(ServerProcess {
                        child,
                        group,
                        stopped: false,
                    });
                    let (Some(stdout), Some(stdin), Some(stderr)) = pipes else {
                        return Err("its pipes could not be set up".into());
                    };
                    (stdout, stdin, self.follow_stderr(stderr))
                };
                let transport = AsyncRwTransport::new_client(
                    BoundedLines::new(stdout, oversized.clone()),
                    stdin,
                )
                .with_max_line_length(MAX_MESSAGE + 1);
                match handler.serve(transport).await {
                    Ok(running) => running,
                    Err(e) => {
                        // A server that failed at once may not have had its last words read
                        // yet: they are what tells the user why.
                        let _ = tokio::time::timeout(STDERR_WAIT, stderr_closed).await;
                        return Err(format!("{e}{}", self.stderr_note()));
                    }
                }
            }
            Transport::Http {
                url,
                headers,
                oauth,
            } => {
                let config = transport_config(url, headers)?;
                let failed = |e: ClientInitializeError| self.start_failure(&e, url);
                let authorized = match oauth {
                    Some(setup) => {
                        oauth::authorized_client(
                            setup,
                            url,
                            http_client()?,
                            self.attached.redactor.clone(),
                        )
                        .await?
                    }
                    None => None,
                };
                match authorized {
                    Some(client) => handler
                        .serve(StreamableHttpClientTransport::with_client(client, config))
                        .await
                        .map_err(failed)?,
                    None => handler
                        .serve(StreamableHttpClientTransport::with_client(
                            http_client()?,
                            config,
                        ))
                        .await
                        .map_err(failed)?,
                }
            }
        };
        let peer = running.peer().clone();
        // The lifecycle's rule: a client that does not speak the version the server settled
        // on disconnects, rather than misread what comes next.
        if let Some(info) = peer.peer_info() {
            let version = &info.protocol_version;
            if !ProtocolVersion::KNOWN_VERSIONS.contains(version) {
                let _ = tokio::time::timeout(HTTP_CLOSE_WAIT, running.cancel()).await;
                let known: Vec<String> = (ProtocolVersion::KNOWN_VERSIONS.iter())
                    .map(ToString::to_string)
                    .collect();
                return Err(format!(
                    "it answered with MCP protocol version {version}, which dsh does not speak \
                     (dsh speaks {})",
                    known.join(", ")
                ));
            }
        }
        let number = self.connections.fetch_add(1, Ordering::SeqCst);
        *self.running.lock().await = Some(Connection {
            number,
            client: running,
            oversized: oversized.clone(),
        });
        Ok((number, peer, oversized))
    }

    /// Lists every page of the server's tools, numbered when the listing starts.
    pub(crate) async fn list_tools(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Result<ToolGroup, String> {
        let listing = self.listings.fetch_add(1, Ordering::SeqCst) + 1;
        let listed = peer.list_all_tools().await.map_err(|e| {
            // A server that lets anyone connect may still want a sign-in to list its tools.
            self.refusal(&e).unwrap_or_else(|| {
                self.redact(format!(
                    "listing its tools failed: {e}{}",
                    self.stderr_note()
                ))
            })
        })?;
        Ok(ToolGroup {
            name: self.server.name.clone(),
            listing,
            tools: crate::tool::bridge(self, listed)?,
        })
    }

    /// Forwards the server's stderr as notices and keeps its last lines for errors. It reads
    /// to the end whatever the bytes are: a server whose stderr is left unread blocks, or
    /// dies of SIGPIPE once the pipe is closed. The receiver hears when the pipe is closed.
    fn follow_stderr(
        &self,
        stderr: tokio::process::ChildStderr,
    ) -> tokio::sync::oneshot::Receiver<()> {
        let tail = self.stderr_tail.clone();
        let notices = self.notices.clone();
        let name = self.server.name.clone();
        let (closed, on_closed) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stderr);
            let mut bytes = Vec::new();
            let mut shown = NoticeLimit::new(&name, "stderr lines", STDERR_SHOWN, STDERR_WINDOW);
            loop {
                bytes.clear();
                match (&mut reader)
                    .take(STDERR_LINE)
                    .read_until(b'\n', &mut bytes)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&bytes);
                let line = line.trim_end_matches(['\n', '\r']).to_owned();
                for notice in shown.pass(format!("mcp {name}: {line}"), Instant::now()) {
                    let _ = notices.send(notice);
                }
                let mut tail = lock(&tail);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            if let Some(notice) = shown.held_back() {
                let _ = notices.send(notice);
            }
            let _ = closed.send(());
        });
        lock(&self.stderr_tasks).push(task);
        on_closed
    }

    /// The server's last stderr lines, for an error message; empty when it wrote none.
    fn stderr_note(&self) -> String {
        let tail = lock(&self.stderr_tail);
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last stderr lines: {}", lines.join(" | "))
    }
}

impl ServerProcess {
    /// The stop sequence. The server's input is closed by now (its client is gone), so a
    /// well-behaved server is already exiting; one that is not gets SIGTERM, then SIGKILL.
    /// Whatever it left running in its group is killed last.
    async fn stop(mut self) {
        if tokio::time::timeout(EXIT_WAIT, self.child.wait())
            .await
            .is_err()
        {
            signal_group(self.group, libc::SIGTERM);
            if tokio::time::timeout(TERM_WAIT, self.child.wait())
                .await
                .is_err()
            {
                signal_group(self.group, libc::SIGKILL);
                let _ = tokio::time::timeout(TERM_WAIT, self.child.wait()).await;
            }
        }
        signal_group(self.group, libc::SIGKILL);
        self.stopped = true;
    }
}

impl Drop for ServerProcess {
    /// The last resort, when the stop sequence never ran (a second signal, a run that ends
    /// by another path): the whole group is killed at once. The child's own kill-on-drop
    /// covers a group that could not be read.
    fn drop(&mut self) {
        if !self.stopped {
            signal_group(self.group, libc::SIGKILL);
        }
    }
}

fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    if group > 0 {
        // SAFETY: killpg takes plain integers; the group is one this process created and the
        // worst outcome of a group already gone is ESRCH, which is ignored.
        unsafe {
            libc::killpg(group, signal);
        }
    }
}

/// `message` with `url` shown as [`shown_url`] shows it wherever it quotes it (an HTTP
/// library's error names the URL it failed on, as given or as parsed), and any of its query,
/// password or long user name left elsewhere taken out.
pub(crate) fn hide_url_secrets(message: &str, url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return message.replace(url, &shown_url(url));
    };
    let mut out = message
        .replace(url, &shown_url(url))
        .replace(parsed.as_str(), &shown_url(parsed.as_str()));
    // A user name alone can be the token (`https://TOKEN@host`); a short one is a name, and
    // taking it out of every word would garble the message.
    let user = Some(parsed.username()).filter(|user| user.len() >= 8);
    for secret in [parsed.query(), parsed.password(), user, parsed.fragment()]
        .into_iter()
        .flatten()
    {
        if !secret.is_empty() {
            out = out.replace(secret, "[hidden]");
        }
    }
    out
}

/// A reqwest client for streamable HTTP, with the same TLS set-up as the model clients.
/// The transport settings of an HTTP server: its URL and the configured headers.
pub(crate) fn transport_config(
    url: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header \"{name}\" cannot be sent: {e}"))?;
        let value = reqwest::header::HeaderValue::try_from(value.as_str())
            .map_err(|e| format!("header \"{name}\" has a value that cannot be sent: {e}"))?;
        config.custom_headers.insert(name, value);
    }
    Ok(config)
}

/// How dsh introduces itself to every server.
pub(crate) fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("dsh", env!("CARGO_PKG_VERSION")),
    )
}

pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot set up HTTP: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_errors_keep_no_token() {
        assert_eq!(
            shown_url("https://mcp.example.com/v1?token=s3cret"),
            "https://mcp.example.com/v1?[hidden]"
        );
        assert_eq!(
            shown_url("https://user:pw@mcp.example.com/"),
            "https://[hidden]@mcp.example.com/"
        );
        assert_eq!(
            hide_url_secrets(
                "error sending request for url (https://h/v1?token=s3cret)",
                "https://h/v1?token=s3cret"
            ),
            "error sending request for url (https://h/v1?[hidden])"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
    }
}
