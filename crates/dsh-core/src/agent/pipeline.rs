//! The call pipeline: what one call of the model's passes through, in order. Its PreToolUse
//! hooks (exit 2: not run, and the model reads why), the command rules (`rules.rs`: a deny or
//! an unanswered ask keeps it from running, an allow takes it past review), Auto review (a denial or a failed review:
//! not run, unless the user overrides it), the call itself, then its PostToolUse hooks (exit 2:
//! their reason follows the result). Whatever keeps a call from running or fails it (a hook, a
//! review, a stop, an unknown tool, arguments its schema refuses) is its result, an error the
//! model reads; none of it ends the turn.

use std::sync::Arc;

use dsh_protocol::{
    AutoReviewRecord, Block, Message, Record, Role, ToolCallRecord, ToolOutputPart,
    ToolResultRecord, Usage,
};
use dsh_tools::{ErrorInfo, PreparedCall, ToolContext, ToolOutcome, ToolRegistry};

use crate::auto_review::{AutoReviewer, Review, ReviewContext};
use crate::{HookEvent, HookRunner};

mod rules;
#[cfg(test)]
mod tests;

/// One tool call of the model's answer: its id, its tool's name and its argument text as the
/// model sent them, and the call prepared once from them (the tool looked up, the arguments
/// parsed and checked) for what the agent asks of it and for running it.
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
    pub(super) prepared: PreparedCall,
}

impl Call {
    pub(super) fn prepare(tools: &ToolRegistry, id: &str, name: &str, arguments: &str) -> Call {
        Call {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            prepared: tools.prepare(name, arguments),
        }
    }

    /// Its `tool/call` record, committed before it runs.
    pub(super) fn record(&self, turn: u32, step: u32) -> Record {
        Record::ToolCall(ToolCallRecord {
            turn,
            step,
            call_id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
        })
    }
}

/// What a call passes through besides itself: the run's hooks, and Auto review with what it
/// reads (given only to a group of calls that has one to review). Each call's future takes a
/// clone, so it borrows nothing and can be spawned (a subagent's run is).
#[derive(Clone, Default)]
pub(super) struct Gates {
    pub(super) hooks: Option<Arc<HookRunner>>,
    /// The command rules (`[rules]`), when there are any.
    pub(super) rules: Option<Arc<dsh_sandbox::rules::CommandRules>>,
    pub(super) review: Option<(Arc<AutoReviewer>, Arc<ReviewContext>)>,
}

/// What came of a call.
pub(super) struct Passed {
    pub(super) call_id: String,
    /// Its result, with what its review billed.
    pub(super) outcome: ToolOutcome,
    /// Its review's record, when it was reviewed (its turn is filled in by the agent).
    pub(super) review: Option<AutoReviewRecord>,
}

impl Gates {
    /// Takes `call` through the pipeline, in `ctx` made the call's own.
    pub(super) async fn pass(self, call: Call, mut ctx: ToolContext) -> Passed {
        let Call {
            id,
            name,
            arguments,
            prepared,
        } = call;
        ctx.call_id.clone_from(&id);
        let (outcome, review) = self.gated(prepared, &ctx, &name, &arguments).await;
        Passed {
            call_id: id,
            outcome,
            review,
        }
    }

