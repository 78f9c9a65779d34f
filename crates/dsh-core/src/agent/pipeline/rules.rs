//! The command rules' say on a call (`[rules]`), between its PreToolUse hooks and Auto review:
//! a deny keeps it from running, an ask puts it to the user (refused when nobody can be
//! asked), an allow lets it run without review, and only what no rule decides goes on to the
//! reviewer.

use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy, ApprovalRequest};
use dsh_sandbox::rules::{CommandRules, Decision};
use dsh_tools::{ErrorInfo, PreparedCall, ToolContext, ToolError, ToolOutcome};

/// What the rules leave of a call.
pub(super) enum Ruled {
    /// It runs, and Auto review does not look at it: a rule allowed it, or the user did.
    Settled,
    /// No rule decides: the usual way (Auto review, if on) does.
    Open,
}

/// The rules' verdict on `call`, asking the user where a rule says to: `Err` with the outcome
/// of a call that may not run.
pub(super) async fn judge(
    rules: &CommandRules,
    call: &PreparedCall,
    ctx: &ToolContext,
    name: &str,
) -> Result<Ruled, ToolOutcome> {
    let workspace = ctx.session.policy.workspace();
    match rules.decide(name, call.rule_target(), &ctx.cwd, workspace) {
        Decision::Undecided => Ok(Ruled::Open),
        Decision::Allow(_) => Ok(Ruled::Settled),
        Decision::Deny(rule) => Err(refused(
            "RuleDeniedError",
            "RULE_DENIED",
            format!(
                "this call did not run: the {rule} refuses it. Do not try another way to do \
                 the same thing; finish what the rules allow and say what needs this call",
            ),
            rule,
        )),
        Decision::Ask(why) => ask(ctx, name, why).await,
    }
}

/// Puts a call a rule asks about to the user: only under `--approval-policy ask` with someone
/// to ask (the terminal UI, an editor, the web app); a headless run has nobody, and the call
/// is refused.
async fn ask(ctx: &ToolContext, tool: &str, why: String) -> Result<Ruled, ToolOutcome> {
    let session = &ctx.session;
    let approver = session
        .approver
        .as_ref()
        .filter(|_| session.approval == ApprovalPolicy::Ask);
    let Some(approver) = approver else {
        return Err(refused(
            "RuleAskError",
            "RULE_ASK_UNAVAILABLE",
            format!(
                "this call did not run: it needs the user's approval first ({why}), and nobody \
                 can be asked in this run. Do not try another way to do the same thing; say \
                 what needs this call"
            ),
            why,
        ));
    };
    let request = ApprovalRequest {
        tool: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason: format!("run this call, which a command rule asks about: {why}"),
        // One call's answer: a grant for the session would pass later calls the rule names.
        grant: None,
    };
    let outcome = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => ApprovalOutcome::Cancelled,
        outcome = approver.request(request) => outcome,
    };
    match outcome {
        outcome if outcome.is_allowed() => Ok(Ruled::Settled),
        ApprovalOutcome::Rejected { reason } => {
            let said = reason
                .filter(|r| !r.trim().is_empty())
                .map(|r| format!("; the user said: {}", r.trim()))
                .unwrap_or_default();
            Err(refused(
                "RuleAskError",
                "RULE_ASK_REJECTED",
                format!("the user refused this call ({why}), so it did not run{said}"),
                why,
            ))
        }
        _ => Err(refused(
            "RuleAskError",
            "RULE_ASK_CANCELLED",
            format!("approval for this call ({why}) was cancelled, so it did not run"),
            why,
        )),
    }
}

fn refused(name: &str, code: &str, text: String, reason: String) -> ToolOutcome {
    let mut error = ToolError::coded(name, code, text);
    error.info = Some(ErrorInfo::new(name, code).with_reason(reason));
    ToolOutcome::failure(error)
}
