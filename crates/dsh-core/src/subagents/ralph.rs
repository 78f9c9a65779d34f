//! `ralph`: a foreground loop of fresh workers toward one objective that never changes. Each
//! round is a new child with no conversation behind it; the workspace is the memory, and the
//! only thing carried from one round to the next is the last worker's report (bounded JSON:
//! status, summary, evidence, next steps, blocker), which the next worker is told to check
//! against the workspace. The loop ends when a worker reports the objective complete or a
//! concrete blocker, or at the round limit.
//!
//! The frame of a round's prompt, the report's schema and checks, and the texts the caller
//! reads are the reference's; the advice in the prompt is ours. Unlike the reference, what the
//! rounds bill is counted in the caller's usage, and each round is a `subagent/run` in the
//! caller's log.

use std::sync::{Arc, LazyLock};

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture,
    ToolKind, ToolOutput,
};
use serde_json::{Map, Value, json};

use super::SubagentTool;
use super::ended::{ChildrenSpent, utf16_head};
use crate::OutputSchema;

/// Rounds a call may run: the default, and the most a call may ask for (the reference's
/// shipped limit).
pub(crate) const MAX_ROUNDS: u64 = 64;
/// The longest report carried to the next round, in UTF-16 units of its JSON (the
/// reference's measure).
const MAX_HANDOFF_CHARS: usize = 16_384;
/// The longest text the caller reads.
const MAX_RESULT_CHARS: usize = 16_384;
const TRUNCATED: &str = "\n… [truncated]";

/// The `ralph` tool, running its rounds as subagents of the caller.
pub(crate) struct RalphTool {
    /// How the caller's children are made and run.
    children: Arc<SubagentTool>,
    parameters: Parameters,
}

impl RalphTool {
    pub(crate) fn new(children: Arc<SubagentTool>) -> RalphTool {
        RalphTool {
            children,
            parameters: Parameters::new(vec![
                Param::required(
                    "objective",
                    ParamType::String,
                    "What must be true when the work is done; every round works toward the same \
                     objective.",
                ),
                Param::optional(
                    "maxRounds",
                    ParamType::Number,
                    "The most rounds to run (a whole number, at most 64; default 64).",
                ),
            ]),
        }
    }
}

/// The round report's schema, compiled when a loop first runs: most runs never start one, and
/// compiling it is a start-up cost every run would otherwise pay.
/// `None` only if that schema stopped compiling, which a test guards against.
fn compiled_report_schema() -> Option<Arc<OutputSchema>> {
    static COMPILED: LazyLock<Option<Arc<OutputSchema>>> = LazyLock::new(|| {
        OutputSchema::of(&report_schema(), "the Ralph round report").map(Arc::new)
    });
    COMPILED.clone()
}

impl Tool for RalphTool {
    fn name(&self) -> &str {
        "ralph"
    }

    fn description(&self) -> &str {
        "Run a loop of fresh workers toward one fixed objective, only when the user asks for \
         Ralph or for fresh-agent iteration. Each round is a new subagent with no conversation \
         behind it: the workspace is its memory, and only the last worker's short report is \
         passed on. The loop ends when a worker reports the objective complete or a concrete \
         blocker, or at the round limit. For long work in this same session, use the goal \
         tools instead."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`ralph` only when the user asks for it by name or for fresh-agent iteration: each \
             round is a fresh worker with no conversation, the workspace is what carries over, \
             and completion and blockers are the workers' own reports, not a check of yours. \
             For a long objective in this session use the goal tools; for delegating a bounded \
             task, subagent.",
        )
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, "Ralph loop toward")
            .subject("objective")
            .needs_no_review()
    }

    /// Its workers inherit plan mode, so what they may do is checked there.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn stops_itself(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(self.run(args, ctx))
    }
}

/// How the loop ended.
enum Ending {
    Complete,
    Blocked,
    Exhausted,
}

