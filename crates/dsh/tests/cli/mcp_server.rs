//! `dsh mcp-server` driven by a real MCP client (rmcp's) over the child's stdio, against the
//! scripted model server.

use std::sync::{Arc, Mutex};

use dsh_testkit::{TestEnv, Turn};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, JsonObject, ProgressNotificationParam,
    Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::dsh;

/// A client that keeps every progress message it is sent, and passes each on.
#[derive(Clone)]
struct Client {
    progress: Arc<Mutex<Vec<String>>>,
    told: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = params.message.unwrap_or_default();
        self.progress.lock().unwrap().push(message.clone());
        let _ = self.told.send(message);
    }
}

struct Connected {
    service: RunningService<RoleClient, Client>,
    client: Client,
    told: mpsc::UnboundedReceiver<String>,
}

async fn connect(env: &TestEnv, args: &[&str]) -> Connected {
    let mut command = env.command(dsh());
    command.arg("mcp-server").args(args);
    let transport = TokioChildProcess::new(tokio::process::Command::from(command)).unwrap();
    let (told, told_rx) = mpsc::unbounded_channel();
    let client = Client {
        progress: Arc::default(),
        told,
    };
    let service = client.clone().serve(transport).await.unwrap();
    Connected {
        service,
        client,
        told: told_rx,
    }
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Calls a tool with a progress token, as a client that shows progress does.
async fn call(
    service: &RunningService<RoleClient, Client>,
    tool: &'static str,
    args: Value,
) -> CallToolResult {
    let request = CallToolRequestParams::new(tool).with_arguments(arguments(args));
    let handle = service
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(request)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    match handle.await_response().await.unwrap() {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_task_runs_with_progress_and_a_reply_continues_its_session() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "notes.txt"})),
        Turn::text("The notes say hello."),
        Turn::text("Second answer."),
    ]);
    env.write("notes.txt", "hello\n");
    let Connected {
        service, client, ..
    } = connect(&env, &["--model", "deepseek-chat"]).await;

    let tools = service.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["dsh", "dsh-reply"]);

    let first = call(&service, "dsh", json!({"prompt": "What do the notes say?"})).await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    assert_eq!(text(&first), "The notes say hello.");
    let done = first.structured_content.clone().unwrap();
    assert_eq!(done["reason"], json!({"kind": "completed"}));
    assert_eq!(done["steps"], 2);
    assert_eq!(done["text"], "The notes say hello.");
    let session_id = done["sessionId"].as_str().unwrap().to_owned();
    let progress = client.progress.lock().unwrap().clone();
    assert_eq!(
        progress,
        ["step 1", "read notes.txt", "tool done", "step 2"]
    );

    let second = call(
        &service,
        "dsh-reply",
        json!({"sessionId": session_id, "prompt": "And again?"}),
    )
    .await;
    assert_eq!(text(&second), "Second answer.");
    assert_eq!(second.structured_content.unwrap()["sessionId"], session_id);
    // The reply's request carried the first exchange: the same conversation, not a new one.
    let requests = env.server.requests();
    let history = serde_json::to_string(requests[2].messages()).unwrap();
    assert!(history.contains("What do the notes say?"), "{history}");
    assert!(history.contains("The notes say hello."), "{history}");
    assert!(env.session_log().contains("And again?"));
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn bad_arguments_are_tool_errors_the_model_can_read() {
    let env = TestEnv::new(vec![]);
    let Connected { service, .. } = connect(&env, &[]).await;
    let missing = call(&service, "dsh", json!({"cwd": "."})).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(
        text(&missing),
        "invalid arguments for dsh: prompt is required"
    );
    let unknown = call(
        &service,
        "dsh-reply",
        json!({"sessionId": "session-nope", "prompt": "hi"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text(&unknown).starts_with("SESSION_NOT_FOUND: no session session-nope was run in ")
            && text(&unknown).ends_with(": give dsh-reply the cwd the session ran in"),
        "{}",
        text(&unknown)
    );
    let nowhere = call(&service, "dsh", json!({"prompt": "hi", "cwd": "nope/sub"})).await;
    assert_eq!(nowhere.is_error, Some(true));
    assert!(
        text(&nowhere).contains("is not a folder"),
        "{}",
        text(&nowhere)
    );
    let request = CallToolRequestParams::new("bash").with_arguments(arguments(json!({})));
    let error = service.call_tool(request).await.unwrap_err().to_string();
    assert!(error.contains("unknown tool \"bash\""), "{error}");
    // Nothing was sent to the model.
    assert!(env.server.requests().is_empty());
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_call_stops_its_turn_and_a_reply_goes_on_after_it() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("Still here.")]);
    let Connected {
        service, mut told, ..
    } = connect(&env, &[]).await;
    let request = CallToolRequestParams::new("dsh")
        .with_arguments(arguments(json!({"prompt": "wait forever"})));
    let handle = service
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(request)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // The turn has begun once its first step is told; it is cancelled once its request is
    // waiting on the model (cancelled earlier, the reply's request would take the hanging turn).
    assert_eq!(told.recv().await.unwrap(), "step 1");
    assert!(
        env.server
            .wait_for_requests(1, std::time::Duration::from_secs(30))
    );
    handle
        .cancel(Some("the user pressed stop".into()))
        .await
        .unwrap();
    // The reply waits for the cancelled turn to close the session's log, then runs.
    let log = only_session_log(&env);
    let session_id = log.parent().unwrap().file_name().unwrap().to_str().unwrap();
    let next = call(
        &service,
        "dsh-reply",
        json!({"sessionId": session_id, "prompt": "are you there?"}),
    )
    .await;
    assert_eq!(text(&next), "Still here.");
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let ends: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "turn/end")
        .map(|r| &r["data"]["reason"])
        .collect();
    assert_eq!(
        ends,
        [
            &json!({"kind": "aborted", "reason": {"kind": "user"}}),
            &json!({"kind": "completed"})
        ]
    );
    service.cancel().await.unwrap();
}

/// The path of the one session log under the test's home.
fn only_session_log(env: &TestEnv) -> std::path::PathBuf {
    let sessions = env.home.path().join("sessions");
    let project = std::fs::read_dir(sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let session = std::fs::read_dir(project.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    session.path().join("session.jsonl")
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_may_narrow_the_servers_sandbox_but_not_widen_it() {
    let env = TestEnv::new(vec![Turn::text("looked")]);
    let Connected { service, .. } = connect(&env, &["--permission-mode", "read-only"]).await;
    let wider = call(
        &service,
        "dsh",
        json!({"prompt": "write anywhere", "sandbox": "danger-full-access"}),
    )
    .await;
    assert_eq!(wider.is_error, Some(true));
    assert_eq!(
        text(&wider),
        "sandbox \"danger-full-access\" is wider than this server allows (read-only): a call \
         may only narrow it; the server's operator can start it with --permission-mode \
         danger-full-access"
    );
    assert!(env.server.requests().is_empty());
    let narrower = call(
        &service,
        "dsh",
        json!({"prompt": "look", "sandbox": "plan"}),
    )
    .await;
    assert_eq!(text(&narrower), "looked");
    service.cancel().await.unwrap();
}
