//! The call pipeline on its own: what a call passes through and in which order, and what the
//! model reads when a gate keeps it back. The hooks are real commands (run unconfined), the
//! reviewer is a scripted model in the process, and the tool a probe; each notes in the
//! workspace's `order` file when it runs.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use dsh_llm::{BoxFuture, Completion, DeltaSink, LlmError, ModelRequest, Provider};
use dsh_protocol::{Block, FinishReason, Message, ReviewDecision, Role, ToolOutputPart, Usage};
use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy, ApprovalRequest, Approver};
use dsh_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
use dsh_tools::{
    Arguments, ModelCaps, Param, ParamType, Parameters, Shell, ShellEnv, SpillStore, Tool,
    ToolContext, ToolFacts, ToolFuture, ToolKind, ToolOutput, ToolRegistry, ToolSession,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Call, Gates, Passed};
use crate::auto_review::{AutoReviewer, ReviewContext};
use crate::config::{Environment, Flags, Settings};
use crate::{HookRunner, HookSet};

fn note(order: &Path, what: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(order)
        .unwrap();
    writeln!(file, "{what}").unwrap();
}

/// A tool that changes nothing but is not read-only, so Auto review looks at its calls.
struct Probe {
    order: PathBuf,
    parameters: Parameters,
}

impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn description(&self) -> &str {
        "Notes that it ran."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Edit, "Probe")
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            note(&self.order, "call");
            let text = args.str("text").unwrap_or_default();
            Ok(ToolOutput::text(format!("ran with {text}")))
        })
    }
}

/// The reviewer's model: answers every request with `answer`.
struct Reviewer {
    order: PathBuf,
    answer: String,
}

impl Provider for Reviewer {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        _request: ModelRequest<'a>,
        _on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            note(&self.order, "review");
            Ok(Completion {
                message: Message {
                    role: Role::Assistant,
                    content: vec![Block::Text {
                        text: self.answer.clone(),
                    }],
                },
                finish: FinishReason::Stop,
                usage: Usage::new(40, 9, 0, 0, 0),
                retried: Usage::default(),
            })
        })
    }
}

/// The person at the front end: answers every request with `answer`, and keeps the requests.
struct User {
    answer: ApprovalOutcome,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for User {
    fn request(
        &self,
        request: ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalOutcome> + Send + '_>> {
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { self.answer.clone() })
    }
}

const ALLOW: &str = r#"{"decision": "allow", "reason": "it only notes"}"#;
const DENY: &str = r#"{"decision": "deny", "reason": "it touches the user's keys"}"#;

/// A workspace, the probe, and the gates and context a test asks for.
struct Fixture {
    _ws: tempfile::TempDir,
    _home: tempfile::TempDir,
    ws: PathBuf,
    tools: ToolRegistry,
    gates: Gates,
    ctx: ToolContext,
}

impl Fixture {
    fn new() -> Fixture {
        let ws_dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
        let mut tools = ToolRegistry::new();
        tools.register(Box::new(Probe {
            order: ws.join("order"),
            parameters: Parameters::new(vec![Param::required(
                "text",
                ParamType::String,
                "Anything.",
            )]),
        }));
        let session = ToolSession::new(policy(&ws), SpillStore::new(ws.join(".spill")), caps());
        let ctx = ToolContext {
            call_id: String::new(),
            cwd: ws.clone(),
            cancel: CancellationToken::new(),
            session: Arc::new(session),
        };
        Fixture {
            _ws: ws_dir,
            _home: home,
            ws,
            tools,
            gates: Gates::default(),
            ctx,
        }
    }

