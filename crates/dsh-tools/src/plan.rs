//! `exit_plan_mode`: in plan mode, the model submits its plan. With no one to approve it (a
//! headless run), the plan ends the turn as its answer.

use dsh_protocol::TurnEndReason;

use crate::schema::{Param, ParamType, Parameters};
use crate::{Arguments, Tool, ToolContext, ToolEffect, ToolError, ToolFuture, ToolOutput};

/// The `exit_plan_mode` tool, offered in plan mode.
pub struct ExitPlanMode {
    parameters: Parameters,
}

impl Default for ExitPlanMode {
    fn default() -> Self {
        ExitPlanMode {
            parameters: Parameters::new(vec![Param::required(
                "plan",
                ParamType::String,
                "The whole plan as markdown, its first line a # heading that names it.",
            )]),
        }
    }
}

impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        "exit_plan_mode"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::SwitchMode, "Present the plan")
            .hook_names(&["ExitPlanMode"])
            .summary(plan_summary)
            .document("plan")
            .read_only()
    }

    fn description(&self) -> &str {
        "Submit your finished plan for review; this ends plan mode's exploring. Send the complete \
         plan as markdown starting with a # heading, as the only call of your answer."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Plan mode: explore with the read-only tools (read, glob, grep, bash under a \
             read-only sandbox) and change nothing; tools that write files are refused. When the \
             plan is ready, call exit_plan_mode with the whole plan as markdown starting with a \
             # heading: goal, the changes by part of the code, tests, and the assumptions made. \
             Do not write the plan as a plain answer.",
        )
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if !ctx.session.plan_mode {
                return Err(ToolError::plain(
                    "exit_plan_mode is only available in plan mode",
                ));
            }
            let plan = args.str("plan").unwrap_or_default().trim();
            let heading = plan
                .strip_prefix('#')
                .is_some_and(|rest| rest.starts_with([' ', '\t']) && !rest.trim().is_empty());
            if !heading {
                return Err(ToolError::plain(
                    "exit_plan_mode requires a non-empty markdown plan starting with a # heading",
                ));
            }
            // No one can approve it here: the plan is the run's answer, and carrying it out is a
            // new run's task.
            Ok(ToolOutput::text(
                "Plan submitted. No one can review it in this run, so it ends the turn as the \
                 answer; the plan is carried out only when a later task asks for it.",
            )
            .with_effect(ToolEffect::EndTurn {
                reason: TurnEndReason::PlanSubmitted,
                text: plan.to_owned(),
            }))
        })
    }
}

/// The plan is shown for approval on its own; the call needs no words of its own.
fn plan_summary(_args: &serde_json::Value) -> Option<String> {
    Some(String::new())
}
