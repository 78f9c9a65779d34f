//! The calls of one answer: which run together, the checkpoints before them, each through the
//! call pipeline (`pipeline.rs`), and their results and effects committed in call order.

use std::sync::Arc;

use dsh_protocol::{CheckpointAt, Record, ToolOutputPart, TurnEndReason, Usage};
use dsh_tools::{ToolContext, ToolEffect, ToolError, ToolOutcome};
use futures_util::StreamExt;

use super::pipeline::{Call, Gates, Passed, cut_off_outcome, result_record};
use super::{Agent, Stop};
use crate::CoreError;
use crate::auto_review::{AutoReviewer, ReviewContext};
use crate::plan_approval::{self, PlanDecision};

/// What a step's calls did beyond their results.
pub(super) struct ToolsRun {
    /// How the turn ends, with its answer, when a call's effect ended it.
    pub(super) ending: Option<(TurnEndReason, String)>,
    /// What the calls billed.
    pub(super) usage: Usage,
}

/// Why the calls after one that ended the turn are not run.
const AFTER_ENDING: &str = "tool call not run: an earlier call of this answer ended the turn";
/// Why the calls after a plan the user answered are not run: the model reads the answer first.
const AFTER_PLAN: &str = "tool call not run: an earlier call of this answer submitted a plan, \
                          which the user has answered; read the answer, then make the call \
                          again if it is still needed";
/// Why the calls left when the run was stopped are not run.
const STOPPED: &str = "tool call aborted before dispatch";

impl Agent {
    /// Runs the calls of one answer: a run of consecutive parallel-safe calls together (at most
    /// `max_parallel_tools` in flight), any other call alone; results committed in call order,
    /// each followed by what its effect records. Returns how the turn ends when a call's effect
    /// ends it, with the answer.
    pub(super) async fn run_tools(
        &mut self,
        turn: u32,
        step: u32,
        calls: Vec<Call>,
        cut_off: bool,
        stop: &Stop,
    ) -> Result<ToolsRun, CoreError> {
        // The turn's start checkpoint is in before the first call that can change a file.
        if calls.iter().any(|call| !call.prepared.changes_no_file()) {
            self.checkpoint_turn_start().await?;
        }
        let mut ran = ToolsRun {
            ending: None,
            usage: Usage::default(),
        };
        let mut plan_answered = false;
        let mut calls = calls.into_iter().peekable();
        while let Some(call) = calls.next() {
            let not_run = if ran.ending.is_some() {
                Some(AFTER_ENDING)
            } else if plan_answered {
                Some(AFTER_PLAN)
            } else {
                stop.is_requested().then_some(STOPPED)
            };
            if let Some(why) = not_run {
                self.not_run(turn, step, std::iter::once(call).chain(calls), why)?;
                break;
            }
            if cut_off && !call.prepared.arguments_are_json() {
                self.commit(call.record(turn, step))?;
                self.commit(result_record(turn, step, &call.id, cut_off_outcome()))?;
                continue;
            }
            let mut group = vec![call];
            if group[0].prepared.parallel_safe() {
                while let Some(more) = calls.next_if(|call| call.prepared.parallel_safe()) {
                    group.push(more);
                }
            }
            plan_answered = self.run_group(turn, step, group, &mut ran, stop).await?;
        }
        Ok(ran)
    }

    /// Commits `calls` as not run, each with `why` as its error.
    fn not_run(
        &mut self,
        turn: u32,
        step: u32,
        calls: impl Iterator<Item = Call>,
        why: &str,
    ) -> Result<(), CoreError> {
        for call in calls {
            self.commit(call.record(turn, step))?;
            let error = ToolError::coded("AbortError", "ABORTED_BEFORE_DISPATCH", why);
            self.commit(result_record(
                turn,
                step,
                &call.id,
                ToolOutcome::failure(error),
            ))?;
        }
        Ok(())
    }

    /// Runs one group (consecutive parallel-safe calls, or one other call) through the
    /// pipeline, at most `max_parallel_tools` at once, and commits what came of each in call
    /// order. Returns whether the user answered a plan one of them submitted.
    async fn run_group(
        &mut self,
        turn: u32,
        step: u32,
        group: Vec<Call>,
        ran: &mut ToolsRun,
        stop: &Stop,
    ) -> Result<bool, CoreError> {
        // A call that asks to run outside the sandbox may change what the sandbox kept:
        // the files as they are just before it can be gone back to.
        for call in &group {
            if call.prepared.asks_escalation() {
                self.checkpoint(turn, CheckpointAt::BeforeEscalation, Some(call.id.clone()))
                    .await?;
            }
        }
        // The whole group is recorded as started before it runs: its calls are read-only,
        // so a crash in between costs nothing but a re-run.
        for call in &group {
            self.commit(call.record(turn, step))?;
        }
        let gates = Gates {
            hooks: self.config.hooks.clone(),
            rules: self.config.rules.clone(),
            // What the reviewer reads is gathered only for a group that has a call to review.
            review: (group.iter())
                .any(|call| call.prepared.auto_reviewed())
                .then(|| self.review_context())
                .flatten(),
        };
        let ctx = ToolContext {
            call_id: String::new(),
            cwd: self.session.cwd().to_path_buf(),
            cancel: stop.token().clone(),
            session: self.tool_session.clone(),
        };
        let mut passed = futures_util::stream::iter(group)
            .map(|call| gates.clone().pass(call, ctx.clone()))
            .buffered(self.config.max_parallel_tools.max(1));
        let mut plan_answered = false;
        while let Some(passed) = passed.next().await {
            plan_answered |= self.settle(turn, step, passed, ran, stop).await?;
        }
        Ok(plan_answered)
    }

