//! The HTTP side: one listener, every request through the guard, then a route.
//!
//! | route | what |
//! |---|---|
//! | `GET /`, `/app.js`, `/app.css` | the page (it holds no data: no token needed) |
//! | `GET /manifest.webmanifest`, `/icon.svg` | what installs it as an app |
//! | `GET /api/sessions` | every session on disk, grouped by workspace |
//! | `POST /api/sessions` | `{cwd, resume?, fork?}`: opens a new session there, resumes one, or forks it |
//! | `POST /api/sessions/ID/delete` | `{cwd}`: deletes a session that is not open |
//! | `GET /api/sessions/ID/turns` | its turns, with what each changed in the files |
//! | `GET /api/sessions/ID/files?q=Q` | the workspace's files best matching Q, for `@` mentions |
//! | `GET /api/sessions/ID/diff` | the workspace's uncommitted changes (`/diff`) |
//! | `POST /api/sessions/ID/rewind` | `{toTurn | undo, files?, conversation?, apply?, acceptedOutside?}` |
//! | `GET /api/sessions/ID/events` | the session's reports so far, then as they come (SSE) |
//! | `POST /api/sessions/ID/prompt` | `{text}`: starts a turn |
//! | `POST /api/sessions/ID/stop` | stops the running turn |
//! | `POST /api/sessions/ID/compact` | summarises the older part of the conversation now |
//! | `POST /api/sessions/ID/close` | closes its run here (its lock let go) |
//! | `POST /api/sessions/ID/settings` | `{permissionMode?, model?}`: reopens it so, between turns |
//! | `POST /api/sessions/ID/answer` | `{id, answer}`: answers a question the session asked |

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use dsh_core::checkpoints::RewindRequest;
use dsh_core::config::PermissionMode;

use crate::guard::{Guard, Refused};
use crate::hub::{Hub, HubError};

type Body = BoxBody<Bytes, Infallible>;

/// The largest request body read.
const BODY_LIMIT: usize = 1024 * 1024;

/// How `dsh web` was asked to serve.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// The address to listen on: loopback unless the user asked otherwise.
    pub host: String,
    /// 0: any free port.
    pub port: u16,
    /// Open the page in the user's browser.
    pub open: bool,
    /// The flags every session starts from.
    pub flags: dsh_core::Flags,
}

struct App {
    guard: Guard,
    hub: Arc<Hub>,
    home: PathBuf,
    /// Where a new session opens unless the page says otherwise.
    cwd: PathBuf,
    /// Served on loopback only: an API key may then come from the page (elsewhere it would
    /// travel in plain HTTP).
    loopback: bool,
}

/// Serves until the process is stopped (Ctrl-C closes the sessions' logs first).
pub fn run(options: WebOptions) -> Result<(), String> {
    let runtime = dsh_core::runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve(options))
}

