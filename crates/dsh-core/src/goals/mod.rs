//! The session's goal: one long-running objective that the runtime keeps working toward by
//! itself. A goal the human's turn set (or resumed) is *armed*: when a turn ends with it still
//! active, the agent starts another turn, a *round*, with a prompt that restates the
//! objective, until the model marks it complete or blocked, the human pauses it, or its round
//! limit is reached (then it is blocked with `round-limit`).
//!
//! Who may change it is decided here, from the turn the call is made in ([`Authority`]): the
//! human's turn may do anything; an automatic round may only complete it or report it
//! blocked, and blocked only after `goals.blocked_after_rounds` rounds; a subagent may
//! only read it. The errors, their names and codes are the reference's, so a model that knows
//! its goal tools reads ours alike.
//!
//! Every change is a `goal/change` record (the whole goal after it), so the goal survives
//! compaction (which never drops records) and resume. Being armed is not recorded: a resumed
//! session's goal waits until the human resumes it.

pub(crate) mod install;
mod tools;

use std::sync::{Mutex, MutexGuard, PoisonError};

use dsh_config::GoalRules;
use dsh_protocol::{BlockedReason, Goal, GoalChangeRecord, GoalOperation, GoalPhase};
use dsh_tools::ToolError;
use serde_json::{Value, json};

/// The goal tools' names, as the top agent offers them.
pub(crate) const TOOL_NAMES: [&str; 3] = ["create_goal", "get_goal", "update_goal"];

/// The largest whole number a JSON number holds exactly (the reference's "safe integer").
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Who is calling, as the turn the call is made in says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authority {
    /// A turn the human's message opened, on the top-level agent.
    Human,
    /// The automatic round with this number.
    Round(u64),
    /// Anything else: a turn woken by background work, or a subagent.
    Neither,
}

/// The goal of one agent's session, shared by its goal tools and the agent that drives its
/// rounds.
#[derive(Debug)]
pub(crate) struct GoalBoard {
    rules: GoalRules,
    state: Mutex<BoardState>,
}

#[derive(Debug)]
struct BoardState {
    goal: Option<Goal>,
    /// Whether the runtime may start rounds toward it (create and resume arm it).
    armed: bool,
    authority: Authority,
    /// What the model is told after it completed or blocked the goal in a round, before its
    /// closing answer.
    wrap_up: Option<String>,
}

/// What the agent does when a turn has ended.
#[derive(Debug)]
pub(crate) enum NextRound {
    /// Nothing: no goal, or one that is not active and armed.
    None,
    /// Start round `round`: record the change, then run a turn with `prompt`.
    Start {
        change: GoalChangeRecord,
        prompt: String,
    },
    /// The goal used up its rounds and is now blocked: record the change and stop.
    Exhausted(GoalChangeRecord),
}

/// An `update_goal` call's arguments, with the reference's placeholders (`""`, `0`) read as
/// absent.
#[derive(Debug, Default)]
pub(crate) struct Update<'a> {
    pub goal_id: &'a str,
    pub revision: Option<&'a Value>,
    pub action: &'a str,
    pub objective: Option<&'a str>,
    pub max_goal_rounds: Option<&'a Value>,
    pub blocked_reason: Option<&'a str>,
}

impl GoalBoard {
    /// The board of a session whose goal is `goal` (a resumed one's), not armed.
    pub(crate) fn new(goal: Option<Goal>, rules: GoalRules) -> Self {
        GoalBoard {
            rules,
            state: Mutex::new(BoardState {
                goal,
                armed: false,
                authority: Authority::Neither,
                wrap_up: None,
            }),
        }
    }

    /// The board as a conversation rewind left the session: its goal then, not armed (as a
    /// resumed goal waits).
    pub(crate) fn rewound_to(&self, goal: Option<Goal>) {
        let mut state = self.state();
        state.goal = goal;
        state.armed = false;
        state.wrap_up = None;
    }

    pub(crate) fn rules(&self) -> GoalRules {
        self.rules
    }

    fn state(&self) -> MutexGuard<'_, BoardState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Says who the calls of the turn about to run come from.
    pub(crate) fn set_authority(&self, authority: Authority) {
        self.state().authority = authority;
    }

    /// `get_goal`'s answer.
    pub(crate) fn read(&self) -> String {
        let state = self.state();
        answer(state.goal.as_ref(), state.armed)
    }