    /// PreToolUse and PostToolUse hooks running `pre` and `post` in the workspace.
    fn hooks(mut self, pre: &str, post: &str) -> Fixture {
        let home = self._home.path();
        let file = json!({"hooks": {
            "PreToolUse": [{"hooks": [{"type": "command", "command": pre}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": post}]}],
        }});
        std::fs::write(home.join("hooks.json"), file.to_string()).unwrap();
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        self.gates.hooks = Some(Arc::new(HookRunner {
            hooks: HookSet::load(home, None).unwrap(),
            redactor: None,
            subagent: false,
            shell: Arc::new(Shell::new(
                ShellEnv::new(Vec::new()),
                &unique_session(),
                Arc::new(Sandbox::default()),
            )),
            policy: policy(&self.ws),
            cwd: self.ws.clone(),
            session_id: "s".into(),
            transcript: self.ws.join("log.jsonl"),
            events,
        }));
        self
    }

    /// Auto review by a model that answers `answer`.
    fn reviewed(mut self, answer: &str) -> Fixture {
        let home = self._home.path().display().to_string();
        let env = Environment::from_pairs([
            ("HOME".to_owned(), home.clone()),
            ("DSH_HOME".to_owned(), home),
            ("DEEPSEEK_API_KEY".to_owned(), "k".to_owned()),
        ]);
        let settings = Settings::load(self.ws.clone(), &env, &Flags::default()).unwrap();
        let model = Arc::new(Reviewer {
            order: self.ws.join("order"),
            answer: answer.to_owned(),
        });
        let context = ReviewContext {
            task: Some("tidy the notes".into()),
            task_origin: "the user",
            transcript: Vec::new(),
        };
        self.gates.review = Some((
            Arc::new(AutoReviewer::new(&settings, model, None)),
            Arc::new(context),
        ));
        self
    }

    /// Someone to ask, under `approval`, who answers `answer`.
    fn user(mut self, approval: ApprovalPolicy, answer: ApprovalOutcome) -> (Fixture, Arc<User>) {
        let user = Arc::new(User {
            answer,
            asked: Mutex::new(Vec::new()),
        });
        let session = ToolSession::new(
            policy(&self.ws),
            SpillStore::new(self.ws.join(".spill")),
            caps(),
        )
        .with_approval(approval)
        .with_user(Some(user.clone()), None);
        self.ctx.session = Arc::new(session);
        (self, user)
    }

    async fn pass(&self, id: &str, name: &str, arguments: &str) -> Passed {
        let call = Call::prepare(&self.tools, id, name, arguments);
        self.gates.clone().pass(call, self.ctx.clone()).await
    }

    /// What ran, in order, since the last look.
    fn order(&self) -> Vec<String> {
        let path = self.ws.join("order");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(path);
        text.lines().map(str::to_owned).collect()
    }
}

fn policy(ws: &Path) -> SandboxPolicy {
    SandboxPolicy::new(SandboxMode::DangerFullAccess, ws, Vec::new())
}

fn caps() -> ModelCaps {
    ModelCaps {
        name: "m".into(),
        image_input: false,
    }
}

/// A session id no other test of this process shares: the end-of-run sweep of one test's shell
/// must not reach another's processes.
fn unique_session() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("pipeline-{:x}x{n}", std::process::id())
}

fn code(passed: &Passed) -> Option<&str> {
    passed.outcome.error.as_ref().map(|e| e.code.as_str())
}

#[tokio::test]
async fn a_call_passes_its_pre_hooks_then_review_then_runs_then_its_post_hooks() {
    let fx = Fixture::new()
        .hooks("echo pre >> order", "echo post >> order; cat > post.json")
        .reviewed(ALLOW);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["pre", "review", "call", "post"]);
    assert_eq!(passed.call_id, "c1");
    assert!(!passed.outcome.is_error);
    assert_eq!(passed.outcome.text(), "ran with hi");
    let review = passed.review.unwrap();
    assert_eq!(
        (review.decision, review.reason.as_str(), review.overridden),
        (ReviewDecision::Allowed, "it only notes", false)
    );
    assert_eq!(
        (review.call_id.as_str(), review.tool.as_str()),
        ("c1", "probe")
    );
    // The call bills nothing itself: its outcome carries what its review billed.
    assert_eq!(passed.outcome.usage, review.usage);
    assert_eq!(review.usage.total_tokens, 49);
    // The hooks see the call as the model made it, under its own id, and the result.
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.ws.join("post.json")).unwrap()).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_use_id"], "c1");
    assert_eq!(post["tool_name"], "probe");
    assert_eq!(post["tool_input"], json!({"text": "hi"}));
    assert_eq!(
        post["tool_response"],
        json!({"output": "ran with hi", "is_error": false})
    );
}

#[tokio::test]
async fn a_pre_hook_that_blocks_keeps_the_call_from_its_review_and_from_running() {
    let fx = Fixture::new()
        .hooks(
            "echo pre >> order; echo 'not on a Friday' >&2; exit 2",
            "echo post >> order",
        )
        .reviewed(ALLOW);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["pre"]);
    assert!(passed.outcome.is_error);
    assert_eq!(
        passed.outcome.text(),
        "Error: a PreToolUse hook blocked this call: not on a Friday"
    );
    assert_eq!(code(&passed), Some("HOOK_BLOCKED"));
    assert!(passed.review.is_none());
}