impl RalphTool {
    async fn run(&self, args: Arguments, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let objective = args.str("objective").unwrap_or_default().trim().to_owned();
        if objective.is_empty() {
            return Err(ToolError::plain(
                "Ralph objective must be a non-empty string",
            ));
        }
        let max_rounds = match args.get("maxRounds") {
            None => MAX_ROUNDS,
            Some(value) => match crate::goals::safe_integer(value).filter(|&n| n >= 1) {
                Some(n) if n > MAX_ROUNDS => {
                    return Err(ToolError::plain(format!(
                        "Ralph maxRounds {n} exceeds the deployment ceiling {MAX_ROUNDS}"
                    )));
                }
                Some(n) => n,
                None => {
                    return Err(ToolError::plain(
                        "Ralph maxRounds must be a positive safe integer",
                    ));
                }
            },
        };
        let Some(schema) = compiled_report_schema() else {
            return Err(ToolError::plain(
                "Ralph cannot run: its round report schema does not compile",
            ));
        };
        let mut spent = ChildrenSpent::default();
        let mut handoff: Option<Map<String, Value>> = None;
        let mut ending = Ending::Exhausted;
        let mut rounds = 0;
        for round in 1..=max_rounds {
            rounds = round;
            let prompt = round_prompt(&objective, round, max_rounds, handoff.as_ref());
            let ended = self
                .children
                .run_fresh_child(
                    format!("Ralph round {round}"),
                    prompt,
                    Some(schema.clone()),
                    ctx,
                )
                .await;
            let ended = match ended {
                Ok(ended) => ended,
                Err(error) => return Err(spent.onto_error(error)),
            };
            spent.add(&ended);
            if ctx.cancel.is_cancelled() {
                return Err(spent.onto_error(ToolError::plain("Ralph workflow was cancelled")));
            }
            let report = ended
                .structured
                .filter(|_| ended.summary.reason.is_completed())
                .and_then(|value| value.as_object().cloned());
            let Some(report) = report else {
                let mut text = format!(
                    "Ralph round {round} child failed before producing a structured report."
                );
                match &handoff {
                    None => text.push_str("\nNo previous handoff was available."),
                    Some(last) => {
                        text.push_str("\nLast successful handoff:\n");
                        text.push_str(&pretty(last));
                    }
                }
                return Err(spent.onto_error(ToolError::plain(bounded(&text))));
            };
            if let Err(problem) = check_report(&report) {
                return Err(spent.onto_error(ToolError::plain(format!(
                    "Ralph workflow failed: {problem}"
                ))));
            }
            let status = report["status"].as_str().unwrap_or_default().to_owned();
            handoff = Some(report);
            match status.as_str() {
                "complete" => {
                    ending = Ending::Complete;
                    break;
                }
                "blocked" => {
                    ending = Ending::Blocked;
                    break;
                }
                _ => {}
            }
        }
        let plural = |n: u64| {
            if n == 1 {
                "1 round".to_owned()
            } else {
                format!("{n} rounds")
            }
        };
        let header = match ending {
            Ending::Complete => {
                format!("Ralph worker reported completion after {}.", plural(rounds))
            }
            Ending::Blocked => format!("Ralph worker reported a blocker after {}.", plural(rounds)),
            Ending::Exhausted => format!(
                "Ralph reached its {} limit; the worker reported work remaining.",
                plural(max_rounds)
            ),
        };
        let last = handoff.unwrap_or_default();
        let text = bounded(&format!("{header}\nFinal report:\n{}", pretty(&last)));
        Ok(spent.onto_output(ToolOutput::text(text)))
    }
}

/// What a round's worker must answer with: the reference's report, closed.
fn report_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["continue", "complete", "blocked"]},
            "summary": {"type": "string"},
            "evidence": {"type": "array", "items": {"type": "string"}},
            "nextSteps": {"type": "array", "items": {"type": "string"}},
            "blocker": {"type": "string"},
        },
        "required": ["status", "summary", "evidence", "nextSteps", "blocker"],
        "additionalProperties": false,
    })
}

/// Round `round`'s prompt: the reference's frame (the objective, the round, the last report)
/// around our advice.
fn round_prompt(
    objective: &str,
    round: u64,
    max_rounds: u64,
    handoff: Option<&Map<String, Value>>,
) -> String {
    let handoff = match handoff {
        None => "(none — this is the first round)".to_owned(),
        Some(report) => Value::Object(report.clone()).to_string(),
    };
    [
        "You are one worker in a Ralph loop: a fresh agent with no earlier conversation and no \
         earlier worker's session. Do not call the ralph tool: this round is its worker."
            .to_owned(),
        format!("Immutable objective:\n{objective}"),
        format!("Ralph round: {round} of {max_rounds}."),
        "The workspace (its files and working tree) is the loop's memory and the truth: look at \
         it before you act, keep the work that is there, make concrete progress within the \
         objective, and check what you change. The previous report below is only a short \
         handoff: verify it against the workspace."
            .to_owned(),
        format!("Previous structured handoff:\n{handoff}"),
        "End with one report, as your final answer: only a JSON object with the keys status, \
         summary, evidence, nextSteps and blocker, every string trimmed. status \"continue\" \
         while useful work remains, with at least one nextSteps entry; \"complete\" only with \
         concrete evidence and no nextSteps; \"blocked\" only when nothing more can be done \
         without the user or a change outside the workspace, with the blocker said concretely. \
         blocker is \"\" unless blocked."
            .to_owned(),
    ]
    .join("\n\n")
}

