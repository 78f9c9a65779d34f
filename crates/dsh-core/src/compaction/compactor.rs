//! The [`Compactor`]: keeps a session's history inside the model's context window, from one
//! request to the next. It measures the history as the next request would carry it (the last
//! answered request's reported prompt size plus an estimate of what came after), prunes long
//! tool results when it reaches its share of the window, and then has the model summarise the
//! oldest part.

use dsh_llm::{Effort, ModelRequest, Provider};
use dsh_protocol::{
    CompactionPruneRecord, CompactionSummaryRecord, FinishReason, Message, Record, ToolSpec, Usage,
};
use tokio::sync::mpsc::UnboundedSender;

use super::{
    MANUAL_MIN_TOKENS, ManualCompaction, RETAIN_RATIO, SUMMARY_INSTRUCTION, SUMMARY_MAX_TOKENS,
    checkpoint, estimate_tokens, head_cut, is_checkpoint, is_tool_result, prunable, split_point,
};
use crate::agent::events::{AgentEvent, commit};
use crate::agent::stop::Stop;
use crate::{CoreError, Session};

/// What compaction works on: the session (whose log records each change) and what it needs to
/// ask the model for a summary, as the agent's requests are made.
pub(crate) struct History<'a> {
    pub session: &'a mut Session,
    pub events: &'a UnboundedSender<AgentEvent>,
    pub provider: &'a dyn Provider,
    pub model: &'a str,
    pub system: &'a str,
    pub specs: &'a [ToolSpec],
    /// The session's hooks, for PreCompact.
    pub hooks: Option<&'a crate::HookRunner>,
}

impl History<'_> {
    fn commit(&mut self, record: Record) -> Result<(), CoreError> {
        commit(self.session, self.events, record)
    }
}

/// The state compaction keeps between requests.
#[derive(Debug)]
pub(crate) struct Compactor {
    /// The model's context window in tokens.
    window: u64,
    /// Whether, and at what share of the window, it compacts on its own (`[compaction]`).
    rules: dsh_config::CompactionRules,
    /// A summary replaced part of the history since [`Compactor::take_summarised`] was last
    /// asked: what it replaced may have held the workspace instructions.
    summarised: bool,
    /// The prompt tokens the last answered request reported, and how many history messages
    /// it carried: the base of the next size measurement.
    last_prompt: Option<(u64, usize)>,
    /// The history's length when a summary last failed: not retried before it grows.
    summary_failed_at: Option<usize>,
}

impl Compactor {
    pub(crate) fn new(window: u64, rules: dsh_config::CompactionRules) -> Self {
        Compactor {
            window,
            rules,
            summarised: false,
            last_prompt: None,
            summary_failed_at: None,
        }
    }

    /// After an answered request that carried `sent_len` messages: what it reported is the
    /// base of the next measurement (an attempt that reported nothing leaves none).
    pub(crate) fn measured(&mut self, usage: &Usage, sent_len: usize) {
        self.last_prompt =
            (usage.unreported_calls == 0).then_some((usage.prompt_tokens(), sent_len));
    }

    /// The history's size as the next request would carry it.
    fn pressure(&self, h: &History<'_>) -> u64 {
        let history = h.session.history();
        match self.last_prompt {
            Some((tokens, len)) if len <= history.len() => {
                tokens + estimate_tokens(&history[len..])
            }
            _ => estimate_tokens(history) + (h.system.len() as u64).div_ceil(4),
        }
    }

    /// Whether a summary replaced part of the history since this was last asked.
    pub(crate) fn take_summarised(&mut self) -> bool {
        std::mem::take(&mut self.summarised)
    }

    /// Compacts when the history has reached its share of the window (`compaction.threshold`,
    /// unless `compaction.auto` is off); returns what the summary request cost.
    pub(crate) async fn compact(
        &mut self,
        mut h: History<'_>,
        turn: u32,
        reason: &str,
        stop: &Stop,
    ) -> Result<Usage, CoreError> {
        if !self.rules.auto {
            return Ok(Usage::default());
        }
        let limit = (self.window as f64 * self.rules.threshold) as u64;
        if self.pressure(&h) < limit {
            return Ok(Usage::default());
        }
        self.prune(&mut h, turn)?;
        if self.pressure(&h) < limit {
            return Ok(Usage::default());
        }
        // A summary that failed is not asked for again until the history has grown.
        if self.summary_failed_at == Some(h.session.history().len()) {
            return Ok(Usage::default());
        }
        let retain = (self.window as f64 * RETAIN_RATIO) as u64;
        let Some(cut) = split_point(h.session.history(), retain) else {
            return Ok(Usage::default());
        };
        Ok(self
            .summarise_head(&mut h, turn, reason, cut, None, stop)
            .await?
            .1)
    }

    /// When the user asks: prunes, then summarises all but the last unit in one request (the
    /// last request carried the whole history, so this one fits), when that older part is
    /// worth it: [`MANUAL_MIN_TOKENS`] or more, and not just an earlier checkpoint. Returns
    /// what was done and what the summary request cost.
    pub(crate) async fn compact_now(
        &mut self,
        mut h: History<'_>,
        turn: u32,
        focus: Option<&str>,
        stop: &Stop,
    ) -> Result<(ManualCompaction, Usage), CoreError> {
        let pruned = self.prune(&mut h, turn)?;
        let history = h.session.history();
        let worth = split_point(history, 0).filter(|&cut| {
            let only_a_checkpoint = cut == 1 && is_checkpoint(&history[0]);
            !only_a_checkpoint && estimate_tokens(&history[..cut]) >= MANUAL_MIN_TOKENS
        });
        let Some(cut) = worth else {
            let tokens = estimate_tokens(history);
            return Ok((
                ManualCompaction::TooShort { tokens, pruned },
                Usage::default(),
            ));
        };
        let (summarised, usage) = self
            .summarise_head(&mut h, turn, "manual", cut, focus, stop)
            .await?;
        let outcome = if summarised {
            ManualCompaction::Summarised
        } else {
            ManualCompaction::NotSummarised { pruned }
        };
        Ok((outcome, usage))
    }

