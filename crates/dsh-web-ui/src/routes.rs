//! The routes: each a method, a path and one handler, in [`ROUTES`].
//!
//! | route | what |
//! |---|---|
//! | `GET /`, `/app.js`, `/compose.js`, `/dialogs.js`, `/notify.js`, `/archive.js`, `/app.css` | the page (it holds no data: no token needed) |
//! | `GET /manifest.webmanifest`, `/icon.svg` | what installs it as an app |
//! | `GET /api/sessions` | every session on disk, grouped by workspace, and what a new one starts from |
//! | `GET /api/folder?path=P` | P as a workspace folder (absolute, existing), or why it is not one |
//! | `POST /api/sessions` | `{cwd, resume?, fork?}`: opens a new session there, resumes one, or forks it |
//! | `POST /api/sessions/ID/delete` | `{cwd}`: deletes a session that is not open |
//! | `GET /api/sessions/ID/turns` | its turns, with what each changed in the files |
//! | `GET /api/sessions/ID/files?q=Q` | the workspace's files best matching Q, for `@` mentions |
//! | `GET /api/search?q=Q` | the sessions of every workspace whose words hold Q, best first ([`crate::archive`]) |
//! | `GET /api/sessions/ID/blame?path=P&line=N` | what wrote line N of P ([`crate::archive`]) |
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
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use dsh_core::checkpoints::RewindRequest;
use dsh_core::config::PermissionMode;

use crate::archive;
use crate::http::{
    Answer, Body, asset, core_error, hub_error, json_error, json_response, plain, query_value,
    read_json, respond,
};
use crate::hub::{Hub, Live};

/// What the routes act on.
pub(crate) struct App {
    pub hub: Arc<Hub>,
    pub home: PathBuf,
    /// Where a new session opens unless the page says otherwise.
    pub cwd: PathBuf,
    /// Served on loopback only: an API key may then come from the page (elsewhere it would
    /// travel in plain HTTP).
    pub loopback: bool,
}

/// A route: where it is, who may reach it, and what answers it.
pub(crate) struct Route {
    pub method: Method,
    /// The path: exact for a page; for the API, its parts, `{id}` and `{image}` standing for
    /// any one part (leading and trailing slashes do not count).
    pub path: &'static str,
    pub access: Access,
    pub handler: Handler,
}

/// Who may reach a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The page itself holds no data: it is served to anyone who reached the right Host.
    Page,
    /// The API: the token in the `Authorization` header.
    Token,
    /// The event stream: the token may also be in its address, since a browser cannot give
    /// an EventSource a header. Anywhere else a token in the query would be one more place it
    /// is written down (history, logs), and is refused.
    TokenOrQuery,
}

/// The parts of a route's path that stand for a session and an image.
#[derive(Default)]
pub(crate) struct At {
    pub id: String,
    pub image: String,
}

type Handler =
    for<'a> fn(&'a App, Request<Incoming>, At) -> Pin<Box<dyn Future<Output = Answer> + 'a>>;

const fn page(path: &'static str, handler: Handler) -> Route {
    Route {
        method: Method::GET,
        path,
        access: Access::Page,
        handler,
    }
}

const fn get(path: &'static str, handler: Handler) -> Route {
    Route {
        method: Method::GET,
        path,
        access: Access::Token,
        handler,
    }
}

const fn stream(path: &'static str, handler: Handler) -> Route {
    Route {
        method: Method::GET,
        path,
        access: Access::TokenOrQuery,
        handler,
    }
}

const fn post(path: &'static str, handler: Handler) -> Route {
    Route {
        method: Method::POST,
        path,
        access: Access::Token,
        handler,
    }
}

