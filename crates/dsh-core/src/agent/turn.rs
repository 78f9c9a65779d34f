//! One turn: its start and its checkpoints, its steps until the model answers without calling
//! a tool (or a limit, a failure or a stop ends it), what is delivered to the model between
//! steps (finished background work, nested instructions, a goal's wrap-up), the Stop hooks and
//! `--output-schema`'s check of the answer, and its end.

use dsh_protocol::{CheckpointAt, Failure, FailureCode, Message, Record, TurnEndReason, Usage};

use super::config::MAX_STOP_BLOCKS;
use super::step::{StepOutcome, is_overflow};
use super::{Agent, AgentEvent, Steering, Stop, TurnSummary};
use crate::{CoreError, HookEvent};

impl Agent {
    /// Starts a turn: its number, its `turn/start`, and a snapshot of the workspace begun
    /// while the turn's first request goes out (the walk of a large tree costs the model's
    /// time, not the user's). It becomes the turn's start checkpoint only if a call that can
    /// change a file runs ([`Agent::checkpoint_turn_start`]); a turn that runs none takes no
    /// checkpoint, and its snapshot is given up.
    pub(super) async fn start_turn(&mut self) -> Result<u32, CoreError> {
        let turn = self.session.next_turn();
        self.commit(Record::TurnStart { turn })?;
        self.turn_checkpointed = false;
        if let Some(checkpointer) = &self.checkpointer {
            self.pending_checkpoint = Some(checkpointer.begin(turn, CheckpointAt::Start, None));
        }
        Ok(turn)
    }

    /// Commits the turn's start checkpoint, once the snapshot begun with the turn is taken:
    /// before the first call that can change a file.
    pub(super) async fn checkpoint_turn_start(&mut self) -> Result<(), CoreError> {
        let (Some(pending), Some(checkpointer)) =
            (self.pending_checkpoint.take(), self.checkpointer.as_mut())
        else {
            return Ok(());
        };
        self.turn_checkpointed = true;
        let taken = checkpointer.finish(pending).await;
        self.checkpointed(taken)
    }

    /// Checkpoints the workspace, when the agent takes checkpoints.
    pub(super) async fn checkpoint(
        &mut self,
        turn: u32,
        at: CheckpointAt,
        call_id: Option<String>,
    ) -> Result<(), CoreError> {
        self.checkpoint_turn_start().await?;
        let Some(checkpointer) = self.checkpointer.as_mut() else {
            return Ok(());
        };
        let taken = checkpointer.take(turn, at, call_id).await;
        self.checkpointed(taken)
    }

    /// A checkpoint taken is committed; one that could not be taken does not stop the turn:
    /// the user is told that this point cannot be rewound to.
    pub(super) fn checkpointed(&mut self, taken: Result<Record, String>) -> Result<(), CoreError> {
        match taken {
            Ok(record) => self.commit(record),
            Err(why) => {
                let _ = self.events.send(AgentEvent::Notice(format!(
                    "the workspace could not be checkpointed, so a rewind cannot go back \
                     to this point: {why}"
                )));
                Ok(())
            }
        }
    }

    /// The Stop hooks, when the model has answered: `Some` is a hook's reason to go on, the
    /// next message to the model, at most [`MAX_STOP_BLOCKS`] times a turn.
    async fn stop_hooks(&self, blocks: &mut u32, stop: &Stop) -> Option<String> {
        let hooks = self.config.hooks.as_ref()?;
        if *blocks >= MAX_STOP_BLOCKS {
            return None;
        }
        let verdict = hooks
            .fire(
                HookEvent::Stop,
                None,
                serde_json::json!({"stop_hook_active": *blocks > 0}),
                stop.token(),
            )
            .await;
        let why = verdict.blocked?;
        *blocks += 1;
        Some(why)
    }

    /// With `--output-schema`, a completed turn's answer must be valid JSON for it: a valid
    /// one is kept ([`Agent::structured_output`]) and the turn ends; an invalid one is sent
    /// back with what failed (`None`: go on), [`OUTPUT_RETRIES`] times, then the turn ends
    /// as `output-schema`.
    fn check_output(
        &mut self,
        end: &TurnEndReason,
        text: &str,
        turn: u32,
        corrections: &mut u32,
    ) -> Result<Option<TurnEndReason>, CoreError> {
        let Some(schema) = self.config.output_schema.clone() else {
            return Ok(Some(end.clone()));
        };
        if !end.is_completed() {
            return Ok(Some(end.clone()));
        }
        match schema.check(text) {
            Ok(value) => {
                self.structured = Some(value);
                Ok(Some(end.clone()))
            }
            Err(problem) if *corrections < crate::OUTPUT_RETRIES => {
                *corrections += 1;
                self.commit(Record::UserMessage {
                    turn,
                    message: Message::user_text(schema.correction(&problem)),
                    instructions: None,
                })?;
                Ok(None)
            }
            Err(problem) => Ok(Some(TurnEndReason::OutputSchema {
                message: format!(
                    "the final answer still did not match --output-schema after {} \
                     corrections: {problem}",
                    crate::OUTPUT_RETRIES
                ),
            })),
        }
    }

