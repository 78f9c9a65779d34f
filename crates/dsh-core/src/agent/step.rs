//! One step: a request to the model (unless a cap forbids it), its answer committed, and the
//! tool calls it made run ([`Agent::run_tools`]).

use dsh_llm::{ModelRequest, StreamDelta};
use dsh_protocol::{
    AssistantMessageRecord, FailureCode, FinishReason, Record, TurnEndReason, Usage,
};

use super::pipeline::Call;
use super::{Agent, AgentEvent, Stop};
use crate::CoreError;

/// The end of one step.
pub(super) struct StepOutcome {
    pub(super) usage: Usage,
    pub(super) text: String,
    pub(super) end: Option<TurnEndReason>,
}

impl Agent {
    /// The step's request, unless the run's caps do not allow one more: then the step ends
    /// with the cap's reason. `spent` is what the step has cost so far.
    pub(super) async fn capped_step(
        &mut self,
        turn: u32,
        step: u32,
        spent: &Usage,
        stop: &Stop,
    ) -> Result<StepOutcome, CoreError> {
        if let Some(end) = self.run_cap_with(0, spent) {
            return Ok(StepOutcome {
                usage: Usage::default(),
                text: String::new(),
                end: Some(end),
            });
        }
        self.run_requests += 1;
        self.step(turn, step, stop).await
    }

    /// One request: the answer streamed (its deltas sent as they come), committed, and the
    /// calls it made run.
    pub(super) async fn step(
        &mut self,
        turn: u32,
        step: u32,
        stop: &Stop,
    ) -> Result<StepOutcome, CoreError> {
        // Tools that became ready since the last request (a slow MCP server) join this one.
        if self.tools.take_joins() {
            self.specs = self.tools.specs();
        }
        let sent_len = self.session.history().len();
        let request = ModelRequest {
            model: &self.config.model,
            system: &self.system,
            messages: self.session.history(),
            tools: &self.specs,
            effort: self.config.effort,
            max_output_tokens: self.config.max_output_tokens,
        };
        let events = self.events.clone();
        let redactor = self.session.redactor().cloned();
        // The sandbox of the first command is got ready once the model starts a tool call:
        // not before the first request is on the wire (it would be sent later), not in a run
        // that calls no tool, and while the rest of the call streams rather than in front of
        // the command.
        let warmed = self.sandbox_warmed.clone();
        let mut warm = match &self.tool_session.shell {
            Some(shell) if !warmed.load(std::sync::atomic::Ordering::SeqCst) => {
                Some((shell.sandbox.clone(), self.tool_session.policy.clone()))
            }
            _ => None,
        };
        let mut on_delta = move |mut delta| {
            if matches!(delta, StreamDelta::ToolCall)
                && let Some((sandbox, policy)) = warm.take()
            {
                warmed.store(true, std::sync::atomic::Ordering::SeqCst);
                sandbox.warm_up(policy);
            }
            // A retry's reason is the provider's message, which can quote the key.
            if let (StreamDelta::Retry(notice), Some(redactor)) = (&mut delta, &redactor)
                && let std::borrow::Cow::Owned(redacted) = redactor.redact(&notice.message)
            {
                notice.message = redacted;
            }
            let _ = events.send(AgentEvent::Delta(delta));
        };
        let answer = tokio::select! {
            biased;
            () = stop.token().cancelled() => None,
            answer = self.provider.complete(request, &mut on_delta) => Some(answer),
        };
        let completion = match answer {
            // The request was on the wire: it may be billed, but nobody will say for how much.
            None => {
                return Ok(StepOutcome {
                    usage: Usage::unreported(),
                    text: String::new(),
                    end: Some(stop.turn_end()),
                });
            }
            Some(Err(error)) => {
                return Ok(StepOutcome {
                    usage: error.usage,
                    text: String::new(),
                    end: Some(TurnEndReason::Error {
                        error: error.failure,
                    }),
                });
            }
            Some(Ok(completion)) => completion,
        };
        // The size measurement takes the answering attempt alone; billing takes them all.
        let mut billed = completion.billed();
        self.compactor.measured(&completion.usage, sent_len);
        let text = completion.message.text();
        let calls: Vec<Call> = (completion.message.tool_calls())
            .map(|(id, name, arguments)| Call::prepare(&self.tools, id, name, arguments))
            .collect();
        self.commit(Record::AssistantMessage(AssistantMessageRecord {
            turn,
            step,
            message: completion.message,
            finish: completion.finish,
            provider: self.provider.name().to_owned(),
            model: self.config.model.clone(),
            usage: billed,
        }))?;
        let end = if calls.is_empty() {
            Some(if completion.finish == FinishReason::MaxTokens {
                TurnEndReason::MaxTokens
            } else {
                TurnEndReason::Completed
            })
        } else {
            let cut_off = completion.finish == FinishReason::MaxTokens;
            let touched: Vec<String> = (calls.iter())
                .filter_map(|call| call.prepared.touched_path().map(str::to_owned))
                .collect();
            let ran = self.run_tools(turn, step, calls, cut_off, stop).await?;
            // What the calls billed themselves (a subagent's requests) is the step's too.
            billed.add(&ran.usage);
            self.deliver_nested_instructions(turn, &touched)?;
            self.deliver_goal_wrap_up(turn)?;
            match ran.ending {
                // A tool ended the turn (a plan submitted with no one to approve it): its text
                // is the answer, unless the run was stopped meanwhile.
                Some((reason, answer)) if !stop.is_requested() => {
                    return Ok(StepOutcome {
                        usage: billed,
                        text: answer,
                        end: Some(reason),
                    });
                }
                // The results go back to the model in the next step, even after a cut-off
                // answer: only a step without tool calls ends the turn.
                _ => stop.is_requested().then(|| stop.turn_end()),
            }
        };
        Ok(StepOutcome {
            usage: billed,
            text,
            end,
        })
    }
}

/// Whether a step failed because its request did not fit the context window.
pub(super) fn is_overflow(outcome: &StepOutcome) -> bool {
    matches!(
        &outcome.end,
        Some(TurnEndReason::Error { error }) if error.code == FailureCode::ContextWindowExceeded
    )
}