/// The reference's checks of a report, in its order, with its texts.
fn check_report(report: &Map<String, Value>) -> Result<(), String> {
    let normal = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty() && s.trim() == s);
    if !report.get("summary").is_some_and(normal) {
        return Err("Ralph round report summary must be non-empty and normalized".into());
    }
    let list = |key: &str| -> Vec<Value> {
        report
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (evidence, next) = (list("evidence"), list("nextSteps"));
    if !evidence.iter().chain(&next).all(normal) {
        return Err(
            "Ralph round report evidence and nextSteps must contain only non-empty normalized \
             strings"
                .into(),
        );
    }
    let blocker = report
        .get("blocker")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if blocker.trim() != blocker {
        return Err("Ralph round report blocker must be a normalized string".into());
    }
    match report.get("status").and_then(Value::as_str) {
        Some("continue") if next.is_empty() || !blocker.is_empty() => {
            Err("a continuing Ralph report needs nextSteps and an empty blocker".into())
        }
        Some("complete") if evidence.is_empty() || !next.is_empty() || !blocker.is_empty() => {
            Err("a complete Ralph report needs evidence, no nextSteps, and an empty blocker".into())
        }
        Some("blocked") if blocker.is_empty() => {
            Err("a blocked Ralph report needs a concrete blocker".into())
        }
        Some("continue" | "complete" | "blocked") => {
            let size = Value::Object(report.clone())
                .to_string()
                .encode_utf16()
                .count();
            if size > MAX_HANDOFF_CHARS {
                return Err(format!(
                    "Ralph round report exceeds maxHandoffChars ({size} > {MAX_HANDOFF_CHARS})"
                ));
            }
            Ok(())
        }
        _ => Err("Ralph round report status is invalid".into()),
    }
}

/// A report as the caller reads it: two-space JSON, its keys in the reference's order.
fn pretty(report: &Map<String, Value>) -> String {
    let mut ordered = Map::new();
    for key in ["status", "summary", "evidence", "nextSteps", "blocker"] {
        if let Some(value) = report.get(key) {
            ordered.insert(key.to_owned(), value.clone());
        }
    }
    serde_json::to_string_pretty(&Value::Object(ordered)).unwrap_or_default()
}

/// `text` within [`MAX_RESULT_CHARS`] UTF-16 units, its cut marked.
fn bounded(text: &str) -> String {
    if text.encode_utf16().count() <= MAX_RESULT_CHARS {
        return text.to_owned();
    }
    let keep = MAX_RESULT_CHARS - TRUNCATED.encode_utf16().count();
    utf16_head(text, keep) + TRUNCATED
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: &str, next: &[&str], blocker: &str) -> Map<String, Value> {
        json!({
            "status": status,
            "summary": "Did a part.",
            "evidence": ["tests pass"],
            "nextSteps": next,
            "blocker": blocker,
        })
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    /// The schema is compiled on a loop's first round, where a failure would leave the tool
    /// unusable.
    #[test]
    fn the_report_schema_compiles_and_holds_reports() {
        let schema = compiled_report_schema().unwrap();
        let valid = report("complete", &[], "");
        let valid = Value::Object(valid).to_string();
        assert!(schema.check(&valid).is_ok(), "{valid}");
        assert!(schema.check(r#"{"status": "later"}"#).is_err());
    }

    #[test]
    fn reports_are_checked_with_the_reference_texts() {
        assert_eq!(check_report(&report("continue", &["more"], "")), Ok(()));
        assert_eq!(check_report(&report("complete", &[], "")), Ok(()));
        assert_eq!(
            check_report(&report("continue", &[], "")),
            Err("a continuing Ralph report needs nextSteps and an empty blocker".into())
        );
        assert_eq!(
            check_report(&report("complete", &["more"], "")),
            Err(
                "a complete Ralph report needs evidence, no nextSteps, and an empty blocker".into()
            )
        );
        assert_eq!(
            check_report(&report("blocked", &[], "")),
            Err("a blocked Ralph report needs a concrete blocker".into())
        );
        let mut untrimmed = report("continue", &["more"], "");
        untrimmed.insert("summary".into(), json!(" x "));
        assert_eq!(
            check_report(&untrimmed),
            Err("Ralph round report summary must be non-empty and normalized".into())
        );
    }

    #[test]
    fn the_prompt_carries_the_reference_frame_and_the_last_report() {
        let first = round_prompt("Ship it", 1, 3, None);
        assert!(first.contains("\n\nImmutable objective:\nShip it\n\nRalph round: 1 of 3.\n\n"));
        assert!(first.contains("Previous structured handoff:\n(none — this is the first round)"));
        let last = report("continue", &["more"], "");
        let second = round_prompt("Ship it", 2, 3, Some(&last));
        assert!(second.contains(&format!(
            "Previous structured handoff:\n{}",
            Value::Object(last.clone())
        )));
        assert!(pretty(&last).starts_with("{\n  \"status\": \"continue\",\n  \"summary\""));
    }

    #[test]
    fn a_long_result_is_cut_and_marked() {
        let text = bounded(&"x".repeat(MAX_RESULT_CHARS + 10));
        assert_eq!(text.encode_utf16().count(), MAX_RESULT_CHARS);
        assert!(text.ends_with(TRUNCATED));
    }
}