    /// Runs one turn for `task` until the model answers without calling a tool, the step cap
    /// is reached, a request fails for good, or `stop` is requested. Reached only through
    /// [`Agent::run`], whose boxing keeps it compiled once.
    pub(super) async fn run_turn(
        &mut self,
        task: String,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        let turn = self.open_turn(task).await?;
        let mut usage = Usage::default();
        let mut text = String::new();
        let mut step = 0;
        let mut corrections = 0;
        let mut stop_blocks = 0;
        let reason = loop {
            if let Some(end) = self.turn_limit(step, &usage, stop) {
                break end;
            }
            let noticed = if step > 0 {
                // What the user sent while the calls ran, after their results.
                self.deliver_steering(turn, stop).await?;
                self.deliver_notices(turn)?
            } else {
                std::mem::take(&mut self.carried)
            };
            step += 1;
            self.commit(Record::StepStart { turn, step })?;
            let mut outcome = self.compacted_step(turn, step, noticed, stop).await?;
            usage.add(&outcome.usage);
            self.run_usage.add(&outcome.usage);
            let step_text = std::mem::take(&mut outcome.text);
            if !step_text.is_empty() {
                text.clone_from(&step_text);
            }
            self.commit(Record::StepEnd {
                turn,
                step,
                usage: outcome.usage,
            })?;
            if let Some(end) = outcome.end {
                match self.check_output(&end, &step_text, turn, &mut corrections)? {
                    Some(end) if end.is_completed() => {
                        if let Some(why) = self.stop_hooks(&mut stop_blocks, stop).await {
                            // The answer the schema accepted is not the last one any more.
                            self.structured = None;
                            self.commit(Record::UserMessage {
                                turn,
                                message: Message::user_text(why),
                                instructions: None,
                            })?;
                            continue;
                        }
                        break end;
                    }
                    Some(end) => break end,
                    // The model is told what is wrong and answers again.
                    None => continue,
                }
            }
        };
        // What woke a turn that ended before its first step is still the turn's.
        usage.add(&std::mem::take(&mut self.carried));
        self.end_turn(TurnSummary {
            turn,
            reason,
            text,
            usage,
            steps: step,
        })
        .await
    }