    /// Commits what came of one call: its review, then what its effect records, then its
    /// result. Returns whether the user answered a plan it submitted.
    async fn settle(
        &mut self,
        turn: u32,
        step: u32,
        passed: Passed,
        ran: &mut ToolsRun,
        stop: &Stop,
    ) -> Result<bool, CoreError> {
        let Passed {
            call_id,
            mut outcome,
            review,
        } = passed;
        ran.usage.add(&outcome.usage);
        // The review before the result: a run killed between them still accounts for what the
        // review billed.
        if let Some(mut review) = review {
            review.turn = turn;
            self.commit(Record::AutoReview(review))?;
        }
        // What the effect records first, as the reference records a list: a run killed between
        // the two keeps the list the call made.
        let plan_answered = match outcome.effect.take() {
            Some(effect) => {
                (self.apply_effect(turn, &call_id, effect, &mut outcome, ran, stop)).await?
            }
            None => false,
        };
        self.commit(result_record(turn, step, &call_id, outcome))?;
        Ok(plan_answered)
    }

    /// What a call's effect does besides its result: a record committed, a submitted plan put
    /// to the user, the turn ended. Returns whether the user answered a plan.
    async fn apply_effect(
        &mut self,
        turn: u32,
        call_id: &str,
        effect: ToolEffect,
        outcome: &mut ToolOutcome,
        ran: &mut ToolsRun,
        stop: &Stop,
    ) -> Result<bool, CoreError> {
        match effect {
            ToolEffect::Todos(todos) => self.commit(Record::TodoWrite { turn, todos })?,
            // A submitted plan is put to the user, if there is one to ask: approved or sent
            // back, the turn goes on.
            ToolEffect::EndTurn {
                reason: TurnEndReason::PlanSubmitted,
                text,
            } if ran.ending.is_none() => {
                let decision = self.put_plan_to_user(call_id, stop).await;
                if decision != PlanDecision::Undecided || self.tool_session.questions.is_some() {
                    outcome.parts = vec![ToolOutputPart::Text {
                        text: plan_approval::result_text(&decision),
                    }];
                }
                match decision {
                    PlanDecision::Undecided => {
                        ran.ending = Some((TurnEndReason::PlanSubmitted, text));
                    }
                    PlanDecision::Approved(mode) => {
                        self.switch_mode(mode)?;
                        return Ok(true);
                    }
                    PlanDecision::KeepPlanning(_) => return Ok(true),
                }
            }
            // The first call that ends the turn decides how.
            ToolEffect::EndTurn { reason, text } => {
                ran.ending.get_or_insert((reason, text));
            }
            ToolEffect::Present(mut shown) => {
                shown.turn = turn;
                self.commit(Record::Presentation(shown))?;
            }
            ToolEffect::Goal(mut change) => {
                change.turn = turn;
                self.commit(Record::GoalChange(change))?;
            }
            ToolEffect::Subagents(runs) => {
                for mut run in runs {
                    run.turn = turn;
                    self.commit(Record::SubagentRun(Box::new(run)))?;
                }
            }
        }
        Ok(false)
    }

    /// The user's decision on a plan submitted in plan mode; `Undecided` with nobody to ask
    /// (headless: the plan is the turn's answer) or once the run is stopped.
    async fn put_plan_to_user(&self, call_id: &str, stop: &Stop) -> PlanDecision {
        let Some(questions) = self.tool_session.questions.clone() else {
            return PlanDecision::Undecided;
        };
        let auto_review = self.config.standby_reviewer.is_some();
        let question = plan_approval::question(auto_review);
        let outcome = tokio::select! {
            biased;
            () = stop.token().cancelled() => return PlanDecision::Undecided,
            outcome = questions.ask(call_id, vec![question]) => outcome,
        };
        plan_approval::decision(outcome, auto_review)
    }

    /// Leaves plan mode for `mode`, the user's pick for carrying out the plan: the tools work
    /// under its sandbox from the next call on, subagents started from now on too, and the
    /// session records it so that a resume keeps it. The approval policy becomes the mode's
    /// default (plan mode's is `never`, having nothing wider to ask for).
    fn switch_mode(&mut self, mode: dsh_config::PermissionMode) -> Result<(), CoreError> {
        use dsh_sandbox::escalation::ApprovalPolicy;
        let approval = if mode.is_auto() {
            ApprovalPolicy::Ask
        } else {
            ApprovalPolicy::default_for(mode.sandbox())
        };
        let policy = self.tool_session.policy.with_mode(mode.sandbox());
        self.tool_session = Arc::new(self.tool_session.with_permissions(policy, approval, false));
        if mode.is_auto() {
            self.config.reviewer = self.config.standby_reviewer.take();
        }
        if let Some(current) = &self.config.mode {
            current.set(mode);
        }
        self.commit(Record::PermissionMode(dsh_protocol::PermissionRecord {
            mode: mode.to_string(),
            approval: approval.to_string(),
            source: "the plan's approval".to_owned(),
        }))
    }

    /// What Auto review reads besides a call, as the history stands now (the calls' own
    /// answer included); `None` without a reviewer.
    fn review_context(&self) -> Option<(Arc<AutoReviewer>, Arc<ReviewContext>)> {
        let reviewer = self.config.reviewer.clone()?;
        let history = self.session.history();
        let from = history.len().saturating_sub(reviewer.transcript_messages());
        let context = ReviewContext {
            task: reviewer.reads_task().then(|| self.turn_task.clone()),
            task_origin: self.turn_origin.words(),
            transcript: history[from..].to_vec(),
        };
        Some((reviewer, Arc::new(context)))
    }
}