/// Every route; the first that matches answers.
pub(crate) static ROUTES: &[Route] = &[
    page("/", |_, _, _| {
        Box::pin(async { Ok(asset("text/html; charset=utf-8", INDEX)) })
    }),
    page("/app.js", |_, _, _| {
        Box::pin(async { Ok(asset("text/javascript; charset=utf-8", SCRIPT)) })
    }),
    page("/compose.js", |_, _, _| {
        Box::pin(async { Ok(asset("text/javascript; charset=utf-8", COMPOSE)) })
    }),
    page("/dialogs.js", |_, _, _| {
        Box::pin(async { Ok(asset("text/javascript; charset=utf-8", DIALOGS)) })
    }),
    page("/notify.js", |_, _, _| {
        Box::pin(async { Ok(asset("text/javascript; charset=utf-8", NOTIFY)) })
    }),
    page("/archive.js", |_, _, _| {
        Box::pin(async { Ok(asset("text/javascript; charset=utf-8", ARCHIVE)) })
    }),
    page("/app.css", |_, _, _| {
        Box::pin(async { Ok(asset("text/css; charset=utf-8", STYLE)) })
    }),
    page("/manifest.webmanifest", |_, _, _| {
        Box::pin(async { Ok(asset("application/manifest+json", MANIFEST)) })
    }),
    page("/icon.svg", |_, _, _| {
        Box::pin(async { Ok(asset("image/svg+xml", ICON)) })
    }),
    get("api/sessions", |app, _, _| Box::pin(list_sessions(app))),
    get("api/folder", |_, request, _| Box::pin(folder(request))),
    get("api/search", |app, request, _| {
        Box::pin(archive::search(app.home.clone(), request))
    }),
    post("api/sessions", |app, request, _| {
        Box::pin(open_session(app, request))
    }),
    post("api/sessions/{id}/delete", |app, request, at| {
        Box::pin(delete_session(app, request, at))
    }),
    get("api/key", |app, _, _| Box::pin(key_needed(app))),
    post("api/key", |app, request, _| {
        Box::pin(save_key(app, request))
    }),
    post("api/sessions/{id}/rename", |app, request, at| {
        Box::pin(rename_session(app, request, at))
    }),
    post("api/sessions/{id}/images", |app, request, at| {
        Box::pin(attach_image(app, request, at))
    }),
    get("api/sessions/{id}/images/{image}", |app, _, at| {
        Box::pin(image(app, at))
    }),
    get("api/sessions/{id}/prompts", |app, _, at| {
        Box::pin(prompts(app, at))
    }),
    get("api/sessions/{id}/files", |app, request, at| {
        Box::pin(files(app, request, at))
    }),
    get("api/sessions/{id}/diff", |app, _, at| {
        Box::pin(diff(app, at))
    }),
    get("api/sessions/{id}/blame", |app, request, at| {
        Box::pin(archive::blame(&app.hub, app.home.clone(), request, at.id))
    }),
    get("api/sessions/{id}/turns", |app, _, at| {
        Box::pin(turns(app, at))
    }),
    stream("api/sessions/{id}/events", |app, request, at| {
        Box::pin(events(app, request, at))
    }),
    post("api/sessions/{id}/prompt", |app, request, at| {
        Box::pin(prompt(app, request, at))
    }),
    post("api/sessions/{id}/stop", |app, request, at| {
        Box::pin(stop(app, request, at))
    }),
    post("api/sessions/{id}/close", |app, request, at| {
        Box::pin(close(app, request, at))
    }),
    post("api/sessions/{id}/compact", |app, request, at| {
        Box::pin(compact(app, request, at))
    }),
    post("api/sessions/{id}/rewind", |app, request, at| {
        Box::pin(rewind(app, request, at))
    }),
    post("api/sessions/{id}/settings", |app, request, at| {
        Box::pin(settings(app, request, at))
    }),
    post("api/sessions/{id}/answer", |app, request, at| {
        Box::pin(answer(app, request, at))
    }),
    post("api/sessions/{id}/{action}", |app, request, at| {
        Box::pin(no_such_action(app, request, at))
    }),
];

/// The route `method` and `path` name, and what its path's placeholders stand for.
pub(crate) fn find(method: &Method, path: &str) -> Option<(&'static Route, At)> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    ROUTES
        .iter()
        .filter(|route| route.method == method)
        .find_map(|route| {
            if route.access == Access::Page {
                return (route.path == path).then(At::default).map(|at| (route, at));
            }
            let pattern: Vec<&str> = route.path.split('/').collect();
            if pattern.len() != parts.len() {
                return None;
            }
            let mut at = At::default();
            for (want, part) in pattern.iter().zip(&parts) {
                match *want {
                    "{id}" => at.id = (*part).to_owned(),
                    "{image}" => at.image = (*part).to_owned(),
                    "{action}" => {}
                    word if word == *part => {}
                    _ => return None,
                }
            }
            Some((route, at))
        })
}

/// Answers `request` by `route`.
pub(crate) async fn answer_by(
    route: &Route,
    app: &App,
    request: Request<Incoming>,
    at: At,
) -> Response<Body> {
    (route.handler)(app, request, at)
        .await
        .unwrap_or_else(|refusal| refusal)
}