    async fn gated(
        &self,
        call: PreparedCall,
        ctx: &ToolContext,
        name: &str,
        arguments: &str,
    ) -> (ToolOutcome, Option<AutoReviewRecord>) {
        let hooked = match &self.hooks {
            Some(hooks) => match pre_tool_use(hooks, &call, ctx, name, arguments).await {
                Ok(fields) => Some((hooks, fields)),
                Err(blocked) => return (blocked, None),
            },
            None => None,
        };
        let ruled = match &self.rules {
            Some(rules) => match rules::judge(rules, &call, ctx, name).await {
                Ok(ruled) => ruled,
                Err(refused) => return (refused, None),
            },
            None => rules::Ruled::Open,
        };
        let (record, spent) = match &self.review {
            // An unknown tool or arguments that do not fit fail without running: nothing to
            // review. What a rule (or the user it asked) settled is not reviewed either.
            Some((reviewer, context))
                if call.auto_reviewed() && matches!(ruled, rules::Ruled::Open) =>
            {
                match reviewed(reviewer, context, &call, ctx, name, arguments).await {
                    Ok(passed) => passed,
                    Err(refused) => return refused,
                }
            }
            _ => (None, Usage::default()),
        };
        let mut outcome = call.run(ctx).await;
        outcome.usage.add(&spent);
        if let Some((hooks, fields)) = hooked {
            post_tool_use(hooks, &mut outcome, fields, ctx).await;
        }
        (outcome, record)
    }
}

/// Auto review of a call, and the user's say when it refuses: `Ok` with the review's record
/// and what it billed when the call may run, `Err` with the outcome (and the record) of one
/// that may not.
async fn reviewed(
    reviewer: &AutoReviewer,
    context: &ReviewContext,
    call: &PreparedCall,
    ctx: &ToolContext,
    name: &str,
    arguments: &str,
) -> Result<(Option<AutoReviewRecord>, Usage), (ToolOutcome, Option<AutoReviewRecord>)> {
    let shown = call
        .canonical_arguments()
        .unwrap_or_else(|| arguments.to_owned());
    let Some(mut review) = reviewer.review(context, name, &shown, &ctx.cancel).await else {
        return Err((aborted(), None));
    };
    // The reviewer may quote the call, and the call may hold a secret.
    review.reason = dsh_tools::redacted(ctx.session.redactor.as_ref(), review.reason);
    let spent = review.usage;
    let Some(mut refusal) = review.refusal() else {
        return Ok((Some(review_record(review, ctx, name, false)), spent));
    };
    match user_overrides(&review, ctx, name).await {
        Ok(()) => Ok((Some(review_record(review, ctx, name, true)), spent)),
        Err(said) => {
            // The user's own reason, when they gave one, follows the reviewer's.
            if let Some(said) = said.filter(|s| !s.trim().is_empty()) {
                refusal.message = format!("{}; the user said: {}", refusal.message, said.trim());
            }
            let mut outcome = ToolOutcome::failure(refusal);
            outcome.usage.add(&spent);
            Err((outcome, Some(review_record(review, ctx, name, false))))
        }
    }
}

fn review_record(
    review: Review,
    ctx: &ToolContext,
    tool: &str,
    overridden: bool,
) -> AutoReviewRecord {
    AutoReviewRecord {
        turn: 0,
        call_id: ctx.call_id.clone(),
        tool: tool.to_owned(),
        decision: review.decision,
        reason: review.reason,
        model: review.model,
        overridden,
        usage: review.usage,
    }
}

/// Whether the user lets a call the review kept back run all the same: only under
/// `--approval-policy ask`, with someone to ask (the terminal UI, an editor). A headless run
/// has nobody, and the refusal stands. `Err` carries what the user said, if they refused with
/// a reason.
async fn user_overrides(
    review: &Review,
    ctx: &ToolContext,
    tool: &str,
) -> Result<(), Option<String>> {
    use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy};
    let session = &ctx.session;
    let Some(approver) = session.approver.as_ref() else {
        return Err(None);
    };
    if session.approval != ApprovalPolicy::Ask {
        return Err(None);
    }
    let what = match review.decision {
        dsh_protocol::ReviewDecision::Denied => "denied",
        _ => "could not review",
    };
    let request = dsh_sandbox::escalation::ApprovalRequest {
        tool: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason: format!("run this call, which auto review {what}: {}", review.reason),
        // One call's override: no "for the session", which would wave later calls past
        // their reviews.
        grant: None,
    };
    let outcome = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => ApprovalOutcome::Cancelled,
        outcome = approver.request(request) => outcome,
    };
    match outcome {
        outcome if outcome.is_allowed() => Ok(()),
        ApprovalOutcome::Rejected { reason } => Err(reason),
        _ => Err(None),
    }
}

