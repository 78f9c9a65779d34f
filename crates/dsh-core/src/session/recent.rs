//! Where a resumed session's last turns start in its log: what a front end shows of it.

use crate::log::After;

/// How many of a resumed session's last turns a front end shows (the terminal UI's
/// transcript, the web app's page); `dsh sessions show` prints them all.
pub const SHOWN_TURNS: usize = 50;

/// Where the last [`SHOWN_TURNS`] turns of a log start (each as a read that goes on after the
/// record before its `turn/start`), and how many turns came before them.
#[derive(Debug, Default)]
pub(super) struct RecentTurns {
    pub(super) starts: std::collections::VecDeque<After>,
    pub(super) earlier: u32,
}