async fn list_sessions(app: &App) -> Answer {
    // Reading every log (and the settings' files) is disk work: off the thread the sessions
    // run on.
    let (home, cwd, hub) = (app.home.clone(), app.cwd.clone(), app.hub.clone());
    let listed = tokio::task::spawn_blocking(move || {
        let mut listing = sessions_on_disk(&home, &cwd);
        listing["defaults"] = new_session_defaults(&hub, &cwd);
        listing
    });
    match listed.await {
        Ok(listing) => Ok(json_response(200, &listing)),
        Err(_) => Err(json_error(500, "listing the sessions failed")),
    }
}

/// A folder typed in the page, checked before a session is started there.
async fn folder(request: Request<Incoming>) -> Answer {
    let given = query_value(request.uri().query(), "path").unwrap_or_default();
    let checked = tokio::task::spawn_blocking(move || workspace_folder(&given)).await;
    match checked {
        Ok(Ok(cwd)) => Ok(json_response(200, &json!({"cwd": cwd}))),
        Ok(Err(why)) => Err(json_error(422, &why)),
        Err(_) => Err(json_error(500, "checking the folder failed")),
    }
}

/// `given` as the folder a session is filed by: absolute, existing, a folder, in one spelling
/// (`/a/b/` or a link to it is `/a/b`); else what is wrong with it, said so a person can fix it.
fn workspace_folder(given: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(given.trim());
    if given.trim().is_empty() {
        return Err("give the workspace's folder, as an absolute path".into());
    }
    if !path.is_absolute() {
        return Err(format!(
            "{} is not an absolute path: give the folder from the root (/home/you/project)",
            path.display()
        ));
    }
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Ok(std::fs::canonicalize(&path).unwrap_or(path)),
        Ok(_) => Err(format!("{} is a file, not a folder", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("{} does not exist", path.display()))
        }
        Err(e) => Err(format!("{} cannot be opened: {e}", path.display())),
    }
}

async fn open_session(app: &App, request: Request<Incoming>) -> Answer {
    let body = read_json(request).await?;
    let cwd = match body["cwd"].as_str().filter(|c| !c.is_empty()) {
        Some(cwd) => workspace_folder(cwd).map_err(|why| json_error(400, &why))?,
        None => app.cwd.clone(),
    };
    let resume = body["resume"].as_str().map(str::to_owned);
    let fork = body["fork"] == true;
    if fork && resume.is_none() {
        return Err(json_error(
            400,
            "a fork needs the session to fork (\"resume\")",
        ));
    }
    let live = app.hub.open(cwd, resume, fork).await.map_err(hub_error)?;
    Ok(json_response(200, &json!({"id": live.id()})))
}

async fn delete_session(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let body = read_json(request).await?;
    let Some(cwd) = body["cwd"].as_str().map(PathBuf::from) else {
        return Err(json_error(
            400,
            "delete needs the session's workspace (\"cwd\")",
        ));
    };
    app.hub.delete(&cwd, &at.id).map_err(hub_error)?;
    Ok(json_response(200, &json!({"deleted": true})))
}

/// A first run without an API key: the page asks for one, as `dsh login` does.
async fn key_needed(app: &App) -> Answer {
    let settings = app
        .hub
        .settings(&app.cwd)
        .map_err(|m| json_error(422, &m))?;
    Ok(match dsh_core::key_target(&settings) {
        Ok(target) => json_response(
            200,
            &json!({"needed": true, "provider": target.provider,
                "baseUrl": target.base_url, "variable": target.variable,
                "found": target.found_in.is_some(),
                // Said before a key is typed: where no key may be sent.
                "problem": dsh_core::check_key_destination(&settings)
                    .err().map(|e| e.to_string())}),
        ),
        Err(_) => json_response(200, &json!({"needed": false})),
    })
}