    /// `create_goal`: a new active, armed goal, where there is none or the last is complete.
    pub(crate) fn create(
        &self,
        objective: &str,
        max_goal_rounds: Option<&Value>,
    ) -> Result<(String, GoalChangeRecord), ToolError> {
        let mut state = self.state();
        if state.authority != Authority::Human {
            return Err(tool_error(
                "GOAL_TOOL_AUTHORITY_REQUIRED",
                "this goal operation requires a direct human turn on a top-level agent",
            ));
        }
        let objective = checked_objective(objective)?;
        let max = match max_goal_rounds {
            None => self.rules.default_max_rounds,
            Some(value) => checked_rounds(value)?,
        };
        if let Some(goal) = &state.goal
            && goal.phase != GoalPhase::Complete
        {
            return Err(goal_error(
                "GOAL_ALREADY_EXISTS",
                format!(
                    "goal \"{}\" already exists with phase \"{}\"",
                    goal.id,
                    goal.phase.as_str()
                ),
            ));
        }
        let goal = Goal {
            id: format!("goal-{}", uuid::Uuid::new_v4()),
            revision: 1,
            objective,
            phase: GoalPhase::Active,
            rounds_started: 0,
            max_goal_rounds: max,
            blocked_reason: None,
        };
        state.armed = true;
        Ok(state.change(GoalOperation::Create, goal))
    }

    /// `update_goal`: the checks in the reference's order, then the change.
    pub(crate) fn update(
        &self,
        update: &Update<'_>,
    ) -> Result<(String, GoalChangeRecord), ToolError> {
        let mut state = self.state();
        let revision = update
            .revision
            .and_then(safe_integer)
            .filter(|&revision| revision >= 1);
        let (Some(revision), false) = (
            revision,
            update.goal_id.is_empty() || update.goal_id.trim() != update.goal_id,
        ) else {
            return Err(invalid_update(
                "goal_id must be non-empty and revision must be a positive safe integer",
            ));
        };
        let objective = update.objective.filter(|o| !o.is_empty());
        let max = update.max_goal_rounds.filter(|v| v.as_f64() != Some(0.0));
        let reason = update.blocked_reason;
        let human = state.authority == Authority::Human;
        let operation = match update.action {
            "edit" => {
                if !human {
                    return Err(human_required());
                }
                if reason.is_some_and(|r| !r.is_empty()) {
                    return Err(invalid_update(
                        "blocked_reason is valid only with action blocked",
                    ));
                }
                let goal = state.matching(update.goal_id, revision)?;
                if objective.is_none() && max.is_none() {
                    return Err(goal_error(
                        "GOAL_INVALID_EDIT",
                        "goal edit requires objective and/or maxGoalRounds".into(),
                    ));
                }
                let mut goal = goal.clone();
                if let Some(objective) = objective {
                    goal.objective = checked_objective(objective)?;
                }
                if let Some(max) = max {
                    goal.max_goal_rounds = checked_rounds(max)?;
                }
                return Ok(state.change(GoalOperation::Edit, goal));
            }
            "pause" | "resume" => {
                if !human {
                    return Err(human_required());
                }
                if objective.is_some() || max.is_some() || reason.is_some_and(|r| !r.is_empty()) {
                    return Err(invalid_update(
                        "objective and max_goal_rounds are valid only with action edit; \
                         blocked_reason is valid only with action blocked",
                    ));
                }
                if update.action == "pause" {
                    GoalOperation::Pause
                } else {
                    GoalOperation::Resume
                }
            }
            "complete" | "blocked" => {
                let in_round = state.goal.as_ref().is_some_and(|goal| {
                    state.authority == Authority::Round(goal.rounds_started)
                        && goal.id == update.goal_id
                        && goal.revision == revision
                });
                if !human && !in_round {
                    return Err(tool_error(
                        "GOAL_TOOL_AUTHORITY_REQUIRED",
                        "complete and blocked require a direct human turn or the current goal \
                         round",
                    ));
                }
                if objective.is_some() || max.is_some() {
                    return Err(invalid_update(
                        "objective and max_goal_rounds are valid only with action edit",
                    ));
                }
                if update.action == "complete" {
                    if reason.is_some_and(|r| !r.is_empty()) {
                        return Err(invalid_update(
                            "blocked_reason is valid only with action blocked",
                        ));
                    }
                    GoalOperation::Complete
                } else {
                    if reason.is_none_or(|r| r.trim().is_empty()) {
                        return Err(invalid_update(
                            "blocked_reason is required with action blocked",
                        ));
                    }
                    let rounds = state.goal.as_ref().map_or(0, |goal| goal.rounds_started);
                    if !human && rounds < self.rules.blocked_after_rounds {
                        return Err(tool_error(
                            "GOAL_TOOL_BLOCK_THRESHOLD",
                            format!(
                                "blocked requires at least {} consecutive goal rounds; current \
                                 round is {rounds}",
                                self.rules.blocked_after_rounds
                            ),
                        ));
                    }
                    GoalOperation::Block
                }
            }
            // The schema's enum refuses anything else before the call gets here.
            other => {
                return Err(invalid_update(&format!("unknown action \"{other}\"")));
            }
        };
        let mut goal = state.matching(update.goal_id, revision)?.clone();
        transition(&mut goal, operation, state.armed, reason)?;
        state.armed = matches!(operation, GoalOperation::Resume);
        let (answer, change) = state.change(operation, goal);
        if !human {
            state.wrap_up = Some(wrap_up(&change.goal));
        }
        Ok((answer, change))
    }

