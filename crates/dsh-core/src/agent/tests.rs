//! The agent loop against an in-process scripted provider.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::{Agent, AgentConfig, AgentEvent, AgentParts, Stop};
use crate::Session;
use dsh_llm::{BoxFuture, Completion, DeltaSink, LlmError, ModelRequest, Provider, StreamDelta};
use dsh_protocol::{
    AbortReason, Block, Failure, FailureCode, FinishReason, Message, Record, Role, TurnEndReason,
    Usage,
};
use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolRegistry, ToolSession};
use pretty_assertions::assert_eq;
use tokio::sync::mpsc;

type Answer = Result<Completion, LlmError>;

/// Plays answers in order and keeps every request's history.
struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    seen: Mutex<Vec<Vec<Message>>>,
    /// Stop the run when this request (0-based) arrives, before answering.
    stop_at: Option<(usize, Stop)>,
    /// Leave a message in the agent's steering inbox when this request arrives, as a person
    /// typing while the model works.
    steer_at: Mutex<Option<(usize, super::Steering, String)>>,
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let index = {
                let mut seen = self.seen.lock().unwrap();
                seen.push(request.messages.to_vec());
                seen.len() - 1
            };
            if let Some((at, steering, text)) = &*self.steer_at.lock().unwrap()
                && *at == index
            {
                steering.push(text.clone());
            }
            if let Some((at, stop)) = &self.stop_at
                && *at == index
            {
                stop.request(AbortReason::Signal {
                    signal: "SIGTERM".into(),
                });
                std::future::pending::<()>().await;
            }
            on_delta(StreamDelta::Reasoning("hm".into()));
            self.answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Ok(text("done")))
        })
    }
}

fn text(t: &str) -> Completion {
    Completion {
        message: Message {
            role: Role::Assistant,
            content: vec![Block::Text { text: t.into() }],
        },
        finish: FinishReason::Stop,
        usage: Usage::new(10, 2, 0, 0, 0),
        retried: Usage::default(),
    }
}

fn calls(calls: &[(&str, &str, &str)], finish: FinishReason) -> Completion {
    Completion {
        message: Message {
            role: Role::Assistant,
            content: calls
                .iter()
                .map(|(id, name, args)| Block::ToolCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    arguments: (*args).into(),
                })
                .collect(),
        },
        finish,
        usage: Usage::new(5, 1, 1, 0, 0),
        retried: Usage::default(),
    }
}

struct Run {
    summary: super::TurnSummary,
    records: Vec<Record>,
    deltas: usize,
    seen: Vec<Vec<Message>>,
    log: String,
    /// The notices the run gave (none but a failed title request's in these tests).
    notices: Vec<String>,
}

async fn run(answers: Vec<Answer>, config: AgentConfig, stop_at: Option<usize>) -> Run {
    run_with(answers, config, stop_at, false).await
}

/// [`run`], in plan mode (with `exit_plan_mode`) when `plan_mode`.
async fn run_with(
    answers: Vec<Answer>,
    config: AgentConfig,
    stop_at: Option<usize>,
    plan_mode: bool,
) -> Run {
    run_full(answers, config, stop_at, plan_mode, None).await
}

/// [`run_with`], with `steer` (`(request, text)`) left in the steering inbox when that
/// request arrives.
async fn run_full(
    answers: Vec<Answer>,
    config: AgentConfig,
    stop_at: Option<usize>,
    plan_mode: bool,
    steer: Option<(usize, &str)>,
) -> Run {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta\n").unwrap();
    let stop = Stop::new();
    let provider = Arc::new(Scripted {
        answers: Mutex::new(answers.into()),
        seen: Mutex::new(Vec::new()),
        stop_at: stop_at.map(|at| (at, stop.clone())),
        steer_at: Mutex::new(None),
    });
    let mut tools = ToolRegistry::with_file_tools(true);
    if plan_mode {
        tools.register(Box::new(dsh_tools::ExitPlanMode::default()));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let session = Session::create(
        home.path(),
        ws.path().to_path_buf(),
        crate::LogOptions::default(),
    );
    let tool_session = ToolSession::new(
        SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), Vec::new()),
        SpillStore::new(session.dir().join("spill")),
        ModelCaps {
            name: "m".into(),
            image_input: false,
        },
    )
    .with_plan_mode(plan_mode);
    let mut agent = Agent::new(AgentParts {
        provider: provider.clone(),
        tools,
        tool_session: Arc::new(tool_session),
        config,
        session,
        events: tx,
    });
    if let Some((at, text)) = steer {
        *provider.steer_at.lock().unwrap() = Some((at, agent.steering(), text.to_owned()));
    }
    let summary = agent.run("do it".into(), &stop).await.unwrap();
    let log = std::fs::read_to_string(agent.session().log_path()).unwrap();
    drop(agent);
    let mut records = Vec::new();
    let mut deltas = 0;
    let mut notices = Vec::new();
    while let Some(event) = rx.recv().await {
        match event {
            AgentEvent::Record(r) => records.push(r),
            AgentEvent::Delta(_) => deltas += 1,
            AgentEvent::Child { .. } => panic!("no subagent runs in these tests"),
            AgentEvent::ToolOutput { .. } => panic!("no one watches output in these tests"),
            AgentEvent::Notice(line) => notices.push(line),
        }
    }
    let seen = provider.seen.lock().unwrap().clone();
    Run {
        summary,
        records,
        deltas,
        seen,
        log,
        notices,
    }
}

