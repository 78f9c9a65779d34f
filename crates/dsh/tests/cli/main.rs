//! The `dsh` binary against the scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

mod acp;
mod app_server;
mod app_server_attacks;
mod auto_review;
mod blame;
mod caps;
mod compaction;
mod completions;
mod custom_agents;
mod diff;
mod doc_links;
mod errors;
mod escape;
mod faults;
mod goals;
mod headless;
mod help;
mod hook_events;
mod hooks;
mod install_sh;
mod json;
mod json_outputs;
mod kill_matrix;
mod login;
mod mcp;
mod mcp_oauth;
mod mcp_server;
mod network;
mod output_schema;
mod outside;
mod patches;
mod providers;
mod replay;
mod rewind;
mod rules;
mod sandbox;
mod search;
mod secrets;
mod sessions;
mod settings;
mod signals;
mod stored_auth;
mod stream_input;
mod subagents;
mod tools;
mod trust;
mod tui;
mod tui_archive;
mod tui_habits;
mod tui_hooks;
mod web;
mod web_app;

use std::path::Path;

pub fn dsh() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dsh"))
}