fn aborted() -> ToolOutcome {
    ToolOutcome::failure(dsh_tools::ToolError::coded(
        "AbortError",
        "ABORTED",
        "tool call aborted",
    ))
}

/// The PreToolUse hooks of a call: the fields its PostToolUse hooks get too, or the outcome
/// of a call a hook blocked (or that was stopped meanwhile).
async fn pre_tool_use(
    hooks: &HookRunner,
    call: &PreparedCall,
    ctx: &ToolContext,
    name: &str,
    arguments: &str,
) -> Result<(serde_json::Value, Vec<String>), ToolOutcome> {
    let input: serde_json::Value = serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.into()));
    // A hook written for another agent reads the tool by that agent's name.
    let hook_names = call.hook_names();
    let tool_name = hook_names.first().copied().unwrap_or(name);
    let names: Vec<String> = std::iter::once(name)
        .chain(hook_names.iter().copied())
        .map(str::to_owned)
        .collect();
    let fields = serde_json::json!({
        "tool_name": tool_name,
        "dsh_tool_name": name,
        "tool_input": input,
        "tool_use_id": ctx.call_id,
    });
    let matched: Vec<&str> = names.iter().map(String::as_str).collect();
    let verdict = hooks
        .fire(
            HookEvent::PreToolUse,
            Some(&matched),
            fields.clone(),
            &ctx.cancel,
        )
        .await;
    if let Some(why) = verdict.blocked {
        return Err(ToolOutcome::failure(dsh_tools::ToolError::coded(
            "HookError",
            "HOOK_BLOCKED",
            format!("a PreToolUse hook blocked this call: {why}"),
        )));
    }
    if ctx.cancel.is_cancelled() {
        return Err(aborted());
    }
    Ok((fields, names))
}

/// The PostToolUse hooks of a call that ran: a block's reason follows its result.
async fn post_tool_use(
    hooks: &HookRunner,
    outcome: &mut ToolOutcome,
    (mut fields, names): (serde_json::Value, Vec<String>),
    ctx: &ToolContext,
) {
    fields["tool_response"] = serde_json::json!({
        "output": outcome.parts.iter().map(dsh_protocol::ToolOutputPart::text).collect::<String>(),
        "is_error": outcome.is_error,
    });
    let matched: Vec<&str> = names.iter().map(String::as_str).collect();
    let verdict = hooks
        .fire(HookEvent::PostToolUse, Some(&matched), fields, &ctx.cancel)
        .await;
    if let Some(why) = verdict.blocked {
        outcome.parts.push(ToolOutputPart::Text {
            text: format!("\n[PostToolUse hook] {why}"),
        });
    }
}

/// The `tool/result` record of call `id`.
pub(super) fn result_record(turn: u32, step: u32, id: &str, outcome: ToolOutcome) -> Record {
    Record::ToolResult(ToolResultRecord {
        turn,
        step,
        message: Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_call_id: id.to_owned(),
                content: outcome.parts,
                is_error: outcome.is_error,
            }],
        },
        error: outcome.error,
        command: outcome.command,
    })
}

/// The result of a call whose arguments were cut off at the output token limit: not run.
pub(super) fn cut_off_outcome() -> ToolOutcome {
    ToolOutcome {
        parts: vec![ToolOutputPart::Text {
            text: "Error: the arguments of this call were cut off at the model's output token \
                   limit, so it was not run; make the call again with shorter arguments"
                .to_owned(),
        }],
        is_error: true,
        error: Some(ErrorInfo::new("ToolArgsError", "INVALID_ARGS")),
        effect: None,
        usage: Usage::default(),
        command: None,
    }
}