async fn serve(options: WebOptions) -> Result<(), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let env = dsh_core::Environment::from_process();
    let home = dsh_core::config::home(&env).map_err(|e| e.message)?.value;
    let listener = tokio::net::TcpListener::bind((options.host.as_str(), options.port))
        .await
        .map_err(|e| {
            format!(
                "cannot listen on {}:{}: {e}; pick another port with --port",
                options.host, options.port
            )
        })?;
    let address: SocketAddr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address listened on: {e}"))?;
    let shown_host = match address.ip() {
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    let guard = Guard::new(&shown_host, address.port());
    // The token in the fragment: the browser never sends it, the page reads it.
    let url = format!(
        "http://{shown_host}:{}/#token={}",
        address.port(),
        guard.token()
    );
    let mut out = std::io::stdout();
    use std::io::Write as _;
    if !crate::guard::is_loopback(&shown_host) {
        let _ = writeln!(
            std::io::stderr(),
            "dsh: warning: serving on {shown_host}, not loopback, over plain HTTP: anyone who \
             can reach this address and learns the token (which travels unencrypted) can run \
             commands as you"
        );
    }
    let _ = writeln!(out, "dsh web: open {url}");
    let _ = out.flush();
    if options.open {
        open_browser(&home, address.port(), &url);
    }
    let app = Arc::new(App {
        guard,
        hub: Arc::new(Hub::new(options.flags, home.clone())),
        home,
        cwd,
        loopback: address.ip().is_loopback(),
    });
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors, say: give the connections a moment to close.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        let app = app.clone();
        tokio::task::spawn_local(async move {
            let service = hyper::service::service_fn(move |request| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(app.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(30))
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
    // A second Ctrl-C does not wait for the sessions to close.
    tokio::task::spawn_local(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(130);
        }
    });
    app.hub.close_all().await;
    Ok(())
}

impl App {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        if let Err(refused) = self.guard.check_origin(&method, request.headers()) {
            return refusal(refused);
        }
        // The page itself holds no data: it is served to anyone who reached the right Host.
        match (&method, path.as_str()) {
            (&Method::GET, "/") => return asset("text/html; charset=utf-8", INDEX),
            (&Method::GET, "/app.js") => return asset("text/javascript; charset=utf-8", SCRIPT),
            (&Method::GET, "/app.css") => return asset("text/css; charset=utf-8", STYLE),
            (&Method::GET, "/manifest.webmanifest") => {
                return asset("application/manifest+json", MANIFEST);
            }
            (&Method::GET, "/icon.svg") => return asset("image/svg+xml", ICON),
            _ => {}
        }
        if let Err(refused) = self
            .guard
            .check_token(request.headers(), request.uri().query())
        {
            return refusal(refused);
        }
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (&method, parts.as_slice()) {
            (&Method::GET, ["api", "sessions"]) => {
                // Reading every log is disk work: off the thread the sessions run on.
                let (home, cwd) = (self.home.clone(), self.cwd.clone());
                match tokio::task::spawn_blocking(move || sessions_on_disk(&home, &cwd)).await {
                    Ok(listing) => json_response(200, &listing),
                    Err(_) => json_error(500, "listing the sessions failed"),
                }
            }
            (&Method::POST, ["api", "sessions"]) => {
                let body = match read_json(request).await {
                    Ok(body) => body,
                    Err(response) => return response,
                };
                let cwd = match body["cwd"].as_str().filter(|c| !c.is_empty()) {
                    Some(cwd) => PathBuf::from(cwd),
                    None => self.cwd.clone(),
                };
                if !cwd.is_absolute() || !cwd.is_dir() {
                    return json_error(
                        400,
                        "cwd must be an existing folder, given as an absolute path",
                    );
                }
                // One spelling per folder (`/a/b/`, a link to it): sessions are filed by it.
                let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
                let resume = body["resume"].as_str().map(str::to_owned);
                let fork = body["fork"] == true;
                if fork && resume.is_none() {
                    return json_error(400, "a fork needs the session to fork (\"resume\")");
                }
                match self.hub.open(cwd, resume, fork).await {
                    Ok(live) => json_response(200, &json!({"id": live.id()})),
                    Err(error) => hub_error(error),
                }
            }
            (&Method::POST, ["api", "sessions", id, "delete"]) => {
                let body = match read_json(request).await {
                    Ok(body) => body,
                    Err(response) => return response,
                };
                let Some(cwd) = body["cwd"].as_str().map(PathBuf::from) else {
                    return json_error(400, "delete needs the session's workspace (\"cwd\")");
                };
                match self.hub.delete(&cwd, id) {
                    Ok(()) => json_response(200, &json!({"deleted": true})),
                    Err(error) => hub_error(error),
                }
            }
            // A first run without an API key: the page asks for one, as `dsh login` does.
            (&Method::GET, ["api", "key"]) => match self.hub.settings(&self.cwd) {
                Ok(settings) => match dsh_core::key_target(&settings) {
                    Ok(target) => json_response(
                        200,
                        &json!({"needed": true, "provider": target.provider,
                            "baseUrl": target.base_url, "variable": target.variable,
                            "found": target.found_in.is_some()}),
                    ),
                    Err(_) => json_response(200, &json!({"needed": false})),
                },
                Err(message) => json_error(422, &message),
            },
            (&Method::POST, ["api", "key"]) => {
                let body = match read_json(request).await {
                    Ok(body) => body,
                    Err(response) => return response,
                };
                let Some(key) = body["key"].as_str() else {
                    return json_error(400, "the request needs the \"key\"");
                };
                if !self.loopback {
                    return json_error(
                        403,
                        "this server is not on loopback, so a key sent from the page would \
                         travel in plain HTTP: run `dsh login` on the machine instead",
                    );
                }
                let settings = match self.hub.settings(&self.cwd) {
                    Ok(settings) => settings,
                    Err(message) => return json_error(422, &message),
                };
                match dsh_core::check_and_save_key(&settings, key).await {
                    Ok(file) => json_response(200, &json!({"saved": file})),
                    Err(dsh_core::LoginError::Refused(why)) => json_error(422, &why),
                    Err(error) => json_error(502, &error.to_string()),
                }
            }
            (&Method::POST, ["api", "sessions", id, "rename"]) => {
                let body = match read_json(request).await {
                    Ok(body) => body,
                    Err(response) => return response,
                };
                let (Some(cwd), Some(title)) = (body["cwd"].as_str(), body["title"].as_str())
                else {
                    return json_error(
                        400,
                        "rename needs the session's workspace (\"cwd\") and a \"title\" (\"\" \
                         takes it away)",
                    );
                };
                match dsh_core::rename_session(&self.home, Path::new(cwd), id, title) {
                    Ok(()) => json_response(200, &json!({"renamed": true})),
                    Err(error) => core_error(error),
                }
            }
            (&Method::POST, ["api", "sessions", id, "images"]) => {
                let live = match self.hub.get(id) {
                    Ok(live) => live,
                    Err(error) => return hub_error(error),
                };
                let limit = usize::try_from(dsh_core::MAX_IMAGE_SOURCE_BYTES).unwrap_or(usize::MAX);
                let too_large = || {
                    json_error(
                        413,
                        &format!(
                            "an image may have at most {} MiB; attach a smaller copy",
                            limit / (1024 * 1024)
                        ),
                    )
                };
                let announced = (request.headers().get(hyper::header::CONTENT_LENGTH))
                    .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
                if announced.is_some_and(|n| n > limit) {
                    return too_large();
                }
                let data = match (http_body_util::Limited::new(request.into_body(), limit))
                    .collect()
                    .await
                {
                    Ok(body) => body.to_bytes(),
                    Err(_) => return too_large(),
                };
                let store = dsh_core::AttachmentStore::new(self.home.join("attachments"));
                match live.attach(store, data).await {
                    Ok(shown) => json_response(200, &shown),
                    Err(error) => hub_error(error),
                }
            }
            (&Method::GET, ["api", "sessions", id, "images", image]) => {
                let Some(image) = self.hub.get(id).ok().and_then(|live| live.image(image)) else {
                    return json_error(404, "no such image in this session");
                };
                match tokio::task::spawn_blocking(move || std::fs::read(&image.path)).await {
                    Ok(Ok(data)) => respond(200, &image.media_type, Bytes::from(data)),
                    _ => json_error(410, "the image's stored copy cannot be read any more"),
                }
            }
            (&Method::GET, ["api", "sessions", id, "prompts"]) => match self.hub.get(id) {
                Ok(live) => {
                    let prompts: Vec<Value> = dsh_core::saved_prompts(&self.home, &live.cwd)
                        .into_iter()
                        .map(|p| json!({"name": p.name, "path": p.path, "inProject": p.in_project}))
                        .collect();
                    json_response(200, &json!({"prompts": prompts}))
                }
                Err(error) => hub_error(error),
            },
            (&Method::GET, ["api", "sessions", id, "files"]) => match self.hub.get(id) {
                Ok(live) => {
                    let query = query_value(request.uri().query(), "q").unwrap_or_default();
                    json_response(200, &live.mentions(&query).await)
                }
                Err(error) => hub_error(error),
            },
            (&Method::GET, ["api", "sessions", id, "diff"]) => match self.hub.get(id) {
                Ok(live) => match dsh_core::workspace_diff(&live.cwd).await {
                    Ok(text) => json_response(200, &json!({"diff": text})),
                    Err(message) => json_error(422, &message),
                },
                Err(error) => hub_error(error),
            },
            (&Method::GET, ["api", "sessions", id, "turns"]) => match self.hub.get(id) {
                Ok(live) => match live.turns().await {
                    Ok(turns) => json_response(200, &turns),
                    Err(error) => hub_error(error),
                },
                Err(error) => hub_error(error),
            },
            (&Method::GET, ["api", "sessions", id, "events"]) => match self.hub.get(id) {
                Ok(live) => {
                    // A page that reconnects says what it saw last.
                    let after = (request.headers().get("last-event-id"))
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    events(&live, after)
                }
                Err(error) => hub_error(error),
            },
            (&Method::POST, ["api", "sessions", id, action]) => {
                let live = match self.hub.get(id) {
                    Ok(live) => live,
                    Err(error) => return hub_error(error),
                };
                let body = match read_json(request).await {
                    Ok(body) => body,
                    Err(response) => return response,
                };
                match *action {
                    "prompt" => {
                        let images: Vec<String> = match body.get("images") {
                            None => Vec::new(),
                            Some(ids) => match serde_json::from_value(ids.clone()) {
                                Ok(ids) => ids,
                                Err(_) => {
                                    return json_error(
                                        400,
                                        "\"images\" is a list of attachment ids, as attaching \
                                         each answered",
                                    );
                                }
                            },
                        };
                        let text = match saved_prompt(&self.home, &live.cwd, &body) {
                            Some(Ok(text)) => text,
                            Some(Err(response)) => return response,
                            None => match body["text"].as_str().unwrap_or_default() {
                                text if !text.trim().is_empty() || !images.is_empty() => {
                                    text.to_owned()
                                }
                                _ => {
                                    return json_error(
                                        400,
                                        "the prompt needs a non-empty \"text\" (or images), or \
                                         a saved prompt's name (\"saved\")",
                                    );
                                }
                            },
                        };
                        match live.prompt(text, &images) {
                            Ok(()) => json_response(202, &json!({"started": true})),
                            Err(error) => hub_error(error),
                        }
                    }
                    "stop" => {
                        live.stop();
                        json_response(202, &json!({"stopping": true}))
                    }
                    "close" => {
                        live.close().await;
                        json_response(200, &json!({"closed": true}))
                    }
                    "compact" => match live.compact() {
                        Ok(()) => json_response(202, &json!({"compacting": true})),
                        Err(error) => hub_error(error),
                    },
                    "rewind" => {
                        let to_turn = body["toTurn"].as_u64().and_then(|t| u32::try_from(t).ok());
                        if to_turn.is_none() && body["undo"] != true {
                            return json_error(
                                400,
                                "a rewind needs \"toTurn\" (a turn number) or \"undo\": true",
                            );
                        }
                        let files = body["files"].as_bool().unwrap_or(true);
                        let conversation = body["conversation"].as_bool().unwrap_or(true);
                        if !files && !conversation {
                            return json_error(400, "rewind the files, the conversation, or both");
                        }
                        let request = RewindRequest {
                            to_turn,
                            before_call: None,
                            files,
                            conversation,
                            force: false,
                            accepted_outside: (body["acceptedOutside"].as_array())
                                .into_iter()
                                .flatten()
                                .filter_map(|p| p.as_str().map(str::to_owned))
                                .collect(),
                            apply: body["apply"] == true,
                        };
                        match live.rewind(request).await {
                            Ok(report) => json_response(200, &report),
                            Err(error) => hub_error(error),
                        }
                    }
                    "settings" => {
                        let mode = match body["permissionMode"].as_str() {
                            None => None,
                            Some(mode) => match mode.parse::<PermissionMode>() {
                                Ok(mode) => Some(mode),
                                Err(_) => {
                                    return json_error(
                                        400,
                                        &format!(
                                            "permissionMode must be {}, got \"{mode}\"",
                                            PermissionMode::CHOICES
                                        ),
                                    );
                                }
                            },
                        };
                        let model = body["model"]
                            .as_str()
                            .map(str::trim)
                            .filter(|m| !m.is_empty())
                            .map(str::to_owned);
                        match live.reconfigure(mode, model).await {
                            Ok(()) => json_response(200, &json!({"changed": true})),
                            Err(error) => hub_error(error),
                        }
                    }
                    "answer" => {
                        let Some(ask) = body["id"].as_u64() else {
                            return json_error(400, "the answer needs the question's \"id\"");
                        };
                        if live.answer(ask, body["answer"].clone()) {
                            json_response(200, &json!({"answered": true}))
                        } else {
                            json_error(404, "no question with that id is waiting")
                        }
                    }
                    _ => json_error(404, "no such action"),
                }
            }
            _ => json_error(404, "no such page"),
        }
    }
}