    /// What the agent does now that a turn ended: start the next round of an armed, active
    /// goal, or block it when it has used up its rounds.
    pub(crate) fn next_round(&self, turn: u32) -> NextRound {
        let mut state = self.state();
        let Some(goal) = state.goal.clone() else {
            return NextRound::None;
        };
        if !state.armed || goal.phase != GoalPhase::Active {
            return NextRound::None;
        }
        if goal.rounds_started >= goal.max_goal_rounds {
            let mut blocked = goal;
            blocked.revision += 1;
            blocked.phase = GoalPhase::Blocked;
            blocked.blocked_reason = Some(BlockedReason {
                code: "round-limit".into(),
                message: format!(
                    "Goal reached its configured limit of {} rounds.",
                    blocked.max_goal_rounds
                ),
            });
            state.armed = false;
            let (_, mut change) = state.change(GoalOperation::Block, blocked);
            change.turn = turn;
            return NextRound::Exhausted(change);
        }
        let mut next = goal;
        next.rounds_started += 1;
        let prompt = round_prompt(&next);
        let (_, mut change) = state.change(GoalOperation::Round, next);
        change.turn = turn;
        NextRound::Start { change, prompt }
    }

    /// Stops the rounds without changing the goal (a round that failed: the human decides).
    pub(crate) fn disarm(&self) {
        self.state().armed = false;
    }

    /// A round the user stopped: the goal is paused, so that it stays paused when resumed.
    pub(crate) fn pause_stopped_round(&self, turn: u32) -> Option<GoalChangeRecord> {
        let mut state = self.state();
        let mut goal = state.goal.clone()?;
        state.armed = false;
        if goal.phase != GoalPhase::Active {
            return None;
        }
        goal.revision += 1;
        goal.phase = GoalPhase::Paused;
        let (_, mut change) = state.change(GoalOperation::Pause, goal);
        change.turn = turn;
        Some(change)
    }

    /// What to tell the model after it ended the goal in a round, once.
    pub(crate) fn take_wrap_up(&self) -> Option<String> {
        self.state().wrap_up.take()
    }
}

impl BoardState {
    /// The current goal, when `id` and `revision` name it.
    fn matching(&self, id: &str, revision: u64) -> Result<&Goal, ToolError> {
        let Some(goal) = &self.goal else {
            return Err(goal_error("GOAL_NOT_FOUND", "no current goal".into()));
        };
        if goal.id != id || goal.revision != revision {
            return Err(goal_error(
                "GOAL_STALE_REVISION",
                format!(
                    "stale goal ref \"{id}\" revision {revision}; current is \"{}\" revision {}",
                    goal.id, goal.revision
                ),
            ));
        }
        Ok(goal)
    }

    /// Makes `goal` the current one; the tools' answer and the record of the change.
    fn change(&mut self, operation: GoalOperation, goal: Goal) -> (String, GoalChangeRecord) {
        let text = answer(Some(&goal), self.armed);
        self.goal = Some(goal.clone());
        (
            text,
            GoalChangeRecord {
                turn: 0,
                operation,
                goal,
            },
        )
    }
}

/// Moves `goal` by `operation` (pause, resume, complete, block), or says why it cannot move.
fn transition(
    goal: &mut Goal,
    operation: GoalOperation,
    armed: bool,
    reason: Option<&str>,
) -> Result<(), ToolError> {
    let from = goal.phase;
    let refuse = |verb: &str, expected: &str| {
        Err(goal_error(
            "GOAL_INVALID_TRANSITION",
            format!(
                "cannot {verb} goal \"{}\" from phase \"{}\"; expected {expected}",
                goal.id,
                from.as_str()
            ),
        ))
    };
    let settled = "active or paused or blocked";
    match operation {
        GoalOperation::Pause if from != GoalPhase::Active => return refuse("pause", "active"),
        GoalOperation::Resume if from == GoalPhase::Complete => return refuse("resume", settled),
        GoalOperation::Resume if from == GoalPhase::Active && armed => {
            return Err(goal_error(
                "GOAL_INVALID_TRANSITION",
                format!("goal \"{}\" is already active and armed", goal.id),
            ));
        }
        GoalOperation::Resume if goal.rounds_started >= goal.max_goal_rounds => {
            return Err(goal_error(
                "GOAL_INVALID_TRANSITION",
                format!(
                    "goal \"{}\" exhausted {} goal rounds; increase maxGoalRounds before \
                     resuming",
                    goal.id, goal.rounds_started
                ),
            ));
        }
        GoalOperation::Complete if from == GoalPhase::Complete => {
            return refuse("complete", settled);
        }
        GoalOperation::Block if from != GoalPhase::Active => return refuse("block", "active"),
        _ => {}
    }
    goal.revision += 1;
    goal.blocked_reason = None;
    goal.phase = match operation {
        GoalOperation::Pause => GoalPhase::Paused,
        GoalOperation::Complete => GoalPhase::Complete,
        GoalOperation::Block => {
            goal.blocked_reason = Some(BlockedReason {
                code: "model-reported".into(),
                message: reason.unwrap_or_default().trim().to_owned(),
            });
            GoalPhase::Blocked
        }
        _ => GoalPhase::Active,
    };
    Ok(())
}

