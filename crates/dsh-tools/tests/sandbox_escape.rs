//! The escape suite ([`escape`]) under each kernel backend, a `bwrap` per command under
//! bubblewrap, and its control run without a sandbox; `dsh`'s tests run it through the
//! sandbox helper.

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

/// The same attempts without a sandbox get out: the suite's "0 escapes" is the sandbox's doing.
#[tokio::test]
async fn every_attempt_gets_out_without_the_sandbox() {
    escape::run_control().await;
}