#[tokio::test]
async fn a_post_hook_that_blocks_has_its_reason_follow_the_result() {
    let fx = Fixture::new().hooks("true", "echo 'lint failed' >&2; exit 2");
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["call"]);
    assert!(!passed.outcome.is_error);
    let texts: Vec<&str> = passed
        .outcome
        .parts
        .iter()
        .map(ToolOutputPart::text)
        .collect();
    assert_eq!(texts, ["ran with hi", "\n[PostToolUse hook] lint failed"]);
}

#[tokio::test]
async fn a_review_that_denies_keeps_the_call_from_running_and_the_model_reads_why() {
    // Headless: nobody to ask, so the refusal stands.
    let fx = Fixture::new()
        .hooks("echo pre >> order", "echo post >> order")
        .reviewed(DENY);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["pre", "review"]);
    assert!(passed.outcome.is_error);
    assert_eq!(code(&passed), Some("AUTO_REVIEW_DENIED"));
    assert_eq!(
        passed.outcome.text(),
        "Error: auto review denied this call, so it did not run: it touches the user's keys. \
         Change the approach; the same call will be denied again"
    );
    let review = passed.review.unwrap();
    assert_eq!(
        (review.decision, review.overridden),
        (ReviewDecision::Denied, false)
    );
    // What the review billed is billed though the call did not run.
    assert_eq!(passed.outcome.usage, review.usage);
}

#[tokio::test]
async fn a_review_that_does_not_decide_keeps_the_call_from_running_too() {
    let fx = Fixture::new().reviewed("Looks fine to me.");
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["review"]);
    assert_eq!(code(&passed), Some("AUTO_REVIEW_FAILED"));
    assert!(
        (passed.outcome.text()).starts_with(
            "Error: auto review could not review this call, so it did not run: the reviewer \
             did not answer with a decision"
        ),
        "{}",
        passed.outcome.text()
    );
    assert_eq!(passed.review.unwrap().decision, ReviewDecision::Failed);
}

#[tokio::test]
async fn the_user_asked_can_let_a_denied_call_run() {
    let (fx, user) = Fixture::new()
        .reviewed(DENY)
        .user(ApprovalPolicy::Ask, ApprovalOutcome::AllowedOnce);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["review", "call"]);
    assert_eq!(passed.outcome.text(), "ran with hi");
    let review = passed.review.unwrap();
    assert_eq!(
        (review.decision, review.overridden),
        (ReviewDecision::Denied, true)
    );
    let asked = user.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].tool.as_str(), asked[0].call_id.as_str()),
        ("probe", "c1")
    );
    assert_eq!(
        asked[0].reason,
        "run this call, which auto review denied: it touches the user's keys"
    );
    // One call's override, never one for the session.
    assert!(asked[0].grant.is_none());
}

#[tokio::test]
async fn a_user_who_denies_the_call_too_has_their_reason_follow_the_reviewers() {
    let (fx, _) = Fixture::new().reviewed(DENY).user(
        ApprovalPolicy::Ask,
        ApprovalOutcome::Rejected {
            reason: Some("  use the test keys instead ".into()),
        },
    );
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["review"]);
    assert_eq!(code(&passed), Some("AUTO_REVIEW_DENIED"));
    assert!(
        (passed.outcome.text()).ends_with(
            "the same call will be denied again; the user said: use the test keys instead"
        ),
        "{}",
        passed.outcome.text()
    );
    assert!(!passed.review.unwrap().overridden);
}

