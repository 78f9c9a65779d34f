//! The escape suite ([`escape`]) under each kernel backend, a `bwrap` per command under
//! bubblewrap; `dsh`'s tests run it through the sandbox helper.

#[path = "support/escape.rs"]
mod escape;

use dsh_sandbox::BackendChoice;

#[tokio::test]
async fn nothing_escapes_bubblewrap() {
    escape::run_suite(BackendChoice::Bubblewrap, false).await;
}

#[tokio::test]
async fn nothing_escapes_landlock() {
    escape::run_suite(BackendChoice::Landlock, false).await;
}
