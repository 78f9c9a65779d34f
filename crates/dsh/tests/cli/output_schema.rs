//! `--output-schema`: the final answer must match a JSON Schema; an invalid one goes back to
//! the model with what failed, a bounded number of times.

use dsh_testkit::{TestEnv, Turn};
use serde_json::json;

use crate::dsh;

const SCHEMA: &str = r#"{"type":"object","required":["ok","count"],"properties":{"ok":{"type":"boolean"},"count":{"type":"integer"}},"additionalProperties":false}"#;

fn env(turns: Vec<Turn>) -> TestEnv {
    let env = TestEnv::new(turns);
    env.write("answer.schema.json", SCHEMA);
    env
}

#[test]
fn a_valid_answer_is_in_final_as_json() {
    let env = env(vec![Turn::text("{\"ok\": true, \"count\": 3}")]);
    let out = env.run(
        dsh(),
        &["--json", "--output-schema", "answer.schema.json", "count"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let last = out.events().last().unwrap().clone();
    assert_eq!(last["structuredOutput"], json!({"ok": true, "count": 3}));
    assert_eq!(last["text"], "{\"ok\": true, \"count\": 3}");
}

#[test]
fn an_invalid_answer_is_sent_back_with_what_failed() {
    let env = env(vec![
        Turn::text("Here you go: three"),
        Turn::text("```json\n{\"ok\": true, \"count\": 3}\n```"),
    ]);
    let out = env.run(
        dsh(),
        &["--json", "--output-schema", "answer.schema.json", "count"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let told = serde_json::to_string(requests[1].messages().last().unwrap()).unwrap();
    assert!(told.contains("the answer is not JSON"), "{told}");
    assert_eq!(out.events().last().unwrap()["structuredOutput"]["count"], 3);
}

#[test]
fn answers_that_never_match_end_the_run_with_their_own_reason() {
    let wrong = || Turn::text("{\"ok\": \"yes\"}");
    let env = env(vec![wrong(), wrong(), wrong(), wrong()]);
    let out = env.run(
        dsh(),
        &["--json", "--output-schema", "answer.schema.json", "count"],
    );
    assert_eq!(out.code(), Some(6), "{}", out.stderr);
    assert_eq!(
        env.server.requests().len(),
        3,
        "the answer and two corrections"
    );
    let last = out.events().last().unwrap().clone();
    assert_eq!(last["reason"]["kind"], "output-schema");
    let message = last["reason"]["message"].as_str().unwrap();
    assert!(
        message.contains("at /ok") && message.contains("count"),
        "{message}"
    );
    assert!(last.get("structuredOutput").is_none());
    assert!(
        out.stderr.contains("dsh: OUTPUT_SCHEMA: "),
        "{}",
        out.stderr
    );
}

#[test]
fn a_schema_that_is_not_one_is_refused_before_anything_is_sent() {
    let env = env(vec![Turn::text("{}")]);
    env.write("bad.json", "{\"type\": \"nothing\"}");
    let out = env.run(dsh(), &["--output-schema", "bad.json", "count"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("is not a valid JSON Schema"),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty());
}
