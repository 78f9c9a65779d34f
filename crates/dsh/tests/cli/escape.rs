//! The escape suite through the sandbox helper: dsh's own executable serves as the helper, as
//! it does in a run. (`dsh-tools` runs the same suite with a `bwrap` per command.)

#[path = "../../../dsh-tools/tests/support/escape.rs"]
mod suite;

#[tokio::test]
async fn nothing_escapes_bubblewrap_through_the_sandbox_helper() {
    dsh_sandbox::helper::offer(crate::dsh().to_path_buf());
    suite::run_suite(dsh_sandbox::BackendChoice::Bubblewrap, true).await;
}

#[tokio::test]
async fn a_protected_file_replaced_on_the_host_stays_protected_through_the_helper() {
    dsh_sandbox::helper::offer(crate::dsh().to_path_buf());
    suite::a_replaced_protected_file_stays_protected(true).await;
}