    /// Starts the turn of `task` and commits its message (and the workspace instructions not
    /// delivered yet); returns its number.
    async fn open_turn(&mut self, task: String) -> Result<u32, CoreError> {
        if let Some(shared) = &self.config.completed_history {
            *shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                self.session.completed_history().to_vec();
        }
        // The answer's JSON is the last turn's: a wake turn that ends otherwise has none.
        self.structured = None;
        let turn = self.start_turn().await?;
        // For Auto review, on now or after a plan's approval.
        if self.config.reviewer.is_some() || self.config.standby_reviewer.is_some() {
            self.turn_task.clone_from(&task);
        }
        let images = std::mem::take(&mut self.attached);
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_with_images(task, images),
            instructions: None,
        })?;
        if let Some(delivery) = self.config.instructions.take() {
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(self.redacted(delivery.text)),
                instructions: Some(delivery.files),
            })?;
        }
        Ok(turn)
    }

    /// How the turn ends before its next step, if it must: stopped, at the step cap, at one of
    /// the run's caps, or with the agent's token budget (`usage`: the turn's so far) spent.
    fn turn_limit(&self, step: u32, usage: &Usage, stop: &Stop) -> Option<TurnEndReason> {
        if stop.is_requested() {
            return Some(stop.turn_end());
        }
        if step >= self.config.max_steps {
            return Some(TurnEndReason::Error {
                error: Failure::new(
                    FailureCode::MaxSteps,
                    format!(
                        "the turn reached its limit of {} steps without a final answer; \
                         raise it with --max-steps",
                        self.config.max_steps
                    ),
                ),
            });
        }
        if let Some(end) = self.run_cap() {
            return Some(end);
        }
        let budget = self.config.token_budget?;
        (self.spent_before + usage.total_tokens >= budget).then(|| TurnEndReason::Error {
            error: Failure::new(
                FailureCode::TokenBudget,
                format!(
                    "the agent spent its budget of {budget} tokens (subagents.max_tokens) \
                     before a final answer"
                ),
            ),
        })
    }

    /// The step's request after compacting the history as far as its threshold asks, and
    /// once more after compacting all it can when the provider says the request did not fit.
    /// `noticed` is what background subagents billed for the turns told now: the step's. The
    /// outcome's usage covers it all.
    async fn compacted_step(
        &mut self,
        turn: u32,
        step: u32,
        noticed: Usage,
        stop: &Stop,
    ) -> Result<StepOutcome, CoreError> {
        let (compactor, history) = self.compaction();
        let mut spent = compactor.compact(history, turn, "threshold", stop).await?;
        self.redeliver_after_summary(turn)?;
        spent.add(&noticed);
        // A compaction summary may have spent what the budget had left.
        let mut outcome = self.capped_step(turn, step, &spent, stop).await?;
        if is_overflow(&outcome) {
            // The provider says the request does not fit: compact as far as possible and try
            // the step once more, if the run's caps allow one more request.
            let (compactor, history) = self.compaction();
            let (changed, cost) = compactor
                .compact_all(history, turn, "overflow", stop)
                .await?;
            spent.add(&cost);
            self.redeliver_after_summary(turn)?;
            if changed {
                spent.add(&outcome.usage);
                outcome = self.capped_step(turn, step, &spent, stop).await?;
            }
        }
        outcome.usage.add(&spent);
        Ok(outcome)
    }

    /// Ends the turn `summary` describes: its `turn/end` committed, what it spent counted, the
    /// summary handed back with its reason as logged (a provider's message can quote the key
    /// it was sent).
    pub(super) async fn end_turn(
        &mut self,
        mut summary: TurnSummary,
    ) -> Result<TurnSummary, CoreError> {
        // Only a turn that could change files ends with a checkpoint; one that could not gives
        // up the snapshot begun with it.
        if self.turn_checkpointed {
            self.checkpoint(summary.turn, CheckpointAt::End, None)
                .await?;
        }
        self.pending_checkpoint = None;
        self.session.redact_reason(&mut summary.reason);
        self.commit(Record::TurnEnd {
            turn: summary.turn,
            reason: summary.reason.clone(),
        })?;
        self.spent_before += summary.usage.total_tokens;
        Ok(summary)
    }

    /// Instruction files in folders the file tools just reached (`touched`: the paths their
    /// calls worked on), as user messages after the results.
    pub(super) fn deliver_nested_instructions(
        &mut self,
        turn: u32,
        touched: &[String],
    ) -> Result<(), CoreError> {
        let Some(settings) = self.config.nested_instructions.clone() else {
            return Ok(());
        };
        let cwd = self.session.cwd().to_path_buf();
        let mut messages = Vec::new();
        for path in touched {
            messages.extend(crate::instructions::nested(
                &cwd,
                std::path::Path::new(path),
                &mut self.probed,
                &settings,
                self.session.loaded_instructions(),
            ));
        }
        for delivery in messages {
            let text = self.redacted(delivery.text);
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(text),
                instructions: Some(delivery.files),
            })?;
        }
        Ok(())
    }

    /// After the model completed or blocked its goal in a round: what its closing answer
    /// should say, before its next request.
    pub(super) fn deliver_goal_wrap_up(&mut self, turn: u32) -> Result<(), CoreError> {
        let Some(text) = self.config.goals.as_ref().and_then(|g| g.take_wrap_up()) else {
            return Ok(());
        };
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(text),
            instructions: None,
        })
    }

    /// Tells the model, before its next request, which background jobs and subagents have
    /// finished; returns what those subagents billed.
    fn deliver_notices(&mut self, turn: u32) -> Result<Usage, CoreError> {
        let (notices, usage) = self.take_notices(turn)?;
        if !notices.is_empty() {
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(notices.join("\n")),
                instructions: None,
            })?;
        }
        Ok(usage)
    }
}

impl Agent {
    /// The inbox for messages sent while this agent works ([`Steering`]).
    pub fn steering(&self) -> Steering {
        self.steering.clone()
    }

    /// Commits the messages waiting in the steering inbox, at a step boundary of `turn`. Each
    /// goes through the UserPromptSubmit hooks as a task does: one a hook withholds is not
    /// sent, and a notice says why.
    pub(super) async fn deliver_steering(
        &mut self,
        turn: u32,
        stop: &Stop,
    ) -> Result<(), CoreError> {
        for text in self.steering.take_all() {
            let text = match self.prompt_hooks(text, stop).await {
                Ok(text) => text,
                Err(why) => {
                    let _ = self.events.send(AgentEvent::Notice(format!(
                        "a UserPromptSubmit hook withheld the message sent during the turn: \
                         {why}"
                    )));
                    continue;
                }
            };
            // Auto review judges each call against what the user asked, this included.
            if self.config.reviewer.is_some() || self.config.standby_reviewer.is_some() {
                self.turn_task.push_str("\n\n");
                self.turn_task.push_str(&text);
            }
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(text),
                instructions: None,
            })?;
        }
        Ok(())
    }
}