    /// After an overflow: prunes, and summarises all but the last unit, a half at a time.
    /// Returns whether the history changed, and what the summary requests cost.
    pub(crate) async fn compact_all(
        &mut self,
        mut h: History<'_>,
        turn: u32,
        reason: &str,
        stop: &Stop,
    ) -> Result<(bool, Usage), CoreError> {
        let mut changed = self.prune(&mut h, turn)?;
        let mut spent = Usage::default();
        // The history just overflowed, so a request for all of it would too: summarise the
        // oldest half, then the oldest half of what is left, a few times.
        for _ in 0..3 {
            let history = h.session.history();
            let half = estimate_tokens(history) / 2;
            let Some(last_unit) = split_point(history, 0) else {
                break;
            };
            // At least the oldest whole unit, even when it alone is more than half.
            let first_unit = (2..history.len())
                .find(|&i| !is_tool_result(&history[i]))
                .unwrap_or(last_unit);
            let cut = head_cut(history, half)
                .unwrap_or(0)
                .max(first_unit)
                .min(last_unit);
            // A head of one message (the last round's checkpoint) is not worth a request.
            if cut < 2 {
                break;
            }
            let (summarised, usage) =
                (self.summarise_head(&mut h, turn, reason, cut, None, stop)).await?;
            spent.add(&usage);
            if !summarised {
                break;
            }
            changed = true;
        }
        Ok((changed, spent))
    }

    /// Cuts long tool results to head and tail; whether any was.
    fn prune(&mut self, h: &mut History<'_>, turn: u32) -> Result<bool, CoreError> {
        let pruned = prunable(h.session.history());
        let any = !pruned.is_empty();
        for (index, call_id, message) in pruned {
            h.commit(Record::CompactionPrune(CompactionPruneRecord {
                turn,
                index: index as u32,
                call_id,
                message,
            }))?;
        }
        if any {
            self.last_prompt = None;
        }
        Ok(any)
    }

    /// Replaces the first `cut` messages of the history by the model's summary of them. A
    /// failed summary request, or a summary no smaller than what it condenses, changes
    /// nothing; its usage is counted either way. `focus`: what the user asked the summary to
    /// keep (`/compact FOCUS`), told the model after the instruction and the PreCompact hooks
    /// as their `custom_instructions`.
    async fn summarise_head(
        &mut self,
        h: &mut History<'_>,
        turn: u32,
        reason: &str,
        cut: usize,
        focus: Option<&str>,
        stop: &Stop,
    ) -> Result<(bool, Usage), CoreError> {
        if let Some(hooks) = h.hooks {
            let trigger = if reason == "manual" { "manual" } else { "auto" };
            let custom = focus.unwrap_or("");
            let fields = serde_json::json!({"trigger": trigger, "custom_instructions": custom});
            let on = [trigger];
            (hooks.fire(
                crate::HookEvent::PreCompact,
                Some(&on),
                fields,
                stop.token(),
            ))
            .await;
        }
        let history = h.session.history();
        let before = estimate_tokens(history);
        let condensed = estimate_tokens(&history[..cut]);
        let mut messages = history[..cut].to_vec();
        messages.push(Message::user_text(match focus {
            Some(focus) => format!(
                "{SUMMARY_INSTRUCTION}\n\nThe user asked this checkpoint to focus on: {focus}\n                 Keep what bears on it in full detail; the rest may be terser."
            ),
            None => SUMMARY_INSTRUCTION.to_owned(),
        }));
        let request = ModelRequest {
            model: h.model,
            system: h.system,
            messages: &messages,
            tools: h.specs,
            // Thinking would eat the summary's output budget; the summary needs none.
            effort: Effort::Off,
            max_output_tokens: Some(SUMMARY_MAX_TOKENS),
        };
        // The summary is not shown as it streams: it is not an answer to the user.
        let mut quiet = |_| {};
        let answer = tokio::select! {
            biased;
            () = stop.token().cancelled() => return Ok((false, Usage::unreported())),
            answer = h.provider.complete(request, &mut quiet) => answer,
        };
        let completion = match answer {
            Ok(completion) => completion,
            Err(error) => {
                self.summary_failed_at = Some(h.session.history().len());
                return Ok((false, error.usage));
            }
        };
        let summary = completion.message.text();
        let replacement = checkpoint(&summary);
        let replacement_size = estimate_tokens(std::slice::from_ref(&replacement));
        // A summary cut at its output limit is half a checkpoint: it would replace the history
        // for good, so it is not used.
        if summary.trim().is_empty()
            || completion.finish == FinishReason::MaxTokens
            || replacement_size >= condensed
        {
            self.summary_failed_at = Some(h.session.history().len());
            return Ok((false, completion.billed()));
        }
        h.commit(Record::CompactionSummary(CompactionSummaryRecord {
            turn,
            replaced: cut as u32,
            message: replacement,
            reason: reason.to_owned(),
            tokens_before: before,
            tokens_after: before - condensed + replacement_size,
            model: h.model.to_owned(),
            usage: completion.billed(),
        }))?;
        self.last_prompt = None;
        self.summarised = true;
        Ok((true, completion.billed()))
    }
}
