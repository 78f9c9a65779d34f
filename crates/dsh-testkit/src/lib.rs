//! Test support for dsh.
//!
//! * [`ScriptedServer`]: a model server on `127.0.0.1` that plays a script of [`Turn`]s (text,
//!   tool calls, reasoning, usage, an HTTP status, or a request left hanging) in the
//!   chat-completions dialect, and records every request so tests can check what was sent.
//! * [`TestEnv`]: a temporary workspace and home wired to a server, and a way to run the real
//!   `dsh` binary in them ([`RunOutput`], whose JSON events are checked against the published
//!   schema, `docs/events.schema.json`).
//!
//! Everything here panics on unexpected failures: it exists to fail tests loudly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod env;
mod schema;
mod script;
mod server;

pub use env::{RunOutput, TestEnv};
pub use schema::{check_event, events_schema};
pub use script::{Answer, Fault, Turn};
pub use server::{Request, ScriptedServer};