fn kinds(records: &[Record]) -> Vec<&'static str> {
    records
        .iter()
        .map(|r| match r {
            Record::TurnStart { .. } => "turn/start",
            Record::UserMessage { .. } => "user/message",
            Record::StepStart { .. } => "step/start",
            Record::AssistantMessage(_) => "assistant/message",
            Record::ToolCall(_) => "tool/call",
            Record::ToolResult(_) => "tool/result",
            Record::StepEnd { .. } => "step/end",
            Record::TurnEnd { .. } => "turn/end",
            Record::CompactionPrune(_) => "compaction/prune",
            Record::CompactionSummary(_) => "compaction/summary",
            Record::TodoWrite { .. } => "todo/write",
            Record::SessionSeed { .. } => "session/seed",
            Record::SubagentRun(_) => "subagent/run",
            Record::GoalChange(_) => "goal/change",
            Record::Presentation(_) => "artifact/present",
            Record::PermissionMode(_) => "permission/mode",
            Record::AutoReview(_) => "review/decision",
            Record::Checkpoint(_) => "checkpoint",
            Record::Rewind(_) => "rewind",
            Record::SessionTitle(_) => "session/title",
        })
        .collect()
}

fn results(records: &[Record]) -> Vec<(String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::ToolResult(data) => match &data.message.content[0] {
                Block::ToolResult {
                    tool_call_id,
                    content,
                    ..
                } => Some((tool_call_id.clone(), content[0].text().to_owned())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_round_trip_sends_the_result_back_and_completes() {
    let run = run(
        vec![
            Ok(calls(
                &[("c1", "read", r#"{"file_path":"a.txt"}"#)],
                FinishReason::ToolCalls,
            )),
            Ok(text("the answer")),
        ],
        AgentConfig::new("m"),
        None,
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::Completed);
    assert_eq!(run.summary.text, "the answer");
    assert_eq!(
        kinds(&run.records),
        vec![
            "turn/start",
            "user/message",
            "step/start",
            "assistant/message",
            "tool/call",
            "tool/result",
            "step/end",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );
    // The second request carries the task, the call and its result.
    assert_eq!(run.seen[1].len(), 3);
    assert!(run.seen[1][2].content[0] != run.seen[1][1].content[0]);
    assert_eq!(run.summary.usage, Usage::new(15, 3, 1, 0, 0));
    assert_eq!(run.summary.steps, 2);
    assert_eq!(run.deltas, 2);
    // The log holds the header and every record.
    assert_eq!(run.log.lines().count(), 1 + run.records.len());
}

#[tokio::test]
async fn parallel_results_come_back_in_call_order_and_unknown_tools_are_errors() {
    let run = run(
        vec![Ok(calls(
            &[
                ("c1", "read", r#"{"file_path":"b.txt"}"#),
                ("c2", "read", r#"{"file_path":"a.txt"}"#),
                ("c3", "nosuch", "{}"),
                ("c4", "read", r#"{"file_path":"missing"}"#),
            ],
            FinishReason::ToolCalls,
        ))],
        AgentConfig::new("m"),
        None,
    )
    .await;
    let got = results(&run.records);
    assert_eq!(
        got.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["c1", "c2", "c3", "c4"]
    );
    assert!(got[0].1.contains("1: beta"));
    assert!(got[1].1.contains("1: alpha"));
    assert_eq!(got[2].1, "Error: unknown tool \"nosuch\"");
    assert!(got[3].1.ends_with("missing\": not found"));
    // The two parallel reads are both announced before either result.
    assert_eq!(
        &kinds(&run.records)[4..8],
        ["tool/call", "tool/call", "tool/result", "tool/result"]
    );
}

#[tokio::test]
async fn a_cut_off_answer_still_runs_its_complete_calls_and_continues() {
    let run = run(
        vec![
            Ok(calls(
                &[
                    ("c1", "read", r#"{"file_path":"a.txt"}"#),
                    ("c2", "read", r#"{"file_pa"#),
                    // Cut right after the tool's name: no arguments at all.
                    ("c3", "read", ""),
                ],
                FinishReason::MaxTokens,
            )),
            Ok(text("ok")),
        ],
        AgentConfig::new("m"),
        None,
    )
    .await;
    let got = results(&run.records);
    assert!(got[0].1.contains("1: alpha"));
    for cut in &got[1..3] {
        assert!(
            cut.1.contains("cut off at the model's output token limit"),
            "{}",
            cut.1
        );
    }
    assert_eq!(run.summary.reason, TurnEndReason::Completed);
}

#[tokio::test]
async fn a_final_answer_cut_at_the_token_limit_ends_with_max_tokens() {
    let mut cut = text("partial");
    cut.finish = FinishReason::MaxTokens;
    let run = run(vec![Ok(cut)], AgentConfig::new("m"), None).await;
    assert_eq!(run.summary.reason, TurnEndReason::MaxTokens);
    assert_eq!(run.summary.text, "partial");
}

#[tokio::test]
async fn the_step_cap_ends_the_turn_with_max_steps() {
    let looping = || {
        Ok(calls(
            &[("c", "read", r#"{"file_path":"a.txt"}"#)],
            FinishReason::ToolCalls,
        ))
    };
    let mut config = AgentConfig::new("m");
    config.max_steps = 2;
    let run = run(vec![looping(), looping(), looping()], config, None).await;
    match run.summary.reason {
        TurnEndReason::Error { error } => assert_eq!(error.code, FailureCode::MaxSteps),
        other => panic!("unexpected {other:?}"),
    }
    // Both steps' results were committed before the turn ended.
    assert_eq!(results(&run.records).len(), 2);
    assert_eq!(run.summary.steps, 2);
}

#[tokio::test]
async fn a_failed_request_ends_the_turn_with_its_failure_and_usage() {
    let failure = Failure::new(FailureCode::Auth, "refused");
    let run = run(
        vec![Err(LlmError::new(failure.clone(), Usage::default()))],
        AgentConfig::new("m"),
        None,
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::Error { error: failure });
    assert!(matches!(run.records.last(), Some(Record::TurnEnd { .. })));
}

#[tokio::test]
async fn a_stop_mid_request_aborts_and_counts_the_request() {
    let run = run(
        vec![Ok(calls(
            &[("c1", "read", r#"{"file_path":"a.txt"}"#)],
            FinishReason::ToolCalls,
        ))],
        AgentConfig::new("m"),
        Some(1),
    )
    .await;
    assert_eq!(
        run.summary.reason,
        TurnEndReason::Aborted {
            reason: AbortReason::Signal {
                signal: "SIGTERM".into()
            }
        }
    );
    assert_eq!(run.summary.usage.unreported_calls, 1);
    assert!(matches!(run.records.last(), Some(Record::TurnEnd { .. })));
}

#[tokio::test]
async fn a_call_that_ends_the_turn_leaves_the_calls_after_it_not_run() {
    // Headless, nobody can approve the plan: it is the turn's answer.
    let run = run_with(
        vec![Ok(calls(
            &[
                (
                    "c1",
                    "exit_plan_mode",
                    r##"{"plan":"# Tidy\n\nRemove b.txt."}"##,
                ),
                ("c2", "read", r#"{"file_path":"a.txt"}"#),
                ("c3", "read", r#"{"file_path":"b.txt"}"#),
            ],
            FinishReason::ToolCalls,
        ))],
        AgentConfig::new("m"),
        None,
        true,
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::PlanSubmitted);
    assert_eq!(run.summary.text, "# Tidy\n\nRemove b.txt.");
    let got = results(&run.records);
    assert!(got[0].1.starts_with("Plan submitted."), "{}", got[0].1);
    for not_run in &got[1..] {
        assert_eq!(
            not_run.1,
            "Error: tool call not run: an earlier call of this answer ended the turn"
        );
    }
    let codes: Vec<_> = (run.records.iter())
        .filter_map(|r| match r {
            Record::ToolResult(result) => result.error.as_ref().map(|e| e.code.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        codes,
        ["ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    );
    // Each call not run is recorded as made, then its result.
    assert_eq!(
        &kinds(&run.records)[4..10],
        [
            "tool/call",
            "tool/result",
            "tool/call",
            "tool/result",
            "tool/call",
            "tool/result"
        ]
    );
}

/// After the first turn, one request without tools titles the session from its first task;
/// what it billed is the run's.
#[tokio::test]
async fn a_session_is_titled_after_its_first_turn() {
    let mut config = AgentConfig::new("m");
    config.titles = true;
    let run = run(
        vec![Ok(text("the answer")), Ok(text("\"Do the thing.\"\nmore"))],
        config,
        None,
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::Completed);
    assert_eq!(run.summary.text, "the answer");
    assert_eq!(run.seen.len(), 2, "the turn's request and the title's");
    let asked = run.seen[1][0].text();
    assert!(asked.contains(super::title::TITLE_INSTRUCTION), "{asked}");
    assert!(asked.contains("<message>\ndo it\n</message>"), "{asked}");
    let Some(Record::SessionTitle(titled)) = run.records.last() else {
        panic!("the title comes last: {:?}", kinds(&run.records));
    };
    assert_eq!((titled.title.as_str(), titled.turn), ("Do the thing", 1));
    assert_eq!(titled.usage.total_tokens, 12);
    assert_eq!(
        run.summary.usage.total_tokens, 24,
        "the turn's 12 and the title's"
    );
    assert!(run.log.contains(r#""type":"session/title""#));
    assert!(run.notices.is_empty(), "{:?}", run.notices);
}

/// Without `titles` (a headless run's default) nothing more is sent.
#[tokio::test]
async fn no_title_is_asked_for_unless_the_run_asks() {
    let run = run(vec![Ok(text("the answer"))], AgentConfig::new("m"), None).await;
    assert_eq!(run.seen.len(), 1);
    assert!(!kinds(&run.records).contains(&"session/title"));
    assert_eq!(run.summary.usage.total_tokens, 12);
}

/// A title request that fails leaves the session as it was, with a notice: the run still
/// completes with its answer, and what the failed request billed is counted.
#[tokio::test]
async fn a_failed_title_request_breaks_nothing() {
    let mut config = AgentConfig::new("m");
    config.titles = true;
    let failure = Failure::new(FailureCode::Server, "the server fell over");
    let run = run(
        vec![
            Ok(text("the answer")),
            Err(dsh_llm::LlmError::new(failure, Usage::new(3, 0, 0, 0, 0))),
        ],
        config,
        None,
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::Completed);
    assert_eq!(run.summary.text, "the answer");
    assert!(!kinds(&run.records).contains(&"session/title"));
    assert_eq!(run.summary.usage.total_tokens, 15);
    assert_eq!(run.notices.len(), 1, "{:?}", run.notices);
    assert!(
        run.notices[0].contains("the server fell over"),
        "{:?}",
        run.notices
    );
}

#[tokio::test]
async fn a_message_sent_during_a_step_reaches_the_next_request_after_the_results() {
    let run = run_full(
        vec![
            Ok(calls(
                &[("c1", "read", r#"{"file_path":"a.txt"}"#)],
                FinishReason::ToolCalls,
            )),
            Ok(text("the answer")),
        ],
        AgentConfig::new("m"),
        None,
        false,
        Some((0, "use b.txt instead")),
    )
    .await;
    assert_eq!(run.summary.reason, TurnEndReason::Completed);
    // Sent while the first request was out: not in it, but in the second, after the call's
    // result, and in the same turn.
    assert_eq!(run.seen[0].len(), 1);
    assert_eq!(run.seen[1].len(), 4);
    assert_eq!(run.seen[1][3].role, Role::User);
    assert_eq!(run.seen[1][3].text(), "use b.txt instead");
    assert_eq!(
        kinds(&run.records)[4..9],
        [
            "tool/call",
            "tool/result",
            "step/end",
            "user/message",
            "step/start"
        ]
    );
    assert_eq!(run.summary.steps, 2);
}

#[tokio::test]
async fn a_message_sent_during_the_last_step_waits_for_the_front_end() {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let provider = Arc::new(Scripted {
        answers: Mutex::new(vec![Ok(text("done"))].into()),
        seen: Mutex::new(Vec::new()),
        stop_at: None,
        steer_at: Mutex::new(None),
    });
    let session = Session::create(
        home.path(),
        ws.path().to_path_buf(),
        crate::LogOptions::default(),
    );
    let tool_session = ToolSession::new(
        SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), Vec::new()),
        SpillStore::new(session.dir().join("spill")),
        ModelCaps {
            name: "m".into(),
            image_input: false,
        },
    );
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut agent = Agent::new(AgentParts {
        provider: provider.clone(),
        tools: ToolRegistry::with_file_tools(true),
        tool_session: Arc::new(tool_session),
        config: AgentConfig::new("m"),
        session,
        events: tx,
    });
    let steering = agent.steering();
    *provider.steer_at.lock().unwrap() = Some((0, steering.clone(), "and then?".into()));
    agent.run("do it".into(), &Stop::new()).await.unwrap();
    // The model answered without a call: no step boundary came, and the message waits for
    // the front end to send it as a message of its own.
    assert_eq!(steering.take_all(), vec!["and then?".to_owned()]);
    assert_eq!(provider.seen.lock().unwrap().len(), 1);
}