async fn save_key(app: &App, request: Request<Incoming>) -> Answer {
    let body = read_json(request).await?;
    let Some(key) = body["key"].as_str() else {
        return Err(json_error(400, "the request needs the \"key\""));
    };
    if !app.loopback {
        return Err(json_error(
            403,
            "this server is not on loopback, so a key sent from the page would travel in plain \
             HTTP: run `dsh login` on the machine instead",
        ));
    }
    let settings = app
        .hub
        .settings(&app.cwd)
        .map_err(|m| json_error(422, &m))?;
    match dsh_core::check_and_save_key(&settings, key).await {
        Ok(file) => Ok(json_response(200, &json!({"saved": file}))),
        Err(dsh_core::LoginError::Refused(why)) => Err(json_error(422, &why)),
        Err(
            error @ (dsh_core::LoginError::PlainHttp { .. }
            | dsh_core::LoginError::ForeignEndpoint { .. }),
        ) => Err(json_error(403, &error.to_string())),
        Err(error) => Err(json_error(502, &error.to_string())),
    }
}

async fn rename_session(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let body = read_json(request).await?;
    let (Some(cwd), Some(title)) = (body["cwd"].as_str(), body["title"].as_str()) else {
        return Err(json_error(
            400,
            "rename needs the session's workspace (\"cwd\") and a \"title\" (\"\" takes it away)",
        ));
    };
    dsh_core::rename_session(&app.home, Path::new(cwd), &at.id, title).map_err(core_error)?;
    Ok(json_response(200, &json!({"renamed": true})))
}

async fn attach_image(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
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
        return Err(too_large());
    }
    let data = (http_body_util::Limited::new(request.into_body(), limit))
        .collect()
        .await
        .map_err(|_| too_large())?
        .to_bytes();
    let store = dsh_core::AttachmentStore::new(app.home.join("attachments"));
    let shown = live.attach(store, data).await.map_err(hub_error)?;
    Ok(json_response(200, &shown))
}

async fn image(app: &App, at: At) -> Answer {
    let Some(image) = (app.hub.get(&at.id).ok()).and_then(|live| live.image(&at.image)) else {
        return Err(json_error(404, "no such image in this session"));
    };
    match tokio::task::spawn_blocking(move || std::fs::read(&image.path)).await {
        Ok(Ok(data)) => Ok(respond(200, &image.media_type, Bytes::from(data))),
        _ => Err(json_error(
            410,
            "the image's stored copy cannot be read any more",
        )),
    }
}

async fn prompts(app: &App, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    let prompts: Vec<Value> = dsh_core::saved_prompts(&app.home, &live.cwd)
        .into_iter()
        .map(|p| json!({"name": p.name, "path": p.path, "inProject": p.in_project}))
        .collect();
    Ok(json_response(200, &json!({"prompts": prompts})))
}

async fn files(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    let query = query_value(request.uri().query(), "q").unwrap_or_default();
    Ok(json_response(200, &live.mentions(&query).await))
}

async fn diff(app: &App, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    match dsh_core::workspace_diff(&live.cwd).await {
        Ok(text) => Ok(json_response(200, &json!({"diff": text}))),
        Err(message) => Err(json_error(422, &message)),
    }
}

async fn turns(app: &App, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    let turns = live.turns().await.map_err(hub_error)?;
    Ok(json_response(200, &turns))
}

/// The session's reports as server-sent events, each with its number: those after the one a
/// reconnecting page saw last, then `{"kind": "live"}` (unnumbered, so a reconnect is not
/// moved by it), then each as it comes. The page times what it sees after the mark: how long
/// a call ran.
async fn events(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    let after = (request.headers().get("last-event-id"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (missed, receiver) = live.follow(after);
    let numbered = |(number, line): crate::hub::Report| {
        Ok::<_, Infallible>(Frame::data(Bytes::from(format!(
            "id: {number}\ndata: {line}\n\n"
        ))))
    };
    let caught_up = Ok(Frame::data(Bytes::from_static(
        b"data: {\"kind\":\"live\"}\n\n",
    )));
    let frames = futures_util::stream::iter(missed)
        .map(numbered)
        .chain(futures_util::stream::once(async { caught_up }))
        .chain(reports_of(receiver).map(numbered));
    Ok(Response::builder()
        .status(200)
        .header(CONTENT_TYPE, "text/event-stream")
        .header(CACHE_CONTROL, "no-store")
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap_or_else(|_| plain(500, "cannot answer")))
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

/// What every action on an open session starts with: the session, and the request's body.
async fn session_and_body(
    app: &App,
    request: Request<Incoming>,
    at: &At,
) -> Result<(Arc<Live>, Value), Response<Body>> {
    let live = app.hub.get(&at.id).map_err(hub_error)?;
    let body = read_json(request).await?;
    Ok((live, body))
}

async fn prompt(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, body) = session_and_body(app, request, &at).await?;
    let images: Vec<String> = match body.get("images") {
        None => Vec::new(),
        Some(ids) => serde_json::from_value(ids.clone()).map_err(|_| {
            json_error(
                400,
                "\"images\" is a list of attachment ids, as attaching each answered",
            )
        })?,
    };
    let text = match saved_prompt(&app.home, &live.cwd, &body) {
        Some(text) => text?,
        None => match body["text"].as_str().unwrap_or_default() {
            text if !text.trim().is_empty() || !images.is_empty() => text.to_owned(),
            _ => {
                return Err(json_error(
                    400,
                    "the prompt needs a non-empty \"text\" (or images), or a saved prompt's name \
                     (\"saved\")",
                ));
            }
        },
    };
    live.prompt(text, &images).map_err(hub_error)?;
    Ok(json_response(202, &json!({"started": true})))
}

async fn stop(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, _) = session_and_body(app, request, &at).await?;
    live.stop();
    Ok(json_response(202, &json!({"stopping": true})))
}

async fn close(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, _) = session_and_body(app, request, &at).await?;
    live.close().await;
    Ok(json_response(200, &json!({"closed": true})))
}

