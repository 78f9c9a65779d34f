use super::*;

/// A schema check that takes object schemas only, as the tests' host does.
fn object_schemas_only() -> SchemaCheck {
    Arc::new(|schema| match schema.get("type") {
        Some(serde_json::Value::String(kind)) if kind == "object" => Ok(()),
        _ => Err(UnsupportedSchema("not an object schema".into())),
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
    let (logs, _said) = tokio::sync::mpsc::channel(LOG_QUEUE);
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
            agents: 0,
            logs_dropped: 0,
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

/// A failure's stack names the script's own lines, and none of the prelude's frames.
#[test]
fn a_failure_points_at_the_scripts_own_lines() {
    let script = "const a = 1;\nfunction inner() {\n  throw new Error(\"boom\");\n}\ninner();\n";
    let (outcome, _) = run_with(script, None, |_| serde_json::Value::Null);
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    let frames: Vec<&str> = message.lines().skip(1).map(str::trim).collect();
    assert_eq!(
        frames,
        ["at inner (<input>:3:13)", "at workflow:test (<input>:5:1)"],
        "{message}"
    );
    let (outcome, _) = run_with("\nawait agent();", None, |_| serde_json::Value::Null);
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(!message.contains("eval_script"), "{message}");
    assert!(
        message.ends_with("at workflow:test (<input>:2:7)"),
        "{message}"
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

/// What a script gets when it tries every way out it could know of: each attempt's outcome by
/// name (`got ...` or `refused: ...`).
const ESCAPES: &str = r#"
    const tried = {};
    const attempt = async (name, f) => {
        try { tried[name] = "got " + JSON.stringify(await f()); }
        catch (e) { tried[name] = "refused: " + String((e && e.message) || e); }
    };
    await attempt("import a file", () => import(args.module).then((m) => m.default));
    await attempt("import std", () => import("std").then((m) => typeof m.loadFile));
    await attempt("import os", () => import("os").then((m) => typeof m.exec));
    await attempt("fetch", () => fetch(args.url));
    await attempt("require", () => require("fs").readFileSync(args.text));
    await attempt("process", () => process.env);
    await attempt("eval import", () => eval("import(args.module)").then((m) => m.default));
    await attempt("eval require", () => eval("require('child_process')"));
    await attempt("Function fetch", () => new Function("return fetch")()(args.url));
    await attempt("XMLHttpRequest", () => new XMLHttpRequest());
    await attempt("WebSocket", () => new WebSocket(args.url));
    await attempt("std global", () => std.loadFile(args.text));
    await attempt("os global", () => os.exec(["touch", args.text + ".touched"]));
    await attempt("timer", () => setTimeout(() => {}, 1));
    return tried;
"#;

#[test]
fn the_script_has_no_file_process_or_network_access_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("secret.js");
    std::fs::write(&module, "export default 'SECRET-FROM-A-MODULE';").unwrap();
    let text = dir.path().join("secret.txt");
    std::fs::write(&text, "SECRET-FROM-A-FILE").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let args = serde_json::json!({
        "module": module,
        "text": text,
        "url": format!("http://{}/", listener.local_addr().unwrap()),
    });
    let (outcome, _) = run_with(ESCAPES, Some(args), |_| serde_json::Value::Null);
    let result: serde_json::Value = serde_json::from_str(&outcome.unwrap().result).unwrap();
    let tried = result.as_object().unwrap();
    assert_eq!(tried.len(), 14, "{result:#}");
    for (name, outcome) in tried {
        let outcome = outcome.as_str().unwrap();
        assert!(outcome.starts_with("refused: "), "{name}: {outcome}");
        assert!(!outcome.contains("SECRET"), "{name}: {outcome}");
    }
    // Nothing connected, and nothing was run.
    assert!(listener.accept().is_err());
    assert!(!dir.path().join("secret.txt.touched").exists());
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
    let (logs, mut said) = tokio::sync::mpsc::channel(LOG_QUEUE);
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

#[test]
fn a_script_that_floods_log_is_cut_by_the_host_whatever_it_replaces() {
    let (host, _asked, _reply) = idle_host();
    let (logs, mut said) = tokio::sync::mpsc::channel(LOG_QUEUE);
    let host = Host { logs, ..host };
    let limits = Limits {
        log_lines: 100,
        ..Limits::default()
    };
    // The prelude's own cut is `slice`, which the script replaces first; then it logs lines
    // longer than a line may be, far more of them than the budget.
    let script = "String.prototype.slice = function () { return this + this; };\n\
                  for (let i = 0; i < 20000; i++) log('x'.repeat(5000)); return 1;";
    let outcome = run("flood", script, None, limits, host).unwrap();
    assert_eq!(outcome.logs_dropped, 20000 - 100);
    let mut lines = Vec::new();
    while let Ok(line) = said.try_recv() {
        lines.push(line);
    }
    assert_eq!(lines.len(), 101, "{}", lines.len());
    assert!(
        lines[..100]
            .iter()
            .all(|l| l.chars().count() == LOG_LINE_CHARS)
    );
    assert_eq!(lines[100], LOG_CUT);
}

#[test]
fn a_full_queue_drops_and_counts_rather_than_waits() {
    let (host, _asked, _reply) = idle_host();
    let (logs, mut said) = tokio::sync::mpsc::channel(4);
    let host = Host { logs, ..host };
    let outcome = run(
        "busy",
        "for (let i = 0; i < 10; i++) log('line ' + i); return 1;",
        None,
        Limits::default(),
        host,
    )
    .unwrap();
    // The queue's last place is the cut line's.
    assert_eq!(outcome.logs_dropped, 7);
    let mut lines = Vec::new();
    while let Ok(line) = said.try_recv() {
        lines.push(line);
    }
    assert_eq!(lines, ["line 0", "line 1", "line 2"]);
}

/// CI's finding: under load the host read slowly, the queue was full when the budget ran out,
/// and the cut line was dropped with the rest, so nobody learned the log had been cut.
#[test]
fn the_cut_line_reaches_a_host_that_reads_nothing_meanwhile() {
    let (host, _asked, _reply) = idle_host();
    let (logs, mut said) = tokio::sync::mpsc::channel(4);
    let host = Host { logs, ..host };
    let limits = Limits {
        log_lines: 6,
        ..Limits::default()
    };
    let script = "for (let i = 0; i < 10; i++) log('line ' + i); return 1;";
    run("busy", script, None, limits, host).unwrap();
    let mut lines = Vec::new();
    while let Ok(line) = said.try_recv() {
        lines.push(line);
    }
    assert_eq!(lines, ["line 0", "line 1", "line 2", LOG_CUT]);
}

#[test]
fn a_result_serializer_replaced_by_the_script_cannot_pass_off_text_as_json() {
    let (outcome, _) = run_with(
        "JSON.stringify = () => 'not json at all {'; return {a: 1};",
        None,
        |_| serde_json::Value::Null,
    );
    let Err(WorkflowError::Failed(message)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.contains("not plain JSON data"), "{message}");
}

/// The red team's finding 5 after issue 47: the label and phase were cut only by the prelude's
/// `slice`, which a script can replace, and 16 MiB labels reached every event and the session
/// log. The host cuts them, whatever the script replaced.
#[test]
fn labels_and_phases_are_cut_by_the_host_whatever_the_script_replaced() {
    let script = r#"
        String.prototype.slice = function () { return this + ""; };
        String.prototype.split = function () { return [this + ""]; };
        const long = "L".repeat(100000);
        await agent("p", {label: long, phase: "P".repeat(100000)});
        phase("Q".repeat(100000));
        await agent(long);
        return 1;
    "#;
    let (outcome, calls) = run_with(script, None, |_| serde_json::Value::Null);
    assert_eq!(outcome.map(|f| f.result), Ok("1".into()));
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert_eq!(call.label.chars().count(), LABEL_CHARS, "{}", call.seq);
        assert_eq!(
            call.phase.as_ref().map(|p| p.chars().count()),
            Some(LABEL_CHARS)
        );
    }
    assert!(calls[0].phase.as_ref().unwrap().starts_with('P'));
    assert!(calls[1].phase.as_ref().unwrap().starts_with('Q'));
}

/// The prelude checks a prompt's length first, in the reference's words; the host refuses one
/// over the limit too, should anything call it past that check, and starts no agent.
#[test]
fn the_host_refuses_a_prompt_over_the_limit_itself() {
    let runtime = Runtime::new().unwrap();
    let context = Context::full(&runtime).unwrap();
    let (calls, mut asked) = tokio::sync::mpsc::unbounded_channel();
    context.with(|ctx| {
        let start = host_agent(
            &ctx,
            calls,
            object_schemas_only(),
            Rc::default(),
            Rc::default(),
            10,
        )
        .unwrap();
        let prompt = "é".repeat(MAX_PROMPT_UNITS + 1);
        let refused: rquickjs::Array = start
            .call((prompt, "label", None::<String>, None::<String>))
            .unwrap();
        let code: String = refused.get(0).unwrap();
        let message: String = refused.get(1).unwrap();
        assert_eq!(code, "INVALID_ARGUMENT");
        assert_eq!(
            message,
            "agent() prompt has 262145 characters, over the 262144 a prompt may have: put the \
             bulk in a file the agent reads"
        );
        let started: Value = start
            .call((
                "é".repeat(MAX_PROMPT_UNITS),
                "label",
                None::<String>,
                None::<String>,
            ))
            .unwrap();
        assert!(started.is_promise());
    });
    assert_eq!(
        asked.try_recv().unwrap().prompt.chars().count(),
        MAX_PROMPT_UNITS
    );
    assert!(asked.try_recv().is_err());
}
