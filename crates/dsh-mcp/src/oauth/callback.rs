//! The loopback end of the authorization-code flow: a listener on 127.0.0.1 that the user's
//! browser is sent back to with the code. Only a request that carries the state this login
//! made is taken; anything else (a favicon fetch, another page guessing the port) gets an
//! error page and the wait goes on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the browser comes back to.
const PATH: &str = "/callback";
/// The most of a request head read.
const HEAD_LIMIT: usize = 16 * 1024;
/// How long one connection may take to send its request.
const READ_WAIT: Duration = Duration::from_secs(10);

/// What the authorization server sent back.
#[derive(Debug)]
pub(crate) struct Returned {
    pub code: String,
    pub state: String,
    /// RFC 9207's `iss`, checked by rmcp when present.
    pub issuer: Option<String>,
}

/// Why the sign-in's return did not come: the listener, the wait or the server's answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackError {
    /// `port` is `oauth.callback_port` when it is not 0.
    #[error(
        "cannot listen on 127.0.0.1:{port} for the sign-in's return: {source}{}",
        if *port == 0 { "" } else { "; free the port or change oauth.callback_port" }
    )]
    Listen {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the listener's port: {0}")]
    Port(#[source] std::io::Error),
    #[error("the browser did not come back within {} s; run the login again", .0.as_secs())]
    TimedOut(Duration),
    /// The server's error code and description, their control characters made visible.
    #[error("the authorization server refused the sign-in ({error}{detail})")]
    Refused { error: String, detail: String },
    #[error("the authorization server came back without a code")]
    NoCode,
}

pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Listens on 127.0.0.1 at `port` (0: any free port).
    pub(crate) async fn bind(port: u16) -> Result<Callback, CallbackError> {
        let listener = (TcpListener::bind(("127.0.0.1", port)).await)
            .map_err(|source| CallbackError::Listen { port, source })?;
        let port = listener.local_addr().map_err(CallbackError::Port)?.port();
        Ok(Callback { listener, port })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits for the browser to come back with `state`, up to `limit`. Each connection is
    /// read on its own, so one that sends nothing cannot hold up the browser's.
    pub(crate) async fn wait(
        &self,
        state: &str,
        limit: Duration,
    ) -> Result<Returned, CallbackError> {
        let (found, mut answers) = tokio::sync::mpsc::channel(4);
        let waited = tokio::time::timeout(limit, async {
            loop {
                tokio::select! {
                    accepted = self.listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let found = found.clone();
                            let state = state.to_owned();
                            tokio::spawn(async move {
                                if let Some(outcome) = answer(stream, &state).await {
                                    let _ = found.send(outcome).await;
                                }
                            });
                        }
                        // Out of descriptors, say: give the others a moment to finish.
                        Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    },
                    Some(outcome) = answers.recv() => return outcome,
                }
            }
        })
        .await;
        waited.unwrap_or(Err(CallbackError::TimedOut(limit)))
    }
}

/// Reads one request and answers it; `None` when it was not this login's return.
async fn answer(mut stream: TcpStream, state: &str) -> Option<Result<Returned, CallbackError>> {
    let head = tokio::time::timeout(READ_WAIT, read_head(&mut stream))
        .await
        .ok()??;
    let target = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("GET "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or("");
    let parsed = url::Url::parse(&format!("http://127.0.0.1{target}")).ok();
    let Some(parsed) = parsed.filter(|u| u.path() == PATH) else {
        respond(
            &mut stream,
            404,
            "Not found",
            "This address only takes dsh's sign-in.",
        )
        .await;
        return None;
    };
    let query = |name: &str| {
        parsed
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if query("state").as_deref() != Some(state) {
        respond(
            &mut stream,
            400,
            "Not this sign-in",
            "This answer is not for the sign-in dsh is waiting for; it was ignored.",
        )
        .await;
        return None;
    }
    if let Some(error) = query("error") {
        let detail = query("error_description").unwrap_or_default();
        respond(
            &mut stream,
            200,
            "Sign-in refused",
            "The authorization server refused the sign-in. dsh says why in the terminal.",
        )
        .await;
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(": {detail}")
        };
        return Some(Err(CallbackError::Refused {
            error: crate::oauth::printable(&error),
            detail: crate::oauth::printable(&detail),
        }));
    }
    let Some(code) = query("code") else {
        respond(
            &mut stream,
            400,
            "No code",
            "The answer carried no authorization code.",
        )
        .await;
        return Some(Err(CallbackError::NoCode));
    };
    respond(
        &mut stream,
        200,
        "Back to dsh",
        "dsh has the answer and finishes signing in; it says how that went in the terminal. \
         You can close this tab.",
    )
    .await;
    Some(Ok(Returned {
        code,
        state: state.to_owned(),
        issuer: query("iss"),
    }))
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || head.len() + read > HEAD_LIMIT {
            return None;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8(head).ok()
}

async fn respond(stream: &mut TcpStream, status: u16, title: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>dsh: {title}</title>\
         <body style=\"font-family:sans-serif;margin:3em\"><h1>{title}</h1><p>{text}</p>"
    );
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn only_the_awaited_state_is_taken() {
        let callback = Callback::bind(0).await.unwrap();
        let port = callback.port;
        let client = tokio::spawn(async move {
            let favicon = get(port, "/favicon.ico").await;
            let forged = get(port, "/callback?code=evil&state=guess").await;
            let real = get(port, "/callback?code=c0de&state=s1&iss=https%3A%2F%2Fas").await;
            (favicon, forged, real)
        });
        let returned = callback.wait("s1", Duration::from_secs(10)).await.unwrap();
        assert_eq!(returned.code, "c0de");
        assert_eq!(returned.issuer.as_deref(), Some("https://as"));
        let (favicon, forged, real) = client.await.unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
        assert!(forged.starts_with("HTTP/1.1 400"), "{forged}");
        assert!(real.starts_with("HTTP/1.1 200") && real.contains("close this tab"));
    }

    #[tokio::test]
    async fn a_refusal_is_reported_with_its_reason() {
        let callback = Callback::bind(0).await.unwrap();
        let port = callback.port;
        tokio::spawn(async move {
            get(
                port,
                "/callback?error=access_denied&error_description=user+said+no&state=s",
            )
            .await
        });
        let error = callback
            .wait("s", Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, CallbackError::Refused { error, .. } if error == "access_denied"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the authorization server refused the sign-in (access_denied: user said no)"
        );
    }

    /// The reason comes from the server and is printed: its terminal escapes are not.
    #[tokio::test]
    async fn a_refusal_s_escape_sequences_are_not_printed() {
        let callback = Callback::bind(0).await.unwrap();
        let port = callback.port;
        tokio::spawn(async move {
            get(
                port,
                "/callback?error=x&error_description=%1b%5d0%3bpwned%07&state=s",
            )
            .await
        });
        let error = callback
            .wait("s", Duration::from_secs(10))
            .await
            .unwrap_err();
        let error = error.to_string();
        assert!(!error.chars().any(char::is_control), "{error:?}");
        assert!(error.contains("\u{fffd}]0;pwned\u{fffd}"), "{error:?}");
    }
}
