//! The `dsh` binary against the scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

mod acp;
mod auto_review;
mod caps;
mod compaction;
mod completions;
mod errors;
mod escape;
mod faults;
mod goals;
mod headless;
mod hooks;
mod json;
mod kill_matrix;
mod login;
mod mcp;
mod mcp_oauth;
mod mcp_server;
mod output_schema;
mod patches;
mod providers;
mod rewind;
mod sandbox;
mod secrets;
mod sessions;
mod settings;
mod signals;
mod stream_input;
mod subagents;
mod tools;
mod tui;
mod web;
mod web_app;

use std::path::Path;

pub fn dsh() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dsh"))
}
