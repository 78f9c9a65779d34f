//! What a child's run comes to for its caller: the ended run ([`EndedChild`]), the texts a
//! caller reads when it did not complete, and what a caller's fresh children billed
//! ([`ChildrenSpent`]). A leaf: the subagent tools, Ralph and workflows all read it.

use dsh_protocol::{FailureCode, SubagentRunRecord, TurnEndReason, Usage};
use dsh_tools::{ToolEffect, ToolError, ToolOutput};

use crate::agent::events::TurnSummary;

/// A foreground child's run, ended.
#[derive(Clone)]
pub(crate) struct EndedChild {
    pub(crate) summary: TurnSummary,
    /// The record of its run, for the caller's log.
    pub(crate) record: SubagentRunRecord,
    /// Its answer's JSON, when it was held to a schema and matched it.
    pub(crate) structured: Option<serde_json::Value>,
}

/// What a caller's fresh children (Ralph's rounds, a workflow's agents) billed, and the
/// records of their runs: both the caller's, whether its call succeeds or fails.
#[derive(Default)]
pub(crate) struct ChildrenSpent {
    usage: Usage,
    runs: Vec<SubagentRunRecord>,
}

impl ChildrenSpent {
    pub(crate) fn add(&mut self, ended: &EndedChild) {
        self.usage.add(&ended.summary.usage);
        self.runs.push(ended.record.clone());
    }

    pub(crate) fn onto_output(self, output: ToolOutput) -> ToolOutput {
        let mut output = output.with_usage(self.usage);
        output.effect = (!self.runs.is_empty()).then_some(ToolEffect::Subagents(self.runs));
        output
    }

    pub(crate) fn onto_error(self, error: ToolError) -> ToolError {
        let error = error.with_usage(self.usage);
        match self.runs.is_empty() {
            true => error,
            false => error.with_effect(ToolEffect::Subagents(self.runs)),
        }
    }
}

/// The first `units` UTF-16 units of `text` (the reference's measure of a result's length),
/// a character cut in half dropped.
pub(crate) fn utf16_head(text: &str, units: usize) -> String {
    let all: Vec<u16> = text.encode_utf16().take(units).collect();
    String::from_utf16_lossy(&all)
        .trim_end_matches('\u{FFFD}')
        .to_owned()
}

/// The reference's texts for a child that did not complete, with what it said before.
pub(super) fn failure_text(reason: &TurnEndReason, partial: &str, usage: Usage) -> ToolError {
    let (headline, diagnostic) = match reason {
        TurnEndReason::Aborted { .. } => ("subagent run was cancelled", None),
        TurnEndReason::MaxTokens => ("subagent run hit its token limit before finishing", None),
        TurnEndReason::Error { error } if error.code == FailureCode::TokenBudget => (
            "subagent run hit its token limit before finishing",
            Some(error.message.clone()),
        ),
        TurnEndReason::Error { error } => ("subagent run failed", Some(error.message.clone())),
        TurnEndReason::Interrupted => ("subagent run failed", None),
        // A child has no run caps of its own; the parent's would stop it as cancelled.
        TurnEndReason::MaxTurns { message }
        | TurnEndReason::MaxBudget { message }
        | TurnEndReason::Timeout { message }
        | TurnEndReason::OutputSchema { message } => ("subagent run failed", Some(message.clone())),
        TurnEndReason::PlanSubmitted | TurnEndReason::Completed => {
            ("subagent run ended abnormally (plan-submitted)", None)
        }
    };
    let mut text = headline.to_owned();
    if let Some(diagnostic) = diagnostic {
        text.push_str(&format!("\nDiagnostic: {diagnostic}"));
    }
    if !partial.is_empty() {
        text.push_str(&format!(
            "\nPartial output before the run ended:\n{partial}"
        ));
    }
    ToolError::plain(text).with_usage(usage)
}