/// The session's reports as server-sent events, each with its number: those after `after`,
/// then each as it comes.
fn events(live: &crate::hub::Live, after: u64) -> Response<Body> {
    let (missed, receiver) = live.follow(after);
    let frames = futures_util::stream::iter(missed)
        .chain(reports_of(receiver))
        .map(|(number, line)| {
            Ok::<_, Infallible>(Frame::data(Bytes::from(format!(
                "id: {number}\ndata: {line}\n\n"
            ))))
        });
    Response::builder()
        .status(200)
        .header(CONTENT_TYPE, "text/event-stream")
        .header(CACHE_CONTROL, "no-store")
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap_or_else(|_| plain(500, "cannot answer"))
}

/// The reports as they come; a page too slow to keep up is told to start again (it then
/// gets the backlog, which holds no streamed pieces of finished answers).
fn reports_of(
    receiver: tokio::sync::broadcast::Receiver<crate::hub::Report>,
) -> impl futures_util::Stream<Item = crate::hub::Report> {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(report) => Some((report, receiver)),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                Some(((0, Arc::from(r#"{"kind":"reload"}"#)), receiver))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
        }
    })
}

/// Every session on disk, grouped by workspace (newest first), and the workspace a new
/// session opens in.
fn sessions_on_disk(home: &std::path::Path, cwd: &std::path::Path) -> Value {
    let groups: Vec<Value> = dsh_core::all_sessions(home)
        .into_iter()
        .map(|(workspace, sessions)| json!({"cwd": workspace, "sessions": sessions}))
        .collect();
    json!({"cwd": cwd, "workspaces": groups})
}

async fn read_json(request: Request<Incoming>) -> Result<Value, Response<Body>> {
    let limited = http_body_util::Limited::new(request.into_body(), BODY_LIMIT);
    let bytes = limited
        .collect()
        .await
        .map_err(|_| json_error(413, "the request body is too large or was cut"))?
        .to_bytes();
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| json_error(400, &format!("the body is not JSON: {e}")))
}

