//! The tools beyond files and the shell (todo_write, plan mode and exit_plan_mode), and which
//! tools a run offers (tool lists, reference rows).

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::dsh;

#[test]
fn todo_write_keeps_the_list_in_the_log_and_the_stream_across_a_resume() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "todo_write",
            json!({"todos": [
                {"content": "Read the parser", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"},
                {"content": "Add a test", "status": "pending"},
            ]}),
        ),
        Turn::text("done"),
        Turn::tool_call(
            "todo_write",
            json!({"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]}),
        ),
        Turn::text("again"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let todo: Vec<_> = events.iter().filter(|e| e["type"] == "todo").collect();
    assert_eq!(todo.len(), 1);
    assert_eq!(
        todo[0]["todos"],
        json!([
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Add a test", "status": "pending"},
        ])
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(
        result["result"],
        "Updated todo list: 1 pending, 1 in progress, 1 completed."
    );
    assert!(env.session_log().contains("\"type\":\"todo/write\""));
    // A resumed session: a refused list changes nothing, and the transcript still shows the
    // list the first run left.
    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    let out = env.run(dsh(), &["--json", "--session-id", &id, "more"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let refused = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(refused["status"], "error");
    assert_eq!(
        refused["result"],
        "Error: invalid todos: at most one task may be in_progress (got 2)"
    );
    // The resumed stream says at once which list the session starts from (and the refused
    // list changes nothing).
    let todos: Vec<_> = out
        .events()
        .into_iter()
        .filter(|e| e["type"] == "todo")
        .collect();
    assert_eq!(todos.len(), 1);
    assert_eq!(todos[0]["todos"][1]["content"], "Fix the bug");
    assert_eq!(out.events()[1]["type"], "todo");
    let shown = env.run(dsh(), &["sessions", "show", &id]);
    assert!(
        shown.stdout.contains("in_progress Fix the bug"),
        "{}",
        shown.stdout
    );
}

#[test]
fn plan_mode_runs_only_tools_that_change_nothing_and_ends_with_the_plan() {
    let plan = "# Fix the parser\n\n1. Change `parse` to accept tabs.\n2. Add a test.";
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("read", json!({"file_path": "a.txt"})),
            ("write", json!({"file_path": "b.txt", "content": "x"})),
            (
                "bash",
                json!({"command": "touch c.txt", "description": "try"}),
            ),
        ]),
        Turn::tool_call("exit_plan_mode", json!({"plan": "no heading"})),
        Turn::tool_call("exit_plan_mode", json!({"plan": plan})),
        Turn::text("never asked for"),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(
        dsh(),
        &["--json", "--permission-mode", "plan", "plan the fix"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let results: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert!(results[0]["result"].as_str().unwrap().contains("1: alpha"));
    assert_eq!(results[1]["status"], "error");
    assert_eq!(
        results[1]["error"],
        json!({"name": "PlanModeError", "code": "PLAN_MODE"})
    );
    assert!(
        results[1]["result"]
            .as_str()
            .unwrap()
            .starts_with("Error: write is not available in plan mode: it changes files"),
        "{}",
        results[1]["result"]
    );
    // bash runs, under a read-only sandbox.
    let bash = results[2]["result"].as_str().unwrap();
    assert!(
        bash.contains("[sandbox: file access denied under read-only mode]"),
        "{bash}"
    );
    assert!(!env.ws_path().join("b.txt").exists());
    assert!(!env.ws_path().join("c.txt").exists());
    assert_eq!(
        results[3]["result"],
        "Error: exit_plan_mode requires a non-empty markdown plan starting with a # heading"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["reason"], json!({"kind": "plan-submitted"}));
    assert_eq!(last["text"], plan);
    // The model was offered exit_plan_mode, and told the mode.
    let requests = env.server.requests();
    assert!(
        requests[0]
            .tool_names()
            .contains(&"exit_plan_mode".to_owned())
    );
    assert_eq!(requests.len(), 3, "the plan ended the turn");
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Sandbox: read-only."), "{system}");
    assert!(system.contains("Approval policy: never."), "{system}");
    // In text mode the plan is the answer on stdout.
    let env = TestEnv::new(vec![Turn::tool_call(
        "exit_plan_mode",
        json!({"plan": plan}),
    )]);
    let out = env.run(dsh(), &["--permission-mode", "plan", "plan it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim_end(), plan);
}

#[test]
fn outside_plan_mode_exit_plan_mode_is_not_offered_but_a_call_is_told_why() {
    let env = TestEnv::new(vec![Turn::tool_call(
        "exit_plan_mode",
        json!({"plan": "# A plan"}),
    )]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert!(
        !requests[0]
            .tool_names()
            .contains(&"exit_plan_mode".to_owned())
    );
    // The reference's refusal (it offers the tool only to refuse it), not `unknown tool`.
    assert_eq!(
        requests[1].tool_results(),
        ["Error: exit_plan_mode is only available in plan mode"]
    );
    // plan is a permission mode everywhere a mode is given.
    let out = env.run(dsh(), &["--dump-config", "--permission-mode", "plan"]);
    assert!(
        out.stdout.contains("sandbox.mode = \"plan\""),
        "{}",
        out.stdout
    );
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "plan")
            .arg("--dump-config"),
    );
    assert!(
        out.stdout
            .contains("approval.policy = \"never: plan mode asks for nothing wider\""),
        "{}",
        out.stdout
    );
}

#[test]
fn a_reviewer_that_cannot_change_files_is_one_flag() {
    let env = TestEnv::new(vec![
        Turn::tool_call("write", json!({"file_path": "a.txt", "content": "x"})),
        Turn::text("read only"),
    ]);
    let out = env.run(
        dsh(),
        &[
            "--disallowed-tools",
            "write,edit",
            "--disallowed-tools=bash",
            "review",
        ],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let offered = requests[0].tool_names();
    for withheld in ["write", "edit", "bash"] {
        assert!(!offered.contains(&withheld.to_owned()), "{offered:?}");
    }
    assert!(offered.contains(&"read".to_owned()));
    assert_eq!(
        requests[1].tool_results(),
        vec!["Error: unknown tool \"write\"".to_owned()]
    );
    assert!(!env.ws_path().join("a.txt").exists());
}

#[test]
fn deny_lists_add_up_across_layers_and_an_allow_list_narrows_them() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("ok")]);
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tools]\ndeny = [\"bash\"]\n",
    )
    .unwrap();
    env.write(
        "p.toml",
        "[tools]\ndeny = [\"job_*\"]\nallow = [\"read\", \"grep\", \"bash\", \"job_list\"]\n",
    );
    let out = env.run(dsh(), &["--patch", "p.toml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests()[0].tool_names(), vec!["grep", "read"]);
    // The flag replaces the files' allow list; the deny lists still hold.
    let out = env.run(dsh(), &["--patch", "p.toml", "--tools", "glob,bash", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests()[1].tool_names(), vec!["glob"]);
    let dump = env.run(dsh(), &["--patch", "p.toml", "--dump-config"]);
    let deny = dump
        .stdout
        .lines()
        .find(|l| l.starts_with("tools.deny = "))
        .unwrap();
    assert!(deny.contains("[\"bash\", \"job_*\"]"), "{deny}");
    assert!(
        deny.contains("config.toml") && deny.contains("p.toml"),
        "{deny}"
    );
    // A name that covers no tool is refused before anything is sent.
    let out = env.run(dsh(), &["--disallowed-tools", "wirte", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("the tool list names \"wirte\", which is no tool dsh has"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.requests().len(), 2);
}

#[test]
fn an_mcp_name_that_names_no_server_of_the_run_is_refused() {
    let env = TestEnv::new(vec![]);
    let out = env.run(dsh(), &["--tools", "read,mcp__github__*", "go"]);
    assert_eq!(out.code(), Some(1));
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "dsh: the tool list names \"mcp__github__*\", which covers no tool: this run has \
             no MCP server (declare one under [mcp.servers.<name>]); name a tool as \
             mcp__<server>__<tool> (a trailing * covers several) or a built-in tool (\
             ask_user_question, bash,"
        ),
        "{}",
        out.stderr
    );
    // With servers, the message names them; a server that is there passes the check (and is
    // refused only when it cannot start).
    env.write(
        "servers.toml",
        "[mcp.servers.fs]\ncommand = \"dsh-test-no-such-server\"\n\
         [mcp.servers.web]\ncommand = \"dsh-test-no-such-server\"\n",
    );
    let out = env.run(
        dsh(),
        &[
            "--patch",
            "servers.toml",
            "--disallowed-tools",
            "mcp__gh__*",
            "go",
        ],
    );
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "names \"mcp__gh__*\", which covers no tool: this run's MCP servers are fs, web;"
        ),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty());
}

#[test]
fn reference_rows_switch_tool_parts_off() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "true", "description": "bg", "run_in_background": true}),
        ),
        Turn::text("ok"),
    ]);
    env.write(
        "rows.yml",
        "- id: tool-jobs\n  disabled: true\n- id: tool-todo\n  disabled: true\n",
    );
    let out = env.run(dsh(), &["--patch", "rows.yml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let offered = requests[0].tool_names();
    for withheld in ["job_output", "job_list", "job_kill", "todo_write"] {
        assert!(!offered.contains(&withheld.to_owned()), "{offered:?}");
    }
    // Without the job tools no job is started: the reference's text.
    assert_eq!(
        requests[1].tool_results(),
        vec![
            "Error: background jobs unavailable: no job controller serves this agent (load \
             @deepseek-ai/dsh-tool-jobs in its composition)"
                .to_owned()
        ]
    );
}

#[test]
fn with_no_one_to_answer_a_question_is_answered_at_once() {
    let question = json!({"questions": [{"id": "db", "question": "Which database?",
        "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite", "extra": 1}]}]});
    let env = TestEnv::new(vec![
        Turn::tool_call("ask_user_question", question),
        Turn::tool_call("ask_user_question", json!({"questions": []})),
        Turn::text("assumed Postgres"),
    ]);
    let out = env.run(dsh(), &["--json", "pick a database"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results: Vec<_> = out
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(
        results[0]["error"],
        json!({"name": "UserQuestionError", "code": "NO_PROVIDER"})
    );
    assert!(
        results[0]["result"]
            .as_str()
            .unwrap()
            .starts_with("Error: no user-questions provider is registered: no user is present"),
        "{}",
        results[0]["result"]
    );
    assert_eq!(
        results[1]["result"],
        "Error: ask_user_question requires at least one question"
    );
    // The reference's schema.
    let schema = env.server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "ask_user_question")
        .unwrap()["function"]["parameters"]
        .clone();
    let item = &schema["properties"]["questions"]["items"];
    assert_eq!(item["required"], json!(["id", "question"]));
    assert_eq!(item["additionalProperties"], true);
    assert_eq!(
        item["properties"]["options"]["items"]["required"],
        json!(["label"])
    );
    assert_eq!(item["properties"]["multi_select"]["type"], "boolean");
}

