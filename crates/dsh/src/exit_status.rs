//! The exit status of a run, the same for one task and for a stream of them (`--input-format
//! stream-json`): each run cap has its own, so a supervisor can tell "bounded" from "failed"
//! without parsing the stream.

use dsh_protocol::TurnEndReason;

/// The exit status of `--timeout`, also when it runs out before the task is sent.
pub(crate) const TIMEOUT: u8 = 5;

/// The exit status for how the run ended.
pub(crate) fn of(reason: &TurnEndReason) -> u8 {
    match reason {
        reason if reason.is_answer() => 0,
        TurnEndReason::MaxTurns { .. } => 3,
        TurnEndReason::MaxBudget { .. } => 4,
        TurnEndReason::Timeout { .. } => TIMEOUT,
        TurnEndReason::OutputSchema { .. } => 6,
        _ => 1,
    }
}
