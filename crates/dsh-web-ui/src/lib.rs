//! `dsh web`: the browser app, served by the dsh binary on loopback.
//!
//! One process serves many sessions in many workspaces. Each is a run built with
//! `dsh_core::AgentBuilder` and asked through `dsh_core::ask`, as in every front end; the page
//! reads the same records and events the session log and the other front ends do, as JSON
//! over server-sent events, and acts through a few JSON requests. Every request passes the
//! [`guard`]: the `Host` it was sent to, its `Origin`, and the token made at start.
//!
//! The page is plain HTML, CSS and one script with no library, kept in `assets/` and built
//! into the binary: nothing is fetched from anywhere else, and building needs no Node.

mod archive;
mod diff;
mod guard;
mod http;
mod hub;
mod markdown;
mod routes;
mod server;
mod window;

pub use server::{WebOptions, run};
pub use window::Window;