/// The value of `key` in a request's query, decoded as a form value.
pub(crate) fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.into_owned())
}

/// Sends the user's browser to `url` without putting the token on a command line (where
/// every user of the machine could read it in `ps`): `xdg-open` gets a file, readable by the
/// user alone, that sends the browser on.
fn open_browser(home: &std::path::Path, port: u16, url: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = home.join("web");
    let file = dir.join(format!("open-{port}.html"));
    let written = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .and_then(|()| {
            let _ = std::fs::remove_file(&file);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file)
        })
        .and_then(|mut f| {
            let shown = crate::markdown::escape(url);
            write!(
                f,
                "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=\"0;url={shown}\">\
                 <title>dsh web</title><a href=\"{shown}\">Open dsh web</a>"
            )
        });
    if written.is_ok() {
        let _ = std::process::Command::new("xdg-open")
            .arg(&file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// For a prompt that names a saved prompt (`{"saved": NAME, "arguments": ...}`): its text, or
/// the error to answer with; `None` when the prompt is plain text.
fn saved_prompt(home: &Path, cwd: &Path, body: &Value) -> Option<Result<String, Response<Body>>> {
    let name = body["saved"].as_str()?;
    let arguments = body["arguments"].as_str().unwrap_or_default();
    let Some(prompt) = dsh_core::saved_prompts(home, cwd)
        .into_iter()
        .find(|p| p.name == name)
    else {
        return Some(Err(json_error(
            404,
            &format!(
                "/{name} is not a command here nor a saved prompt of this workspace; /help lists \
                 the commands, /prompts the saved prompts"
            ),
        )));
    };
    Some(
        prompt
            .expand(arguments)
            .map_err(|e| json_error(422, &e.to_string())),
    )
}

fn core_error(error: dsh_core::CoreError) -> Response<Body> {
    let status = match error {
        dsh_core::CoreError::UnknownSession { .. } | dsh_core::CoreError::BadSessionId(_) => 404,
        dsh_core::CoreError::BadTitle(_) => 400,
        _ => 422,
    };
    json_error(status, &error.to_string())
}

fn hub_error(error: HubError) -> Response<Body> {
    match error {
        HubError::NotFound(message) => json_error(404, &message),
        HubError::Busy(message) => json_error(409, &message),
        HubError::Failed(message) => json_error(422, &message),
    }
}

fn refusal(refused: Refused) -> Response<Body> {
    json_error(refused.status, refused.message)
}

fn json_error(status: u16, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": message}))
}

fn json_response(status: u16, value: &Value) -> Response<Body> {
    respond(status, "application/json", Bytes::from(value.to_string()))
}

fn plain(status: u16, text: &str) -> Response<Body> {
    respond(
        status,
        "text/plain; charset=utf-8",
        Bytes::from(text.to_owned()),
    )
}

fn asset(kind: &str, text: &'static str) -> Response<Body> {
    respond(200, kind, Bytes::from_static(text.as_bytes()))
}

fn empty() -> Body {
    BodyExt::boxed(Full::new(Bytes::new()))
}

fn respond(status: u16, kind: &str, body: Bytes) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, kind)
        .header(CACHE_CONTROL, "no-store")
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer")
        .header(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'; \
             base-uri 'none'",
        )
        .body(BodyExt::boxed(Full::new(body)))
        .unwrap_or_else(|_| Response::new(empty()))
}

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");
const MANIFEST: &str = include_str!("../assets/manifest.webmanifest");
const ICON: &str = include_str!("../assets/icon.svg");
