//! A run of the agent: the loops around a turn. [`Agent::run`] takes a task through the prompt
//! hooks to its turn, then the turns finished background work wakes, then the goal's rounds;
//! [`Agent::run_workflow`] is a saved workflow's turn, without the model. The run's caps
//! (`--max-turns`, `--max-budget-usd`) are checked before every request.

use std::time::Duration;

use dsh_protocol::{Failure, FailureCode, Message, Record, TurnEndReason, Usage};
use dsh_tools::{ToolContext, ToolEffect};
use futures_util::future::BoxFuture;

use super::{Agent, AgentConfig, Stop, TaskOrigin, TurnSummary};
use crate::compaction::ManualCompaction;
use crate::goals::{Authority, NextRound};
use crate::{CoreError, HookEvent};

/// How long, at the end of a run, background subagents have to end their turns once stopped.
const STOP_WAIT: Duration = Duration::from_secs(5);

impl Agent {
    /// Runs the task: one turn, then, while background jobs still run, waits (up to
    /// `job_wait` in all) for them to finish and gives the model their notices in a new turn,
    /// at most [`AgentConfig::MAX_WAKES`] times. The summary covers every turn: the last
    /// reason, the last text, all usage.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn run<'a>(
        &'a mut self,
        task: String,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<TurnSummary, CoreError>> {
        Box::pin(self.run_task(task, stop))
    }

    async fn run_task(&mut self, task: String, stop: &Stop) -> Result<TurnSummary, CoreError> {
        self.run_requests = 0;
        self.run_usage = Usage::default();
        self.structured = None;
        let task = match self.prompt_hooks(task, stop).await {
            Ok(task) => task,
            Err(why) => return self.withheld(why).await,
        };
        if let Some(background) = &self.config.background {
            background.open();
        }
        let outcome = match self.run_and_wake(task, Authority::Human, stop).await {
            Ok(summary) => self.goal_rounds(summary, stop).await,
            Err(error) => Err(error),
        };
        // The session's title, once its first turn has run: what it billed is the run's.
        let outcome = match outcome {
            Ok(mut summary) => {
                let usage = self.title_session(stop).await?;
                summary.usage.add(&usage);
                self.run_usage.add(&usage);
                Ok(summary)
            }
            Err(error) => Err(error),
        };
        // Background subagents still at work are stopped with the run, however it ends; what
        // they billed counts.
        let Some(background) = self.config.background.clone() else {
            return outcome;
        };
        background.stop_all(STOP_WAIT).await;
        let mut summary = outcome?;
        let (_, usage) = self.take_notices(summary.turn)?;
        summary.usage.add(&usage);
        Ok(summary)
    }

    /// [`Agent::run`] for a task with images attached (already in the attachment store), for a
    /// model that takes images: the front end checks that it does, and says so when not.
    pub async fn run_with_images(
        &mut self,
        task: String,
        images: Vec<dsh_protocol::ImageRef>,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.attached = images;
        let summary = self.run(task, stop).await;
        // A hook may have withheld the message: its images go with it.
        self.attached.clear();
        summary
    }

    /// The turns of [`Agent::run`] and of each goal round: the task's (made with `authority`
    /// over the goal), then one per wake.
    async fn run_and_wake(
        &mut self,
        task: String,
        authority: Authority,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.turn_origin = match authority {
            Authority::Round(_) => TaskOrigin::GoalRound,
            _ if self.config.delegated => TaskOrigin::Agent,
            _ => TaskOrigin::User,
        };
        self.set_goal_authority(authority);
        let mut summary = self.run_turn(task, stop).await?;
        // What background work wakes is no one's request.
        self.set_goal_authority(Authority::Neither);
        let deadline = tokio::time::Instant::now() + self.config.job_wait;
        let mut wakes = 0;
        // A run at one of its caps ends with the answer it has, without waiting for
        // background work to wake it.
        while summary.reason.is_completed()
            && wakes < AgentConfig::MAX_WAKES
            && self.run_cap().is_none()
        {
            let mut notices = self.take_notices(summary.turn)?;
            if notices.0.is_empty() {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let waited = tokio::select! {
                    () = stop.token().cancelled() => false,
                    waited = self.wait_for_background(left) => waited,
                };
                if !waited || left.is_zero() {
                    break;
                }
                notices = self.take_notices(summary.turn)?;
                if notices.0.is_empty() {
                    continue;
                }
            }
            wakes += 1;
            self.turn_origin = TaskOrigin::Notices;
            self.carried.add(&notices.1);
            let next = self.run_turn(notices.0.join("\n"), stop).await?;
            summary.went_on_with(next);
        }
        Ok(summary)
    }

