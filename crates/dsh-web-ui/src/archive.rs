//! The session archive from the page: the sidebar's search through every session's words
//! ([`dsh_core::search_sessions`], as `dsh sessions search` does) and who wrote a line a diff
//! shows ([`dsh_core::blame_file`], as `dsh blame` does). Both read the disk only, off
//! the threads the sessions run on.

use std::path::PathBuf;

use hyper::Request;
use hyper::body::Incoming;
use serde_json::json;

use crate::http::{Answer, hub_error, json_error, json_response, query_value};
use crate::hub::Hub;

/// The most sessions a search from the sidebar finds: more than a sidebar shows at once.
const SEARCH_HITS: usize = 50;

/// `GET /api/search?q=TEXT`: the sessions of every workspace whose messages, answers, calls or
/// files hold every word of TEXT, best first, each with its best turn and a snippet.
pub(crate) async fn search(home: PathBuf, request: Request<Incoming>) -> Answer {
    let query = query_value(request.uri().query(), "q").unwrap_or_default();
    let found =
        tokio::task::spawn_blocking(move || dsh_core::search_sessions(&home, &query, SEARCH_HITS));
    match found.await {
        Ok(hits) => Ok(json_response(200, &json!({ "hits": hits }))),
        Err(_) => Err(json_error(500, "searching the sessions failed")),
    }
}

/// `GET /api/sessions/ID/blame?path=P&line=N`: what wrote line N of P (in session `id`'s
/// workspace) as the file is now: the session, turn and call, and the message the turn
/// answered; none when no session of the workspace wrote it.
pub(crate) async fn blame(
    hub: &Hub,
    home: PathBuf,
    request: Request<Incoming>,
    id: String,
) -> Answer {
    let live = hub.get(&id).map_err(hub_error)?;
    let query = request.uri().query();
    let Some(path) = query_value(query, "path").filter(|p| !p.is_empty()) else {
        return Err(json_error(400, "blame needs the file (\"path\")"));
    };
    let line = query_value(query, "line").and_then(|n| n.parse::<usize>().ok());
    let Some(line) = line.filter(|n| *n > 0) else {
        return Err(json_error(
            400,
            "blame needs a line number from 1 (\"line\")",
        ));
    };
    let cwd = live.cwd.clone();
    let blamed = tokio::task::spawn_blocking(move || {
        dsh_core::blame_file(&home, &cwd, &PathBuf::from(path), Some(line))
    });
    match blamed.await {
        Ok(Ok(lines)) => match lines.into_iter().find(|blamed| blamed.line == line) {
            Some(blamed) => Ok(json_response(200, &json!(blamed))),
            None => Err(json_error(500, "blame found no such line")),
        },
        Ok(Err(error)) => Err(json_response(
            422,
            &json!({"error": error.to_string(), "code": error.code()}),
        )),
        Err(_) => Err(json_error(500, "blaming the line failed")),
    }
}