/// A schema without its prose, as the conformance runner compares schemas.
fn without_descriptions(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(key, _)| *key != "description")
            .map(|(key, value)| (key.clone(), without_descriptions(value)))
            .collect(),
        serde_json::Value::Array(items) => items.iter().map(without_descriptions).collect(),
        other => other.clone(),
    }
}

/// The schemas of the tools the recorded corpus does not hold are the reference's (from its
/// generated tool catalog), descriptions aside.
#[test]
fn the_new_tools_have_the_reference_s_schemas() {
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/reference-tools.json")).unwrap();
    let env = TestEnv::new(vec![Turn::text("done")]);
    // web_search is offered only with a backend that can serve it (nothing listens there:
    // only the schema is compared).
    env.write(
        ".dsh/config.toml",
        "[web.search]\nprovider = \"searxng\"\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let out = env.run(dsh(), &["--permission-mode", "plan", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let offered = env.server.requests()[0].body["tools"].clone();
    for tool in reference["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let ours = offered
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not offered"));
        assert_eq!(
            without_descriptions(&ours["function"]["parameters"]),
            without_descriptions(&tool["parameters"]),
            "{name}"
        );
    }
}

#[test]
fn the_minimal_preset_offers_bash_and_the_editor_and_tool_lists_replace_it() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("ok")]);
    let out = env.run(dsh(), &["--preset", "minimal", "hi"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        env.server.requests()[0].tool_names(),
        ["bash", "str_replace_editor"]
    );
    let out = env.run(
        dsh(),
        &["--preset", "minimal", "--tools", "read,bash", "hi"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests()[1].tool_names(), ["bash", "read"]);

    let dumped = env
        .run(dsh(), &["--preset", "minimal", "--dump-config"])
        .stdout;
    let row = |key: &str| {
        dumped
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(row("preset").ends_with("# --preset"), "{dumped}");
    assert!(row("tools.allow").contains(r#"["bash", "str_replace_editor"]"#));
    assert!(row("tools.allow").ends_with("# preset minimal"), "{dumped}");
    assert!(row("tools.str_replace_editor").ends_with("# preset minimal"));

    let out = env.run(dsh(), &["--preset", "tiny", "hi"]);
    assert_eq!(out.code(), Some(1), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("unknown preset \"tiny\": use standard or minimal"),
        "{}",
        out.stderr
    );
}

#[test]
fn present_hands_the_user_a_file_in_the_stream_on_stderr_and_in_the_log() {
    let script = || {
        vec![
            Turn::tool_call(
                "write",
                json!({"file_path": "report.md", "content": "# Report\n"}),
            ),
            Turn::tool_call(
                "present",
                json!({"title": "Audit report", "path": "report.md", "summary": "Two findings."}),
            ),
            Turn::text("Done: see the report."),
        ]
    };
    let env = TestEnv::new(script());
    let out = env.run(dsh(), &["--json", "audit"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let path = env.ws_path().join("report.md").display().to_string();
    let shown: Vec<_> = out
        .events()
        .into_iter()
        .filter(|e| e["type"] == "present")
        .collect();
    assert_eq!(
        shown,
        [
            json!({"type": "present", "title": "Audit report", "path": path, "summary": "Two findings."})
        ]
    );
    assert!(env.session_log().contains("\"type\":\"artifact/present\""));

    // As text: the answer on stdout, the presentation on stderr for the person watching.
    let env = TestEnv::new(script());
    let out = env.run(dsh(), &["audit"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim_end(), "Done: see the report.");
    let path = env.ws_path().join("report.md").display().to_string();
    assert!(
        out.stderr
            .contains(&format!("dsh: presented Audit report: {path}")),
        "{}",
        out.stderr
    );
}
