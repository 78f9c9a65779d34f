//! The HTTP side: one listener, every request through the guard, then the route that answers
//! it ([`crate::routes`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};

use crate::guard::{Guard, Refused};
use crate::http::{Body, json_error};
use crate::hub::Hub;
use crate::routes::{self, Access, App};

/// How `dsh web` was asked to serve.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// The address to listen on: loopback unless the user asked otherwise.
    pub host: String,
    /// 0: any free port.
    pub port: u16,
    /// Open the page in the user's browser.
    pub open: bool,
    /// Open the page in a window of its own (`--app`): a Chromium-family browser's app mode,
    /// else the default browser ([`crate::Window`]).
    pub app: bool,
    /// The flags every session starts from.
    pub flags: dsh_core::Flags,
}

/// The guard every request passes, and what the routes act on.
struct Server {
    guard: Guard,
    app: App,
    /// The page `--open` wrote, removed once a browser has come for the app.
    opener: Arc<TokenPage>,
}

/// Serves until the process is stopped (Ctrl-C closes the sessions' logs first).
pub fn run(options: WebOptions) -> Result<(), String> {
    let runtime = dsh_core::runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve(options))
}

async fn serve(options: WebOptions) -> Result<(), String> {
    // Chosen before anything is served: with no browser, `--app` fails at once.
    let window = if options.app {
        Some(crate::Window::choose(std::env::var_os("PATH").as_deref())?)
    } else if options.open {
        Some(crate::Window::Default(PathBuf::from("xdg-open")))
    } else {
        None
    };
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
    let loopback = dsh_protocol::address::is_loopback_host(&shown_host);
    if !loopback {
        let _ = writeln!(
            std::io::stderr(),
            "dsh: warning: serving on {shown_host}, not loopback, over plain HTTP: anyone who \
             can reach this address and learns the token (which travels unencrypted) can run \
             commands as you"
        );
    }
    // Watched before the page that holds the token is written, so that no signal ends the
    // process between the two and leaves it behind.
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|e| format!("cannot watch for {name}: {e}"))
    };
    let mut interrupt = watch(SignalKind::interrupt(), "SIGINT")?;
    let mut terminate = watch(SignalKind::terminate(), "SIGTERM")?;
    let mut hangup = watch(SignalKind::hangup(), "SIGHUP")?;
    let _ = writeln!(out, "dsh web: open {url}");
    let _ = out.flush();
    let opener = Arc::new(TokenPage(std::sync::Mutex::new(
        window.and_then(|window| open_browser(&home, address.port(), &url, &window)),
    )));
    let server = Arc::new(Server {
        guard,
        app: App {
            hub: Arc::new(Hub::new(options.flags, home.clone())),
            home,
            cwd,
            loopback,
        },
        opener: opener.clone(),
    });
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
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
            _ = hangup.recv() => break,
        };
        let server = server.clone();
        tokio::task::spawn_local(async move {
            let service = hyper::service::service_fn(move |request| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(server.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(30))
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
    // Before the sessions close: a second Ctrl-C exits at once, past every destructor.
    opener.remove();
    // A second Ctrl-C does not wait for the sessions to close.
    tokio::task::spawn_local(async move {
        if interrupt.recv().await.is_some() {
            std::process::exit(130);
        }
    });
    server.app.hub.close_all().await;
    Ok(())
}

impl Server {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        if let Err(refused) = self.guard.check_origin(&method, request.headers()) {
            return refusal(refused);
        }
        let found = routes::find(&method, &path);
        let access = found.as_ref().map(|(route, _)| route.access);
        if access == Some(Access::Page) {
            // The browser has read the page it was sent and followed it here: the token it
            // holds is needed on disk no longer.
            self.opener.remove();
        }
        if access != Some(Access::Page) {
            let query = request
                .uri()
                .query()
                .filter(|_| access == Some(Access::TokenOrQuery));
            if let Err(refused) = self.guard.check_token(request.headers(), query) {
                return refusal(refused);
            }
        }
        match found {
            Some((route, at)) => routes::answer_by(route, &self.app, request, at).await,
            None => json_error(404, "no such page"),
        }
    }
}

/// The page [`open_browser`] wrote: it holds the token, so it is removed as soon as a browser
/// asks for the app (the page has been read then), and at the latest when the server ends.
struct TokenPage(std::sync::Mutex<Option<PathBuf>>);

impl TokenPage {
    fn remove(&self) {
        let file = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(file) = file {
            let _ = std::fs::remove_file(file);
        }
    }
}

impl Drop for TokenPage {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Sends the user's browser to `url` without putting the token on a command line (where
/// every user of the machine could read it in `ps`): the browser (or `xdg-open`) gets a file,
/// readable by the user alone, that sends it on. The file, when one was written.
fn open_browser(
    home: &std::path::Path,
    port: u16,
    url: &str,
    window: &crate::Window,
) -> Option<PathBuf> {
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
    if written.is_err() {
        let _ = std::fs::remove_file(&file);
        return None;
    }
    let _ = window
        .command(&file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    Some(file)
}

fn refusal(refused: Refused) -> Response<Body> {
    json_error(refused.status, refused.message)
}