async fn compact(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, _) = session_and_body(app, request, &at).await?;
    live.compact().map_err(hub_error)?;
    Ok(json_response(202, &json!({"compacting": true})))
}

async fn rewind(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, body) = session_and_body(app, request, &at).await?;
    let to_turn = body["toTurn"].as_u64().and_then(|t| u32::try_from(t).ok());
    if to_turn.is_none() && body["undo"] != true {
        return Err(json_error(
            400,
            "a rewind needs \"toTurn\" (a turn number) or \"undo\": true",
        ));
    }
    let files = body["files"].as_bool().unwrap_or(true);
    let conversation = body["conversation"].as_bool().unwrap_or(true);
    if !files && !conversation {
        return Err(json_error(
            400,
            "rewind the files, the conversation, or both",
        ));
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
    let report = live.rewind(request).await.map_err(hub_error)?;
    Ok(json_response(200, &report))
}

async fn settings(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, body) = session_and_body(app, request, &at).await?;
    let mode = match body["permissionMode"].as_str() {
        None => None,
        Some(mode) => Some(mode.parse::<PermissionMode>().map_err(|_| {
            json_error(
                400,
                &format!(
                    "permissionMode must be {}, got \"{mode}\"",
                    PermissionMode::CHOICES
                ),
            )
        })?),
    };
    let model = body["model"]
        .as_str()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    live.reconfigure(mode, model).await.map_err(hub_error)?;
    Ok(json_response(200, &json!({"changed": true})))
}

async fn answer(app: &App, request: Request<Incoming>, at: At) -> Answer {
    let (live, body) = session_and_body(app, request, &at).await?;
    let Some(ask) = body["id"].as_u64() else {
        return Err(json_error(400, "the answer needs the question's \"id\""));
    };
    if live.answer(ask, body["answer"].clone()) {
        Ok(json_response(200, &json!({"answered": true})))
    } else {
        Err(json_error(404, "no question with that id is waiting"))
    }
}

/// Any other action on a session: refused once the session and the body are found good.
async fn no_such_action(app: &App, request: Request<Incoming>, at: At) -> Answer {
    session_and_body(app, request, &at).await?;
    Err(json_error(404, "no such action"))
}

/// Every session on disk, grouped by workspace (newest first), and the workspace a new
/// session opens in.
fn sessions_on_disk(home: &Path, cwd: &Path) -> Value {
    let groups: Vec<Value> = dsh_core::all_sessions(home)
        .into_iter()
        .map(|(workspace, sessions)| json!({"cwd": workspace, "sessions": sessions}))
        .collect();
    json!({"cwd": cwd, "workspaces": groups})
}

/// DeepSeek's models, which the built-in route serves with no configuration.
const BUILT_IN_MODELS: &[&str] = &["deepseek-v4-flash", "deepseek-v4-pro"];

