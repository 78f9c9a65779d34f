//! What a server sends on its own: a changed tool list, a question, its stderr. A server can
//! send any of them without end, so each is bounded here: a changed list is listed again at
//! most once at a time (one more listing is owed when it changed meanwhile, however often it
//! said so) and at most once every [`RELIST_GAP`]; a listing the same as the last one is
//! not passed on (a front end with no turn running keeps what is passed on until the next
//! turn); and the notices of each kind are limited by [`NoticeLimit`].

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability,
};
use rmcp::service::{NotificationContext, Peer};
use rmcp::{ClientHandler, RoleClient};

use crate::link::{Link, client_config};
use dsh_protocol::ToolSpec;
use dsh_tools::ToolGroup;

/// How many of a server's stderr lines are shown in each [`STDERR_WINDOW`].
pub(crate) const STDERR_SHOWN: u32 = 50;
pub(crate) const STDERR_WINDOW: Duration = Duration::from_secs(10);

/// How many notices of a changed tool list are shown in each [`CHANGES_WINDOW`]: a server
/// that keeps changing its list would otherwise say so once a second.
const CHANGES_SHOWN: u32 = 5;
const CHANGES_WINDOW: Duration = Duration::from_secs(60);

/// The least time from the start of one listing of a changed tool list to the next: a
/// server that says its list changed each time it is listed is listed once a second.
const RELIST_GAP: Duration = Duration::from_secs(1);

/// What of one kind of a server's notices is shown: up to `most` a window, then one line that
/// says how many were held back, when the next window starts or the stream ends.
pub(crate) struct NoticeLimit {
    server: String,
    /// What is counted, in the plural: "stderr lines".
    kind: &'static str,
    most: u32,
    length: Duration,
    window: Option<Instant>,
    shown: u32,
    held: u64,
}

impl NoticeLimit {
    pub(crate) fn new(server: &str, kind: &'static str, most: u32, length: Duration) -> Self {
        NoticeLimit {
            server: server.to_owned(),
            kind,
            most,
            length,
            window: None,
            shown: 0,
            held: 0,
        }
    }

    /// The notices to send for `line`, read at `now`.
    pub(crate) fn pass(&mut self, line: String, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        if self
            .window
            .is_none_or(|start| now.duration_since(start) >= self.length)
        {
            out.extend(self.held_back());
            self.window = Some(now);
            self.shown = 0;
        }
        if self.shown < self.most {
            self.shown += 1;
            out.push(line);
        } else {
            self.held += 1;
        }
        out
    }

    /// The line that says how many were not shown, if any were; counting starts again.
    pub(crate) fn held_back(&mut self) -> Option<String> {
        let held = std::mem::take(&mut self.held);
        (held > 0).then(|| {
            format!(
                "mcp {}: {held} more {} not shown (more than {} in {} s)",
                self.server,
                self.kind,
                self.most,
                self.length.as_secs()
            )
        })
    }
}

/// The listings of a changed tool list: whether one runs, whether another is owed (and on
/// which connection: the latest that said so), when the last one started, what the last one
/// passed on held, and what of their notices is shown.
pub(crate) struct Relisting {
    running: bool,
    owed: Option<Peer<RoleClient>>,
    started: Option<tokio::time::Instant>,
    last: Option<Vec<ToolSpec>>,
    shown: NoticeLimit,
}

impl Relisting {
    pub(crate) fn new(server: &str) -> Mutex<Relisting> {
        Mutex::new(Relisting {
            running: false,
            owed: None,
            started: None,
            last: None,
            shown: NoticeLimit::new(server, "tool list changes", CHANGES_SHOWN, CHANGES_WINDOW),
        })
    }
}

/// What a listing offers the model, to tell a changed list from the same one again.
fn specs(group: &ToolGroup) -> Vec<ToolSpec> {
    (group.tools.iter())
        .map(|tool| ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters().json_schema().clone(),
        })
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Clears `running` when the listing task is dropped half-way (its connection closed), so
/// the server's later changes are still listed.
struct Running<'a> {
    state: &'a Mutex<Relisting>,
    ended: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.ended {
            lock(self.state).running = false;
        }
    }
}

impl Link {
    /// The server said its tool list changed: it is listed again, unless a listing runs,
    /// which then lists once more when it is done. rmcp hands each notification to a task of
    /// its own, so without this a server that sends a flood of them had dsh list its tools
    /// once for each, all at once.
    async fn tool_list_changed(self: &Arc<Self>, peer: &Peer<RoleClient>) {
        {
            let mut state = lock(&self.relisting);
            if state.running {
                state.owed = Some(peer.clone());
                return;
            }
            state.running = true;
            state.owed = None;
        }
        let mut peer = peer.clone();
        let mut running = Running {
            state: &self.relisting,
            ended: false,
        };
        loop {
            // The gap counts from the last listing of any task: a change said just after a
            // listing ended starts a task of its own.
            let started = lock(&self.relisting).started;
            if let Some(started) = started {
                tokio::time::sleep_until(started + RELIST_GAP).await;
            }
            lock(&self.relisting).started = Some(tokio::time::Instant::now());
            let listed = self.list_tools(&peer).await;
            let mut state = lock(&self.relisting);
            let line = match listed {
                Ok(group) => {
                    let now = specs(&group);
                    if state.last.as_ref() == Some(&now) {
                        None
                    } else {
                        state.last = Some(now);
                        let line = format!(
                            "mcp {}: tool list changed, now {} tools",
                            self.server.name,
                            group.tools.len()
                        );
                        self.publish(group);
                        Some(line)
                    }
                }
                Err(e) => Some(format!(
                    "mcp {}: the tool list changed but could not be read again ({e}); keeping \
                     the old one",
                    self.server.name
                )),
            };
            let shown = line.map(|line| state.shown.pass(line, Instant::now()));
            for notice in shown.into_iter().flatten() {
                let _ = self.notices.send(notice);
            }
            // Under the same lock as a notification that finds it running and owes a listing.
            match state.owed.take() {
                Some(latest) => peer = latest,
                None => {
                    state.running = false;
                    running.ended = true;
                    return;
                }
            }
        }
    }
}

/// Answers the server's notifications: a changed tool list is listed again and replaces the
/// old one from the next request on.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) link: Weak<Link>,
}

impl Handler {
    /// The handler of a connection that is no link's (a login's own requests): it asks for no
    /// elicitation and lets notifications go. One handler type for every connection means
    /// rmcp's client is compiled once per transport, not once per handler as well.
    pub(crate) fn detached() -> Handler {
        Handler { link: Weak::new() }
    }
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Some(link) = self.link.upgrade() {
            link.tool_list_changed(&context.peer).await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = client_config();
        let answers = self
            .link
            .upgrade()
            .and_then(|l| l.attached.questions.clone());
        if answers.is_some_and(|q| q.can_elicit()) {
            config.capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true)),
            );
        }
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let Some(link) = self.link.upgrade() else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        Ok(crate::elicit::answer(&link, request).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_past_the_limit_are_counted_and_told_once_the_window_ends() {
        let mut limit = NoticeLimit::new("s", "tool list changes", 5, CHANGES_WINDOW);
        let start = Instant::now();
        let shown: usize = (0..12)
            .map(|i| limit.pass(format!("n{i}"), start).len())
            .sum();
        assert_eq!(shown, 5);
        assert_eq!(
            limit.pass("later".into(), start + CHANGES_WINDOW),
            [
                "mcp s: 7 more tool list changes not shown (more than 5 in 60 s)",
                "later"
            ]
        );
        assert_eq!(limit.held_back(), None);
    }
}
