//! A server's question (MCP elicitation) goes to whoever answers the run's questions, with the
//! form's defaults filled into what comes back; with no one to ask, dsh declares no such
//! capability and declines a question that comes anyway, saying so in a notice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_mcp::{McpServer, McpServers, Transport};
use dsh_tools::{AskOutcome, Elicitation, ElicitationAnswer, Question, UserQuestions};
use serde_json::{Map, Value, json};

/// Answers every form with what `reply` says, and keeps the forms it was shown.
struct Person {
    reply: ElicitationAnswer,
    shown: Mutex<Vec<Elicitation>>,
}

impl UserQuestions for Person {
    fn ask(
        &self,
        _call_id: &str,
        _questions: Vec<Question>,
    ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
        Box::pin(async { AskOutcome::Cancelled })
    }

    fn can_elicit(&self) -> bool {
        true
    }

    fn elicit(
        &self,
        request: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        self.shown.lock().unwrap().push(request);
        let reply = self.reply.clone();
        Box::pin(async move { reply })
    }
}

async fn call_sign_up(questions: Option<Arc<dyn UserQuestions>>) -> (String, Value, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer {
        name: "asking".into(),
        transport: Transport::Stdio {
            command: "python3".into(),
            args: vec!["-c".into(), dsh_testkit::mcp::ASKING_SERVER.into()],
            env: std::env::vars_os().collect(),
            cwd: dir.path().to_path_buf(),
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: true,
    };
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    servers.answer_with(questions);
    let registry = common::started(&servers, server, notices).await;
    let context = common::context(dir.path());
    let result = registry
        .execute("mcp__asking__sign_up", "{}", &context)
        .await;
    let capabilities: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("capabilities.json")).unwrap(),
    )
    .unwrap();
    servers.shutdown().await;
    let mut said = Vec::new();
    while let Ok(line) = lines.try_recv() {
        said.push(line);
    }
    (result.text(), capabilities, said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_form_goes_back_with_its_defaults_filled_in() {
    let mut given = Map::new();
    given.insert("age".into(), json!(41));
    let person = Arc::new(Person {
        reply: ElicitationAnswer::Accept(given),
        shown: Mutex::new(Vec::new()),
    });
    let (text, capabilities, _) = call_sign_up(Some(person.clone())).await;
    assert_eq!(
        capabilities["elicitation"]["form"],
        json!({"schemaValidation": true})
    );
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"name": "John Doe", "age": 41, "status": "active", "verified": true})
    );
    let shown = person.shown.lock().unwrap();
    assert_eq!(shown[0].server, "asking");
    assert_eq!(shown[0].message, "Who are you?");
    assert_eq!(shown[0].form.fields.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_does_not_fit_the_form_is_not_sent() {
    let mut given = Map::new();
    given.insert("status".into(), json!("banned"));
    let person = Arc::new(Person {
        reply: ElicitationAnswer::Accept(given),
        shown: Mutex::new(Vec::new()),
    });
    let (text, _, said) = call_sign_up(Some(person)).await;
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["action"], "decline");
    assert!(
        said.iter()
            .any(|l| l.contains("\"banned\" is not one of the options")),
        "{said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_one_to_ask_the_capability_is_not_declared_and_a_question_is_declined() {
    let (text, capabilities, said) = call_sign_up(None).await;
    assert!(capabilities.get("elicitation").is_none(), "{capabilities}");
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["action"], "decline");
    assert!(
        said.iter().any(|l| l
            == "mcp asking: asked a question (\"Who are you?\") and no one can answer it here; declined"),
        "{said:?}"
    );
}