    /// The goal's rounds, after the run's first turn: while the goal is active and armed and
    /// the last turn completed, one more turn with the round's prompt. The summary covers them
    /// all. A round the user stopped pauses the goal; any other turn that did not complete
    /// disarms it (the human decides what comes next).
    async fn goal_rounds(
        &mut self,
        mut summary: TurnSummary,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        let Some(goals) = self.config.goals.clone() else {
            return Ok(summary);
        };
        let mut in_round = false;
        loop {
            if !summary.reason.is_completed() {
                // The user stopped a round (a run cap such as --timeout only ends the run).
                if in_round && stop.is_requested() && stop.expired().is_none() {
                    if let Some(pause) = goals.pause_stopped_round(summary.turn) {
                        self.commit(Record::GoalChange(pause))?;
                    }
                } else {
                    goals.disarm();
                }
                break;
            }
            if stop.is_requested() || self.run_cap().is_some() {
                break;
            }
            match goals.next_round(self.session.last_turn() + 1) {
                NextRound::None => break,
                NextRound::Exhausted(change) => {
                    self.commit(Record::GoalChange(change))?;
                    break;
                }
                NextRound::Start { change, prompt } => {
                    let round = change.goal.rounds_started;
                    self.commit(Record::GoalChange(change))?;
                    in_round = true;
                    let next = self
                        .run_and_wake(prompt, Authority::Round(round), stop)
                        .await?;
                    summary.went_on_with(next);
                }
            }
        }
        Ok(summary)
    }

    fn set_goal_authority(&self, authority: Authority) {
        if let Some(goals) = &self.config.goals {
            goals.set_authority(authority);
        }
    }

    /// Runs a saved workflow the user asked for by name (`dsh workflow NAME`), without the
    /// model: a turn whose message says what was asked, the `workflow` tool run on the file's
    /// script as one step (what its agents billed is the step's), and its result, or why it
    /// failed, as the turn's answer. The result also goes into the history as a message, so a
    /// later turn of the session knows what the workflow found.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn run_workflow<'a>(
        &'a mut self,
        saved: &'a crate::SavedWorkflow,
        args: Option<serde_json::Value>,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<TurnSummary, CoreError>> {
        Box::pin(self.workflow_turn(saved, args, stop))
    }