#[tokio::test]
async fn only_an_approval_policy_that_asks_puts_a_denied_call_to_the_user() {
    let (fx, user) = Fixture::new()
        .reviewed(DENY)
        .user(ApprovalPolicy::Never, ApprovalOutcome::AllowedOnce);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["review"]);
    assert_eq!(code(&passed), Some("AUTO_REVIEW_DENIED"));
    assert!(user.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_malformed_call_is_a_tool_error_the_model_reads_and_nothing_reviews_or_runs_it() {
    let fx = Fixture::new()
        .hooks("echo pre >> order", "echo post >> order")
        .reviewed(ALLOW);
    let cases = [
        ("nosuch", r#"{"text": "hi"}"#, "UNKNOWN_TOOL"),
        ("probe", r#"{"text": 5}"#, "INVALID_ARGS"),
        ("probe", r#"{"te"#, "INVALID_ARGS"),
        ("probe", "", "INVALID_ARGS"),
    ];
    for (name, arguments, expected) in cases {
        let passed = fx.pass("c1", name, arguments).await;
        // The hooks see the call as it was made; the reviewer and the tool never do.
        assert_eq!(fx.order(), ["pre", "post"], "{name} {arguments}");
        assert!(passed.outcome.is_error, "{name} {arguments}");
        assert_eq!(code(&passed), Some(expected), "{name} {arguments}");
        assert!(
            passed.outcome.text().starts_with("Error: "),
            "{}",
            passed.outcome.text()
        );
        assert!(passed.review.is_none());
    }
    let unknown = fx.pass("c2", "nosuch", "{}").await;
    assert_eq!(unknown.outcome.text(), "Error: unknown tool \"nosuch\"");
    fx.order();
}

#[tokio::test]
async fn a_call_stopped_before_its_review_is_aborted_and_does_not_run() {
    let fx = Fixture::new().reviewed(ALLOW);
    fx.ctx.cancel.cancel();
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert!(!fx.order().contains(&"call".to_owned()));
    assert_eq!(passed.outcome.text(), "Error: tool call aborted");
    assert_eq!(code(&passed), Some("ABORTED"));
    assert!(passed.review.is_none());
}

/// The command rules `list` (each `(kind, rule)`) over the fixture's gates.
fn ruled(mut fx: Fixture, list: &[(dsh_sandbox::rules::RuleKind, &str)]) -> Fixture {
    use dsh_sandbox::rules::{CommandRules, SourcedRule};
    let rules = list
        .iter()
        .map(|(kind, text)| SourcedRule {
            kind: *kind,
            rule: text.parse().unwrap(),
            source: PathBuf::from("/home/u/.dsh/config.toml"),
        })
        .collect();
    fx.gates.rules = Some(Arc::new(CommandRules::new(rules)));
    fx
}

#[tokio::test]
async fn a_rule_that_asks_puts_the_call_to_the_user_and_no_reviewer_judges_it() {
    use dsh_sandbox::rules::RuleKind;
    let (fx, user) = Fixture::new()
        .reviewed(DENY)
        .user(ApprovalPolicy::Ask, ApprovalOutcome::AllowedOnce);
    let fx = ruled(fx, &[(RuleKind::Ask, "probe")]);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["call"]);
    assert!(passed.review.is_none());
    let asked = user.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].reason.contains("ask rule \"probe\""),
        "{}",
        asked[0].reason
    );
    assert!(asked[0].grant.is_none());
}

#[tokio::test]
async fn a_user_who_refuses_what_a_rule_asks_keeps_the_call_back() {
    use dsh_sandbox::rules::RuleKind;
    let (fx, _) = Fixture::new().user(
        ApprovalPolicy::Ask,
        ApprovalOutcome::Rejected {
            reason: Some("not today".into()),
        },
    );
    let fx = ruled(fx, &[(RuleKind::Ask, "probe")]);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert!(fx.order().is_empty());
    assert_eq!(code(&passed), Some("RULE_ASK_REJECTED"));
    assert!(
        passed
            .outcome
            .text()
            .ends_with("; the user said: not today")
    );
}

#[tokio::test]
async fn an_allowed_call_skips_review_and_a_denied_one_asks_nobody() {
    use dsh_sandbox::rules::RuleKind;
    let fx = ruled(Fixture::new().reviewed(DENY), &[(RuleKind::Allow, "probe")]);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert_eq!(fx.order(), ["call"]);
    assert_eq!(passed.outcome.text(), "ran with hi");

    let (fx, user) = Fixture::new().user(ApprovalPolicy::Ask, ApprovalOutcome::AllowedOnce);
    let fx = ruled(fx, &[(RuleKind::Allow, "probe"), (RuleKind::Deny, "probe")]);
    let passed = fx.pass("c1", "probe", r#"{"text": "hi"}"#).await;
    assert!(fx.order().is_empty());
    assert_eq!(code(&passed), Some("RULE_DENIED"));
    assert!(user.asked.lock().unwrap().is_empty());
}
