//! What every route shares: reading a request's JSON body and query, and the answers (each
//! with the same security headers).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::Response;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::hub::HubError;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A handler's answer: `Err` is an answer too, a refusal, so that `?` can give it.
pub(crate) type Answer = Result<Response<Body>, Response<Body>>;

/// The largest request body read.
const BODY_LIMIT: usize = 1024 * 1024;

/// The request's body as JSON (`{}` when empty), or the answer refusing it.
pub(crate) async fn read_json(request: hyper::Request<Incoming>) -> Result<Value, Response<Body>> {
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

pub(crate) fn core_error(error: dsh_core::CoreError) -> Response<Body> {
    let status = match error {
        dsh_core::CoreError::UnknownSession { .. } | dsh_core::CoreError::BadSessionId(_) => 404,
        dsh_core::CoreError::BadTitle(_) => 400,
        _ => 422,
    };
    json_error(status, &error.to_string())
}

pub(crate) fn hub_error(error: HubError) -> Response<Body> {
    match error {
        HubError::NotFound(message) => json_error(404, &message),
        HubError::Busy(message) => json_error(409, &message),
        HubError::Failed(message) => json_error(422, &message),
    }
}

pub(crate) fn json_error(status: u16, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": message}))
}

pub(crate) fn json_response(status: u16, value: &Value) -> Response<Body> {
    respond(status, "application/json", Bytes::from(value.to_string()))
}

pub(crate) fn plain(status: u16, text: &str) -> Response<Body> {
    respond(
        status,
        "text/plain; charset=utf-8",
        Bytes::from(text.to_owned()),
    )
}

pub(crate) fn asset(kind: &str, text: &'static str) -> Response<Body> {
    respond(200, kind, Bytes::from_static(text.as_bytes()))
}

fn empty() -> Body {
    BodyExt::boxed(Full::new(Bytes::new()))
}

pub(crate) fn respond(status: u16, kind: &str, body: Bytes) -> Response<Body> {
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