/// What a new session in `cwd` starts from, for the page to show before it is started: the
/// permission mode and model (with the modes and the models configured to pick from), and
/// whether that model takes images. `null` when the settings cannot be read (opening a
/// session then says why).
fn new_session_defaults(hub: &Hub, cwd: &Path) -> Value {
    let Ok(settings) = hub.settings(cwd) else {
        return Value::Null;
    };
    let config = settings.files().config();
    let mut models: Vec<String> = vec![settings.model().value.clone()];
    let declared = (config.providers.iter())
        .flat_map(|(route, p)| p.models.keys().map(move |m| format!("{route}/{m}")));
    for model in (BUILT_IN_MODELS.iter().map(|m| (*m).to_owned()))
        .chain(config.models.keys().cloned())
        .chain(declared)
    {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    json!({
        "mode": settings.permission_mode().value.as_str(),
        "modes": PermissionMode::CHOICES
            .split([',', ' '])
            .filter(|word| !word.is_empty() && *word != "or")
            .collect::<Vec<_>>(),
        "model": settings.model().value,
        "models": models,
        "imageInput": settings.route().image_input.value,
    })
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

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const COMPOSE: &str = include_str!("../assets/compose.js");
const DIALOGS: &str = include_str!("../assets/dialogs.js");
const NOTIFY: &str = include_str!("../assets/notify.js");
const ARCHIVE: &str = include_str!("../assets/archive.js");
const STYLE: &str = include_str!("../assets/app.css");
const MANIFEST: &str = include_str!("../assets/manifest.webmanifest");
const ICON: &str = include_str!("../assets/icon.svg");

#[cfg(test)]
mod tests {
    use super::*;

    fn found(method: Method, path: &str) -> Option<(&'static str, Access, String, String)> {
        find(&method, path).map(|(route, at)| (route.path, route.access, at.id, at.image))
    }

    #[test]
    fn a_request_finds_the_first_route_that_matches_and_what_its_parts_stand_for() {
        // The page by its exact path; the API by its parts, slashes around them aside.
        assert_eq!(found(Method::GET, "/").map(|f| f.1), Some(Access::Page));
        assert_eq!(found(Method::GET, "//app.js"), None);
        assert_eq!(found(Method::POST, "/app.js"), None);
        let listed = found(Method::GET, "/api/sessions/").unwrap();
        assert_eq!((listed.0, listed.1), ("api/sessions", Access::Token));
        // The event stream alone may carry its token in the query.
        let events = found(Method::GET, "/api/sessions/s-1/events").unwrap();
        assert_eq!(events.1, Access::TokenOrQuery);
        assert_eq!(events.2, "s-1");
        let image = found(Method::GET, "/api/sessions/s-1/images/i-2").unwrap();
        assert_eq!((image.2.as_str(), image.3.as_str()), ("s-1", "i-2"));
        // The archive: a search of every session, and a line of one session's workspace.
        assert_eq!(found(Method::GET, "/api/search").unwrap().0, "api/search");
        let blamed = found(Method::GET, "/api/sessions/s-1/blame").unwrap();
        assert_eq!(
            (blamed.0, blamed.1),
            ("api/sessions/{id}/blame", Access::Token)
        );
        // An action of its own before any other action on a session.
        assert_eq!(
            found(Method::POST, "/api/sessions/s-1/rename").unwrap().0,
            "api/sessions/{id}/rename"
        );
        assert_eq!(
            found(Method::POST, "/api/sessions/s-1/frob").unwrap().0,
            "api/sessions/{id}/{action}"
        );
        assert_eq!(found(Method::GET, "/api/sessions/s-1/frob"), None);
        let tokened = ROUTES.iter().filter(|r| r.access == Access::TokenOrQuery);
        assert_eq!(tokened.count(), 1);
    }

    #[test]
    fn a_typed_folder_is_checked_and_spelled_one_way() {
        let made = std::env::temp_dir().join(format!("dsh-web-folder-{}", std::process::id()));
        std::fs::create_dir_all(&made).unwrap();
        let root = std::fs::canonicalize(&made).unwrap();
        let file = root.join("a-file");
        std::fs::write(&file, "").unwrap();
        let typed = format!("  {}/  ", root.display());
        assert_eq!(workspace_folder(&typed), Ok(root.clone()));
        let said = |given: &str| workspace_folder(given).unwrap_err();
        assert!(said("").contains("give the workspace's folder"));
        assert!(said("relative/folder").contains("relative/folder is not an absolute path"));
        let missing = root.join("missing");
        assert_eq!(
            said(&missing.to_string_lossy()),
            format!("{} does not exist", missing.display())
        );
        assert_eq!(
            said(&file.to_string_lossy()),
            format!("{} is a file, not a folder", file.display())
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
