//! `get_goal`, `create_goal` and `update_goal`: the model's hands on the session's goal.

use std::sync::Arc;

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolEffect, ToolFacts, ToolFuture,
    ToolKind, ToolOutput,
};

use super::{GoalBoard, Update};

/// The three goal tools over one board.
pub(crate) fn goal_tools(board: &Arc<GoalBoard>) -> Vec<Box<dyn Tool>> {
    let guidance = guidance(board.rules().blocked_after_rounds);
    vec![
        Box::new(GetGoal {
            board: board.clone(),
            parameters: Parameters::new(Vec::new()),
        }),
        Box::new(CreateGoal {
            board: board.clone(),
            guidance,
            parameters: Parameters::new(vec![
                Param::required(
                    "objective",
                    ParamType::String,
                    "What must be true when the goal is done, checkable from the workspace.",
                ),
                Param::optional(
                    "max_goal_rounds",
                    ParamType::Number,
                    "The most automatic rounds to spend on it (a whole number of at least 1); \
                     leave it out for the configured default.",
                ),
            ]),
        }),
        Box::new(UpdateGoal {
            board: board.clone(),
            parameters: Parameters::new(vec![
                Param::required(
                    "goal_id",
                    ParamType::String,
                    "The goal's id, as get_goal gives it.",
                ),
                Param::required(
                    "revision",
                    ParamType::Number,
                    "The goal's revision, as get_goal gives it: a change to an older revision \
                     is refused.",
                ),
                Param::required("action", ParamType::String, "What to do with the goal.")
                    .one_of(&["edit", "pause", "resume", "complete", "blocked"]),
                Param::optional(
                    "objective",
                    ParamType::String,
                    "With edit: the new objective.",
                ),
                Param::optional(
                    "max_goal_rounds",
                    ParamType::Number,
                    "With edit: the new round limit.",
                ),
                Param::optional(
                    "blocked_reason",
                    ParamType::String,
                    "With blocked: what stops the work, concretely.",
                ),
            ]),
        }),
    ]
}

/// When to use goals, told in the system prompt once (with `create_goal`).
fn guidance(blocked_after: u64) -> String {
    format!(
        "Goals: when the user asks for an outcome that will take many turns of work (make every \
         test pass, finish a migration), in whatever words or language, set it with \
         create_goal; not for work one turn finishes. While the goal is active, dsh starts new \
         rounds by itself after each turn until you mark it complete or blocked. Before \
         update_goal, call get_goal and copy its id and revision. Mark the goal complete only \
         when the evidence in the workspace shows the whole objective is met. Report it blocked \
         only when the same obstacle has stopped you for at least {blocked_after} rounds in a \
         row, with the reason. A resumed session's goal does not continue by itself: resume it \
         with update_goal when the user asks to go on."
    )
}

struct GetGoal {
    board: Arc<GoalBoard>,
    parameters: Parameters,
}

impl Tool for GetGoal {
    fn name(&self) -> &str {
        "get_goal"
    }

    fn description(&self) -> &str {
        "Read the session's goal: its id, revision, objective, phase, rounds started and round \
         limit, and whether automatic rounds are armed. Answers {\"goal\":null} when there is \
         none."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, "Read the goal").read_only()
    }

    fn call<'a>(&'a self, _args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move { Ok(ToolOutput::text(self.board.read())) })
    }
}

struct CreateGoal {
    board: Arc<GoalBoard>,
    guidance: String,
    parameters: Parameters,
}

impl Tool for CreateGoal {
    fn name(&self) -> &str {
        "create_goal"
    }

    fn description(&self) -> &str {
        "Set a long-running goal for this session, for an outcome the user asked for that needs \
         many turns. While it is active, dsh keeps starting new rounds of work toward it after \
         each turn, up to its round limit. Only one goal at a time: a new one needs the last to \
         be complete."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(&self.guidance)
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, "Set the goal")
            .subject("objective")
            .needs_no_review()
    }

    // A goal changes no file: planning one is part of a plan.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let objective = args.str("objective").unwrap_or_default();
            let (text, change) = self.board.create(objective, args.get("max_goal_rounds"))?;
            Ok(ToolOutput::text(text).with_effect(ToolEffect::Goal(change)))
        })
    }
}

struct UpdateGoal {
    board: Arc<GoalBoard>,
    parameters: Parameters,
}

impl Tool for UpdateGoal {
    fn name(&self) -> &str {
        "update_goal"
    }

    fn description(&self) -> &str {
        "Change the session's goal: edit its objective or round limit, pause or resume its \
         automatic rounds, mark it complete, or report it blocked with a reason. Give the id and \
         revision get_goal returned."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Think, "Update the goal")
            .subject("action")
            .needs_no_review()
    }

    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let update = Update {
                goal_id: args.str("goal_id").unwrap_or_default(),
                revision: args.get("revision"),
                action: args.str("action").unwrap_or_default(),
                objective: args.str("objective"),
                max_goal_rounds: args.get("max_goal_rounds"),
                blocked_reason: args.str("blocked_reason"),
            };
            let (text, change) = self.board.update(&update)?;
            Ok(ToolOutput::text(text).with_effect(ToolEffect::Goal(change)))
        })
    }
}