/// What every goal tool answers: the goal (or `null`) and whether it is armed, as compact JSON.
fn answer(goal: Option<&Goal>, armed: bool) -> String {
    let value = match goal {
        None => json!({ "goal": null }),
        Some(goal) => json!({
            "goal": goal,
            "activation": if armed { "armed" } else { "disarmed" },
        }),
    };
    value.to_string()
}

fn checked_objective(objective: &str) -> Result<String, ToolError> {
    let objective = objective.trim();
    if objective.is_empty() {
        return Err(goal_error(
            "GOAL_INVALID_OBJECTIVE",
            "goal objective must be a non-empty string".into(),
        ));
    }
    Ok(objective.to_owned())
}

fn checked_rounds(value: &Value) -> Result<u64, ToolError> {
    safe_integer(value).filter(|&n| n >= 1).ok_or_else(|| {
        goal_error(
            "GOAL_INVALID_MAX_ROUNDS",
            "maxGoalRounds must be a positive safe integer".into(),
        )
    })
}

/// A JSON number that is a whole number a double holds exactly (`2.0` counts as 2).
pub(crate) fn safe_integer(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return (n <= MAX_SAFE_INTEGER).then_some(n);
    }
    let n = value.as_f64()?;
    (n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE_INTEGER as f64).then_some(n as u64)
}

fn goal_error(code: &str, message: String) -> ToolError {
    ToolError::coded("GoalError", code, message)
}

fn tool_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("HarnessError", code, message)
}

fn invalid_update(message: &str) -> ToolError {
    tool_error("GOAL_TOOL_INVALID_UPDATE", message)
}

fn human_required() -> ToolError {
    tool_error(
        "GOAL_TOOL_AUTHORITY_REQUIRED",
        "this goal operation requires a direct human turn on a top-level agent",
    )
}

/// The message that opens a round: the `<goal_round>` frame, the objective as a JSON string
/// and the round's number, as the reference frames them; the advice is ours.
fn round_prompt(goal: &Goal) -> String {
    format!(
        "<goal_round>\nObjective: {}\nRound: {}/{}\n\nKeep working toward the objective, in \
         this same session. What is on disk and what tools report now is the truth: check it \
         rather than trusting what earlier turns said they did. Make real progress this round \
         and verify it. When you believe the whole objective is met, prove it (run the checks, \
         read the results), read the goal with get_goal, and mark it complete with \
         update_goal. If work remains, leave the goal active and the next round continues it. \
         Report it blocked only as the goal tools' guidance allows.\n</goal_round>",
        Value::from(goal.objective.as_str()),
        goal.rounds_started,
        goal.max_goal_rounds
    )
}

/// What the model is told after it completed or blocked its goal in a round: the rounds end,
/// and its next answer is the closing report to the user.
fn wrap_up(goal: &Goal) -> String {
    let objective = Value::from(goal.objective.as_str());
    let report = "Report only what this session's rounds and tool results show; where a detail \
                  is not in the session, say so rather than guess. Speak to the user directly, \
                  and do not call any more tools: the next step is theirs.";
    match &goal.blocked_reason {
        Some(reason) => format!(
            "<goal_blocked>\nObjective: {objective}\nBlocked: {}\nThe goal is blocked and the \
             automatic rounds stop here. Write your closing message to the user now: what is \
             done so far, what blocks the rest and what you tried, and exactly what you need \
             from them to go on. {report}\n</goal_blocked>",
            Value::from(reason.message.as_str())
        ),
        None => format!(
            "<goal_complete>\nObjective: {objective}\nThe goal is complete and the automatic \
             rounds stop here. Write your closing message to the user now: the outcome, what \
             was done and how it was verified, and where the results are (files, commits, \
             other artifacts), with anything they should review or do next. \
             {report}\n</goal_complete>"
        ),
    }
}

#[cfg(test)]
mod tests;