    async fn workflow_turn(
        &mut self,
        saved: &crate::SavedWorkflow,
        args: Option<serde_json::Value>,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.run_requests = 0;
        self.run_usage = Usage::default();
        self.structured = None;
        let turn = self.start_turn().await?;
        // The workflow's agents change files from the start: no request to hide it behind.
        self.checkpoint_turn_start().await?;
        let asked = match &args {
            Some(args) => format!("/workflow {} {args}", saved.name),
            None => format!("/workflow {}", saved.name),
        };
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(asked),
            instructions: None,
        })?;
        self.commit(Record::StepStart { turn, step: 1 })?;
        let mut arguments = serde_json::json!({
            "script": saved.script,
            "meta": {"name": saved.name, "description": saved.description},
        });
        if let Some(args) = args {
            arguments["args"] = args;
        }
        let ctx = ToolContext {
            call_id: format!("workflow-{turn}"),
            cwd: self.session.cwd().to_path_buf(),
            cancel: stop.token().clone(),
            session: self.tool_session.clone(),
        };
        let mut outcome = self
            .tools
            .prepare("workflow", &arguments.to_string())
            .run(&ctx)
            .await;
        if let Some(ToolEffect::Subagents(runs)) = outcome.effect.take() {
            for mut run in runs {
                run.turn = turn;
                self.commit(Record::SubagentRun(Box::new(run)))?;
            }
        }
        let usage = outcome.usage;
        self.run_usage.add(&usage);
        self.commit(Record::StepEnd {
            turn,
            step: 1,
            usage,
        })?;
        let text = self.redacted(outcome.text());
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(format!(
                "The saved workflow {} ran ({}):\n{text}",
                saved.name,
                saved.path.display()
            )),
            instructions: None,
        })?;
        let reason = if stop.is_requested() {
            stop.turn_end()
        } else if outcome.is_error {
            TurnEndReason::Error {
                error: Failure::new(FailureCode::Workflow, text.clone()),
            }
        } else {
            TurnEndReason::Completed
        };
        self.end_turn(TurnSummary {
            turn,
            reason,
            text,
            usage,
            steps: 1,
        })
        .await
    }

    /// The SessionStart hooks (the first run only) and the UserPromptSubmit hooks: what they
    /// print is added to the message; `Err` says why a hook withheld it.
    pub(super) async fn prompt_hooks(
        &mut self,
        mut task: String,
        stop: &Stop,
    ) -> Result<String, String> {
        let Some(hooks) = self.config.hooks.clone() else {
            return Ok(task);
        };
        if !self.hooks_started {
            self.hooks_started = true;
            let source = if self.session.last_turn() > 0 {
                "resume"
            } else {
                "startup"
            };
            // Its matcher chooses among sources, as Claude Code's does.
            let verdict = hooks
                .fire(
                    HookEvent::SessionStart,
                    Some(&[source]),
                    serde_json::json!({"source": source}),
                    stop.token(),
                )
                .await;
            self.session_context.extend(verdict.context);
        }
        let verdict = hooks
            .fire(
                HookEvent::UserPromptSubmit,
                None,
                serde_json::json!({"prompt": task}),
                stop.token(),
            )
            .await;
        if let Some(why) = verdict.blocked {
            return Err(why);
        }
        let context = std::mem::take(&mut self.session_context);
        for block in context.into_iter().chain(verdict.context) {
            task.push_str("\n\n");
            task.push_str(&block);
        }
        Ok(task)
    }

    /// A turn whose message a hook withheld: it starts and ends, and nothing is sent.
    pub(super) async fn withheld(&mut self, why: String) -> Result<TurnSummary, CoreError> {
        let turn = self.start_turn().await?;
        let reason = TurnEndReason::Error {
            error: Failure::new(
                FailureCode::HookBlocked,
                format!("a UserPromptSubmit hook withheld the message: {why}"),
            ),
        };
        self.end_turn(TurnSummary {
            turn,
            reason,
            text: String::new(),
            usage: Usage::default(),
            steps: 0,
        })
        .await
    }

    /// The run's cap it has reached, if any: checked before each request, so a run stops
    /// with its last answer committed and never sends one the cap does not allow.
    pub(super) fn run_cap(&self) -> Option<TurnEndReason> {
        self.run_cap_with(0, &Usage::default())
    }

    /// [`Agent::run_cap`], counting `requests` and `usage` not yet in the run's totals (what
    /// the step under way has spent so far).
    pub(super) fn run_cap_with(&self, requests: u32, usage: &Usage) -> Option<TurnEndReason> {
        if let Some(max) = self.config.max_requests
            && self.run_requests + requests >= max
        {
            return Some(TurnEndReason::MaxTurns {
                message: format!(
                    "the run made the {max} model requests --max-turns allows without a final \
                     answer"
                ),
            });
        }
        if let Some(limit) = &self.config.budget {
            let mut total = self.run_usage;
            total.add(usage);
            let spent = total.cost_usd.unwrap_or(0.0);
            if spent >= *limit {
                return Some(TurnEndReason::MaxBudget {
                    message: budget_reached(spent, *limit),
                });
            }
        }
        None
    }

    /// Compacts the history now, between turns (the terminal UI's `/compact`): long tool
    /// results are cut, and all but the last exchange is summarised in one request, when it
    /// is long enough to be worth one (a short history sends nothing). Returns what was done
    /// and what the summary request billed (also in the log's `compaction/summary` record).
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn compact<'a>(
        &'a mut self,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<(ManualCompaction, Usage), CoreError>> {
        Box::pin(self.compact_between_turns(None, stop))
    }

    /// [`Agent::compact`] with a focus for the summary (`/compact FOCUS`): the model is asked
    /// to keep what bears on it in full, and the PreCompact hooks get it as their
    /// `custom_instructions`.
    pub fn compact_on<'a>(
        &'a mut self,
        focus: &'a str,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<(ManualCompaction, Usage), CoreError>> {
        Box::pin(self.compact_between_turns(Some(focus), stop))
    }

    async fn compact_between_turns(
        &mut self,
        focus: Option<&str>,
        stop: &Stop,
    ) -> Result<(ManualCompaction, Usage), CoreError> {
        let turn = self.session.last_turn();
        let (compactor, history) = self.compaction();
        compactor.compact_now(history, turn, focus, stop).await
    }

    /// Waits until a background job or subagent ends, or `limit` passes; false when none runs.
    async fn wait_for_background(&self, limit: Duration) -> bool {
        let jobs = self
            .tool_session
            .shell
            .as_ref()
            .filter(|s| s.jobs.running() > 0);
        let agents = (self.config.background.as_ref())
            .filter(|agents| agents.any_running() || agents.has_news());
        if jobs.is_none() && agents.is_none() {
            return false;
        }
        // Only a source with work is listened to: one with none would answer at once and end
        // the wait for the other. Work that ended since the look above answers at once too,
        // and its notice is then waiting.
        let jobs_end = async {
            match jobs {
                Some(shell) => _ = shell.jobs.wait_any(limit).await,
                None => std::future::pending().await,
            }
        };
        let agents_end = async {
            match agents {
                Some(agents) => _ = agents.wait_any(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = jobs_end => {}
            () = agents_end => {}
        }
        true
    }

    /// The notices of finished background work not told yet (jobs, and subagents' ended turns,
    /// whose links are recorded now), and what those subagents billed.
    pub(super) fn take_notices(&mut self, turn: u32) -> Result<(Vec<String>, Usage), CoreError> {
        let mut notices = match &self.tool_session.shell {
            Some(shell) => shell.jobs.take_notices(),
            None => Vec::new(),
        };
        let mut usage = Usage::default();
        if let Some(background) = &self.config.background {
            let settled = background.take();
            usage = crate::subagents::background::usage_of(&settled);
            for settled in settled {
                let mut record = settled.record;
                record.turn = turn;
                self.commit(Record::SubagentRun(Box::new(record)))?;
                notices.push(settled.text);
            }
        }
        Ok((notices, usage))
    }
}

/// Why `--max-budget-usd` stopped the run. The cost is known once a request has answered, so
/// the last one may have taken it past the limit: the message says over, not "of".
fn budget_reached(spent: f64, limit: f64) -> String {
    let how = if spent > limit {
        "which is more than"
    } else {
        "all of"
    };
    format!(
        "the run spent ${spent:.4}, {how} the ${limit:.2} --max-budget-usd allows, without a \
         final answer (the cost is known once a request has answered, so the last one can pass \
         the limit; no request was sent after it)"
    )
}
