use super::*;

/// A schema check that takes object schemas only, as the tests' host does.
fn object_schemas_only() -> SchemaCheck {
    Arc::new(|schema| match schema.get("type") {
        Some(serde_json::Value::String(kind)) if kind == "object" => Ok(()),
        _ => Err("not an object schema".into()),
    })
}

/// A host no agent answers for, with the ends of its channels (kept open by the caller).
fn idle_host() -> (
    Host,
    tokio::sync::mpsc::UnboundedReceiver<AgentCall>,
    std::sync::mpsc::Sender<(u32, serde_json::Value)>,
) {
    let (calls, asked) = tokio::sync::mpsc::unbounded_channel();
    let (reply, answers) = std::sync::mpsc::channel();
    let (logs, _said) = tokio::sync::mpsc::unbounded_channel();
    let host = Host {
        calls,
        answers,
        logs,
        cancelled: Arc::new(AtomicBool::new(false)),
        check_schema: object_schemas_only(),
    };
    (host, asked, reply)
}

/// Runs `script` with agents that answer `answer(call)` at once, on this thread's behalf.
fn run_with(
    script: &str,
    args: Option<serde_json::Value>,
    answer: impl Fn(&AgentCall) -> serde_json::Value + Send + 'static,
) -> (Result<Finished, WorkflowError>, Vec<AgentCall>) {
    let (host, mut asked, reply) = idle_host();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let answering = std::thread::spawn(move || {
        while let Some(call) = asked.blocking_recv() {
            let _ = reply.send((call.seq, answer(&call)));
            record.lock().unwrap().push(call);
        }
    });
    let outcome = run("test", script, args.as_ref(), Limits::default(), host);
    let _ = answering.join();
    let calls = seen.lock().unwrap().clone();
    (outcome, calls)
}

#[test]
fn a_script_returns_its_value_as_two_space_json() {
    let (outcome, calls) = run_with("return {answer: 42};", None, |_| serde_json::Value::Null);
    assert_eq!(
        outcome,
        Ok(Finished {
            result: "{\n  \"answer\": 42\n}".into(),
            agents: 0
        })
    );
    assert!(calls.is_empty());
    let (outcome, _) = run_with("const x = 1;", None, |_| serde_json::Value::Null);
    assert_eq!(outcome.map(|f| f.result), Ok("null".into()));
}

#[test]
fn a_script_that_does_not_parse_is_told_apart() {
    let (outcome, _) = run_with("return {;", None, |_| serde_json::Value::Null);
    let Err(WorkflowError::Parse(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        message,
        "SyntaxError: invalid property name (line 1, column 9)"
    );
}

#[test]
fn agents_run_in_parallel_and_a_failed_one_is_null() {
    let script = r#"
        phase("Survey");
        const [a, b] = await parallel([
            () => agent("first task"),
            () => agent("second task", {label: "two", schema: {type: "object"}}),
        ]);
        const c = await agent("a failing one");
        return {a, b, c, args};
    "#;
    let (outcome, calls) = run_with(script, Some(serde_json::json!({"n": 1})), |call| match call
        .prompt
        .as_str()
    {
        "first task" => serde_json::json!("one"),
        "second task" => serde_json::json!({"ok": true}),
        _ => serde_json::Value::Null,
    });
    let finished = outcome.unwrap();
    assert_eq!(finished.agents, 3);
    let result: serde_json::Value = serde_json::from_str(&finished.result).unwrap();
    assert_eq!(
        result,
        serde_json::json!({"a": "one", "b": {"ok": true}, "c": null, "args": {"n": 1}})
    );
    assert_eq!(calls[0].label, "first task");
    assert_eq!(calls[0].phase.as_deref(), Some("Survey"));
    assert_eq!(calls[1].label, "two");
    assert_eq!(calls[1].schema, Some(serde_json::json!({"type": "object"})));
}

#[test]
fn the_api_refuses_what_it_does_not_support_with_the_reference_texts() {
    let (outcome, _) = run_with(
        r#"return await agent("x", {effort: "high"});"#,
        None,
        |_| serde_json::Value::Null,
    );
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.starts_with(
            "WorkflowError: agent() option \"effort\" is deferred and not supported by this \
             engine (supported: label, phase, schema, provider, model)"
        ),
        "{message}"
    );
    let (outcome, calls) = run_with(
        r#"return await agent("x", {schema: {type: "array"}});"#,
        None,
        |_| serde_json::Value::Null,
    );
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.contains("unsupported JSON schema"), "{message}");
    assert!(calls.is_empty(), "no agent starts");
    // The host's hooks cannot be replaced by the script.
    let (outcome, _) = run_with(
        "globalThis.__result = () => 'forged'; return 1;",
        None,
        |_| serde_json::Value::Null,
    );
    assert_eq!(outcome.map(|f| f.result), Ok("1".into()));
    let (outcome, _) = run_with("return () => 1;", None, |_| serde_json::Value::Null);
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.contains(
            "the workflow's return value is not plain JSON data — workflow result: a function is \
             not JSON data"
        ),
        "{message}"
    );
    let (outcome, _) = run_with("throw new Error('boom');", None, |_| {
        serde_json::Value::Null
    });
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.starts_with("Error: boom"), "{message}");
}

#[test]
fn the_script_has_no_file_process_or_network_access_and_is_bounded() {
    let (outcome, _) = run_with(
        "return [typeof require, typeof process, typeof fetch, typeof setTimeout, typeof std, typeof os];",
        None,
        |_| serde_json::Value::Null,
    );
    let result: serde_json::Value = serde_json::from_str(&outcome.unwrap().result).unwrap();
    assert_eq!(result, serde_json::json!(vec!["undefined"; 6]));
    // A loop that never yields is stopped at the time limit.
    let (host, _asked, _reply) = idle_host();
    let limits = Limits {
        time: Duration::from_millis(200),
        ..Limits::default()
    };
    let outcome = run("spin", "while (true) {}", None, limits, host);
    assert_eq!(outcome, Err(WorkflowError::TimedOut(limits.time)));
    // So is memory.
    let (host, _asked, _reply) = idle_host();
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    let outcome = run(
        "hog",
        "const s = 'x'.repeat(100 * 1024 * 1024); return s.length;",
        None,
        limits,
        host,
    );
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.contains("out of memory"), "{message}");
}

#[test]
fn log_lines_reach_the_host() {
    let (host, _asked, _reply) = idle_host();
    let (logs, mut said) = tokio::sync::mpsc::unbounded_channel();
    let host = Host { logs, ..host };
    let outcome = run(
        "talk",
        "log('starting'); log('done'); return 1;",
        None,
        Limits::default(),
        host,
    );
    assert_eq!(outcome.map(|f| f.result), Ok("1".into()));
    assert_eq!(said.try_recv().ok().as_deref(), Some("starting"));
    assert_eq!(said.try_recv().ok().as_deref(), Some("done"));
}
