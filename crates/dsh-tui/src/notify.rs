//! Notifications: when the terminal is not focused (focus reporting, `CSI ?1004h`), an
//! approval or a question waiting and a turn ending ring the terminal's bell and send an OSC 9
//! notification (shown as a desktop notification by terminals that take it, ignored by the
//! others), as `tui.notify` says: `long-turns` (the default) for turns of 30 seconds or more,
//! `always` for every turn, `off` never.

use std::io::Write as _;
use std::time::Duration;

use dsh_core::config::Notify;

use crate::app::App;

/// The shortest turn `long-turns` notifies the end of.
pub const LONG_TURN: Duration = Duration::from_secs(30);

/// An approval or a question is waiting for an answer.
pub fn waiting(app: &App) {
    if !app.focused && setting(app) != Notify::Off {
        send("an answer is needed");
    }
}

/// A turn ended after `took`.
pub fn turn_ended(app: &App, took: Option<Duration>) {
    if took.is_some_and(|took| turn_due(setting(app), app.focused, took)) {
        send("the turn has ended");
    }
}

/// Whether a turn that ran `took` notifies its end.
fn turn_due(setting: Notify, focused: bool, took: Duration) -> bool {
    !focused
        && match setting {
            Notify::Off => false,
            Notify::LongTurns => took >= LONG_TURN,
            Notify::Always => true,
        }
}

fn setting(app: &App) -> Notify {
    (app.info.as_ref())
        .and_then(|info| info.notify)
        .unwrap_or(Notify::LongTurns)
}

/// The bell, then OSC 9 with what happened. A terminal that cannot be written to has gone,
/// which the input loop finds out: nothing to do here.
fn send(what: &str) {
    let mut out = std::io::stdout();
    let _ = write!(out, "\x07\x1b]9;dsh: {what}\x07");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_only_a_long_turn_notifies_and_never_while_focused() {
        let short = Duration::from_secs(29);
        assert!(!turn_due(Notify::LongTurns, false, short));
        assert!(turn_due(Notify::LongTurns, false, LONG_TURN));
        assert!(!turn_due(Notify::LongTurns, true, LONG_TURN));
        assert!(turn_due(Notify::Always, false, short));
        assert!(!turn_due(Notify::Off, false, LONG_TURN));
    }
}
