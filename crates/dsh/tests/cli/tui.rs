//! The terminal UI, as a person uses it: the real binary in tmux (80x24) against the scripted
//! model server, keys typed with `send-keys`, the screen read with `capture-pane`.

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// `dsh args...` in the workspace of `env`, on an 80x24 terminal.
fn open(env: &TestEnv, args: &[&str]) -> Tmux {
    let bin = dsh().to_str().unwrap();
    let mut argv = vec![bin];
    argv.extend_from_slice(args);
    Tmux::start(&argv, env.ws.path(), &env.variables(), 80, 24)
}

/// Waits until `needle` is shown and the turn that showed it has ended (no spinner line).
fn wait_turn_end(ui: &Tmux, needle: &str) -> String {
    ui.wait_until(&format!("{needle:?} and the end of the turn"), |s| {
        s.contains(needle) && !s.contains("Ctrl-C interrupts")
    })
}

/// The composer's first row: the line after the last rule on the visible screen.
fn composer(ui: &Tmux) -> String {
    let screen = ui.screen();
    let lines: Vec<&str> = screen.lines().collect();
    let rule = lines
        .iter()
        .rposition(|l| !l.is_empty() && l.chars().all(|c| c == '─'))
        .expect("a rule above the composer");
    lines.get(rule + 1).copied().unwrap_or_default().to_owned()
}

/// The status line: the last row with text.
fn footer(ui: &Tmux) -> String {
    let screen = ui.screen();
    let last = screen.lines().rev().find(|l| !l.is_empty());
    last.unwrap_or_default().to_owned()
}

/// The user messages of a request, as the model was sent them.
fn user_texts(request: &dsh_testkit::Request) -> Vec<String> {
    request
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn log_records(env: &TestEnv) -> Vec<Value> {
    env.session_logs()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[test]
fn a_two_turn_conversation_then_ctrl_d() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::text("# Hello\n\nI can help with **that**."),
        Turn::text("Second answer, with `code`."),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("first question");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "I can help with that.");
    ui.type_text("and a second one");
    ui.press(&["Enter"]);
    let screen = wait_turn_end(&ui, "Second answer, with code.");
    assert!(screen.contains("› first question"), "{screen}");
    assert!(screen.contains("› and a second one"), "{screen}");
    assert_eq!(composer(&ui), "›");
    // Up brings back the last message sent, then the one before.
    ui.press(&["Up"]);
    ui.wait_until("the last message in the composer", |_| {
        composer(&ui) == "› and a second one"
    });
    ui.press(&["Up"]);
    ui.wait_until("the first message in the composer", |_| {
        composer(&ui) == "› first question"
    });
    ui.press(&["C-u", "C-d"]);
    assert_eq!(ui.wait_exit(), 0);
    let screen = ui.everything();
    assert!(
        screen.contains("  resume: dsh --session-id session-"),
        "{screen}"
    );

    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let second = user_texts(&requests[1]);
    assert!(
        second.iter().any(|t| t.contains("first question")),
        "{second:?}"
    );
    assert!(
        second.iter().any(|t| t.contains("and a second one")),
        "{second:?}"
    );
    let ends = log_records(&env)
        .iter()
        .filter(|r| r["type"] == "turn/end" && r["data"]["reason"]["kind"] == "completed")
        .count();
    assert_eq!(ends, 2);
}

#[test]
fn an_escalation_allowed_once_and_one_denied_with_a_reason() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::escalated("echo allowed-run"),
        Turn::text("ran it"),
        Turn::escalated("echo denied-run"),
        Turn::text("understood"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("do it");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("Allow bash?");
    assert!(
        screen.contains("escalate sandbox to danger-full-access: needs the whole machine"),
        "{screen}"
    );
    // The dialog opens on Deny; a number chooses, and only Enter answers.
    assert!(screen.contains("› 3. Deny, and say why"), "{screen}");
    ui.press(&["1"]);
    let screen = ui.wait_for("› 1. Allow once");
    assert!(screen.contains("Allow bash?"), "{screen}");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "ran it");
    assert!(ui.everything().contains("allowed-run"));

    ui.type_text("again");
    ui.press(&["Enter"]);
    ui.wait_for("› 3. Deny, and say why");
    ui.press(&["Enter"]);
    ui.wait_for("Why not?");
    ui.type_text("not on this machine");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "understood");

    let requests = env.server.requests();
    let allowed = requests[1].tool_results();
    assert!(allowed[0].contains("allowed-run"), "{allowed:?}");
    let denied = requests[3].tool_results();
    assert!(
        denied.last().unwrap().contains(
            "the user rejected escalating this command to \"danger-full-access\"; the user \
             said: not on this machine"
        ),
        "{denied:?}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_at_mention_completes_a_workspace_file() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("read it")]);
    env.write("src/hello_world.rs", "fn main() {}\n");
    env.write("target/hello_world.rs", "");
    env.write(".gitignore", "target/\n");
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("look at @hellwor");
    let screen = ui.wait_for("@src/hello_world.rs");
    assert!(
        !screen.contains("target/hello_world"),
        "an ignored file is offered: {screen}"
    );
    ui.press(&["Tab"]);
    ui.wait_for("› look at @src/hello_world.rs");
    ui.press(&["Enter"]);
    ui.wait_for("read it");
    let sent = user_texts(&env.server.requests()[0]);
    assert!(
        sent.iter()
            .any(|t| t.contains("look at @src/hello_world.rs")),
        "{sent:?}"
    );
}

#[test]
fn ctrl_c_interrupts_a_turn_and_the_session_goes_on() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("after the interruption")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("never answered");
    ui.press(&["Enter"]);
    ui.wait_for("thinking");
    assert!(env.server.wait_for_requests(1, dsh_testkit::tmux::PATIENCE));
    ui.press(&["C-c"]);
    ui.wait_for("■ interrupted");
    // The interrupt is over: the status line no longer says it is under way.
    ui.wait_until("the status line past the interrupt", |_| {
        footer(&ui) == "press Ctrl-C again (or Ctrl-D) to quit"
    });
    ui.type_text("next");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "after the interruption");
    let aborted = log_records(&env)
        .into_iter()
        .find(|r| r["type"] == "turn/end" && r["data"]["reason"]["kind"] == "aborted")
        .expect("an aborted turn in the log");
    assert_eq!(aborted["data"]["reason"]["reason"]["kind"], "user");
    // Ctrl-C on an empty composer asks to be pressed again; the second quits.
    ui.press(&["C-c"]);
    ui.wait_for("press Ctrl-C again");
    ui.press(&["C-c"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_session_is_resumed_from_the_picker_with_its_history() {
    if !Tmux::available() {
        return;
    }
    // The terminal UI titles a session after its first turn: the picker shows the title.
    let server = dsh_testkit::ScriptedServer::start(vec![
        Turn::text("remembered answer"),
        Turn::text("continued"),
    ])
    .with_titles(vec![Turn::text("Recall the first task")]);
    let env = TestEnv::with_server(server);
    let first = open(&env, &["the first task"]);
    wait_turn_end(&first, "remembered answer");
    first.press(&["C-d"]);
    assert_eq!(first.wait_exit(), 0);
    assert_eq!(env.server.title_requests().len(), 1);

    let ui = open(&env, &["resume"]);
    let screen = ui.wait_for("Resume a session");
    assert!(screen.contains("Recall the first task"), "{screen}");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("resumed session");
    assert!(screen.contains("› the first task"), "{screen}");
    assert!(screen.contains("remembered answer"), "{screen}");
    ui.type_text("go on");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "continued");
    let sent = user_texts(&env.server.requests()[1]);
    assert!(
        sent.iter().any(|t| t.contains("the first task")),
        "{sent:?}"
    );
    assert!(sent.iter().any(|t| t.contains("go on")), "{sent:?}");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn the_models_questions_are_answered_in_a_dialog() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "ask_user_question",
            json!({"questions": [{
                "id": "db",
                "question": "Which database?",
                "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "one file"}]
            }]}),
        ),
        Turn::text("SQLite it is"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("set up storage");
    ui.press(&["Enter"]);
    // The call's title names the question too: wait for the dialog's options.
    let screen = ui.wait_for("2. SQLite — one file");
    assert!(screen.contains("Which database?"), "{screen}");
    ui.press(&["2"]);
    let screen = ui.wait_for("› 2. SQLite");
    assert!(
        screen.contains("Which database?"),
        "2 answered at once: {screen}"
    );
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "SQLite it is");
    let results = env.server.requests()[1].tool_results();
    assert_eq!(
        results,
        [r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#]
    );
}

#[test]
fn a_resize_redraws_the_live_area() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("fine at any width")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.resize(60, 20);
    ui.type_text("narrow");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "fine at any width");
    ui.resize(100, 30);
    // The footer is drawn again at the new width, under the transcript: the turn's 110
    // tokens and the 45 of the session's title request (the scripted server's own title).
    ui.wait_until("a redrawn footer", |s| {
        s.lines()
            .any(|l| l.starts_with("deepseek-v4-flash · workspace-write · 155 tokens · $0.0000"))
            && s.contains(&"─".repeat(100))
    });
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_commands_output_shows_while_it_runs() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({
                "command": "echo live-line; until [ -f release ]; do sleep 0.02; done; echo last-line",
                "description": "wait for the test",
            }),
        ),
        Turn::text("finished"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("run it");
    ui.press(&["Enter"]);
    // The first line is on screen while the command still waits for the file.
    let screen = ui.wait_for("│ live-line");
    assert!(!screen.contains("│ last-line"), "{screen}");
    std::fs::write(env.ws.path().join("release"), "").unwrap();
    let screen = wait_turn_end(&ui, "finished");
    assert!(screen.contains("└ exit 0"), "{screen}");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn ctrl_c_keeps_the_commands_output_and_the_queued_message_waits_in_the_composer() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({
                "command": "echo watched-line; until [ -f release ]; do sleep 0.02; done",
                "description": "wait for the test",
            }),
        ),
        Turn::text("the queued message was sent"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("run it");
    ui.press(&["Enter"]);
    ui.wait_for("│ watched-line");
    // Tab queues it for after the turn (Enter would give it to the turn's next step).
    ui.type_text("queued message");
    ui.press(&["Tab"]);
    ui.wait_for("queued: queued message");
    ui.press(&["C-c"]);
    let screen = ui.wait_for("■ interrupted");
    // What was watched stays, above the call's error.
    let watched = screen.find("│ watched-line").expect("the output kept");
    let error = screen
        .find("✗ Error: tool call aborted")
        .expect("the call's error");
    assert!(watched < error, "{screen}");
    // The queued message was not sent: it waits in the composer.
    ui.wait_until("the queued message in the composer", |_| {
        composer(&ui) == "› queued message"
    });
    assert_eq!(env.server.requests().len(), 1);
    // The model was told what the reference tells it of an aborted call.
    let records = log_records(&env);
    let result = records
        .iter()
        .find(|r| r["type"] == "tool/result")
        .expect("the call's result");
    assert_eq!(
        result["data"]["message"]["content"][0]["content"][0]["text"],
        "Error: tool call aborted"
    );
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "the queued message was sent");
    let sent = user_texts(&env.server.requests()[1]);
    assert_eq!(sent.last().map(String::as_str), Some("queued message"));
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_pasted_text_keeps_its_lines_and_waits_for_enter() {
    if !Tmux::available() {
        return;
    }
    // A second answer is scripted so that a message sent by the paste would be answered too,
    // and counted.
    let env = TestEnv::new(vec![
        Turn::text("got both lines"),
        Turn::text("a second message was sent"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.paste("line one\nline two");
    // The frame that shows the paste in the composer would show a turn started by it too.
    let screen = ui.wait_until("both pasted lines in the composer", |s| {
        s.contains("─\n› line one\n  line two")
    });
    assert!(
        !screen.contains("Ctrl-C interrupts"),
        "a turn started on the paste: {screen}"
    );
    assert_eq!(env.server.requests().len(), 0, "a pasted newline sent");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "got both lines");
    // Once the turn is over, whatever the paste had sent or queued is sent too.
    let screen = ui.wait_until("the composer empty and idle", |s| {
        s.contains("─\n›\n") && !s.contains("queued:") && !s.contains("Ctrl-C interrupts")
    });
    let requests = env.server.requests();
    assert_eq!(
        requests.len(),
        1,
        "one message, sent by Enter, not by the paste: {screen}"
    );
    let sent = user_texts(&requests[0]);
    assert!(
        sent.iter().any(|t| t.contains("line one\nline two")),
        "{sent:?}"
    );
    let messages = log_records(&env)
        .iter()
        .filter(|r| r["type"] == "user/message")
        .count();
    assert_eq!(messages, 1, "one user message in the log");
}

#[test]
fn quitting_mid_turn_closes_the_log_and_the_session_reopens_by_id() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("back again")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("never answered");
    ui.press(&["Enter"]);
    assert!(env.server.wait_for_requests(1, dsh_testkit::tmux::PATIENCE));
    ui.press(&["C-c"]);
    ui.press(&["C-c"]);
    assert_eq!(ui.wait_exit(), 0);
    let records = log_records(&env);
    let last = records.last().expect("a log");
    assert_eq!(
        last["type"], "turn/end",
        "the log ends with the turn closed"
    );
    assert_eq!(last["data"]["reason"]["reason"]["kind"], "user");
    assert_eq!(records[0]["type"], "session");
    let id = records[0]["id"].as_str().unwrap().to_owned();
    assert!(
        ui.everything()
            .contains(&format!("resume: dsh --session-id {id}"))
    );

    let again = open(&env, &["--session-id", &id]);
    let screen = again.wait_for("resumed session");
    assert!(screen.contains("› never answered"), "{screen}");
    assert!(screen.contains("■ interrupted"), "{screen}");
    again.type_text("try again");
    again.press(&["Enter"]);
    wait_turn_end(&again, "back again");
}

#[test]
fn a_prompt_saved_while_the_ui_runs_is_a_command_at_once() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("reviewed")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    env.write(".dsh/prompts/review.md", "Review $ARGUMENTS for errors.\n");
    ui.type_text("/review src/lib.rs");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "reviewed");
    let sent = user_texts(&env.server.requests()[0]);
    assert!(
        sent.iter()
            .any(|t| t.contains("Review src/lib.rs for errors.")),
        "{sent:?}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn tab_completes_a_command_and_enter_runs_the_one_the_hint_names() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("/st");
    ui.wait_for("/status  session, model");
    ui.press(&["Tab"]);
    ui.wait_until("the completed command in the composer", |_| {
        composer(&ui) == "› /status"
    });
    ui.press(&["Enter"]);
    ui.wait_for("allowed for the session");
    ui.type_text("/st");
    ui.press(&["Enter"]);
    ui.wait_until("a second /status", |s| {
        s.matches("allowed for the session").count() == 2
    });
    assert!(!ui.everything().contains("unknown command"));
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn compact_on_a_short_session_sends_no_request() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("hello"), Turn::text("## Goal\n- greet")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("hi");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "hello");
    ui.type_text("/compact");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("nothing to compact yet");
    assert!(screen.contains("no request sent"), "{screen}");
    // The note comes when the compaction is over: no request can follow it.
    assert_eq!(env.server.requests().len(), 1, "a summary was asked for");
    assert!(
        !log_records(&env)
            .iter()
            .any(|r| r["type"] == "compaction/summary")
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn one_compact_makes_one_summary_request() {
    if !Tmux::available() {
        return;
    }
    // Four long answers (about 600 tokens each) and a short last one: enough for a summary
    // that several rounds of halving would have made again and again.
    let long = |n: usize| Turn::text(&format!("answer {n}: {}", "some words here ".repeat(150)));
    let env = TestEnv::new(vec![
        long(1),
        long(2),
        long(3),
        long(4),
        Turn::text("the last answer"),
        Turn::text("## Goal\n- answer five questions\n## Next\n- (none)"),
        Turn::text("## Goal\n- a second summary"),
        Turn::text("## Goal\n- a third summary"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    for n in 1..=5 {
        ui.type_text(&format!("question {n}"));
        ui.press(&["Enter"]);
        let answer = if n == 5 {
            "the last answer".to_owned()
        } else {
            format!("answer {n}:")
        };
        wait_turn_end(&ui, &answer);
    }
    assert_eq!(env.server.requests().len(), 5);
    ui.type_text("/compact");
    ui.press(&["Enter"]);
    // The busy line goes when the compaction is over: no request can follow it.
    let screen = ui.wait_until("the compaction done", |s| {
        s.contains("history compacted (manual)") && !s.contains("compacting the history")
    });
    let requests = env.server.requests();
    assert_eq!(requests.len(), 6, "one summary request: {screen}");
    let summaries: Vec<Value> = log_records(&env)
        .into_iter()
        .filter(|r| r["type"] == "compaction/summary")
        .collect();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert_eq!(summaries[0]["data"]["reason"], "manual");
    // Everything but the last exchange went into the summary.
    let asked = user_texts(&requests[5]);
    assert!(asked.iter().any(|t| t.contains("question 5")), "{asked:?}");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_failed_resume_leaves_no_stale_status() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![]);
    let ui = open(&env, &["--session-id", "session-nonexistent"]);
    ui.wait_for("/new starts a new session, /resume picks another");
    ui.wait_until("the status line saying no session is open", |_| {
        footer(&ui) == "no session is open: /new starts one, /resume picks one"
    });
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_mistyped_model_or_session_leaves_the_open_session_as_it_was() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("first answer"), Turn::text("still here")]);
    // A route whose key is missing: its settings load, and the run cannot open.
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.keyless]\nkind = \"openai-completions\"\n\
         base_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"DSH_TEST_NO_SUCH_KEY\"\n",
    )
    .unwrap();
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("hello");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "first answer");
    let idle = footer(&ui);
    let commands = [
        "/model nosuch/x",
        "/model keyless/m",
        "/resume session-nonexistent",
    ];
    for (n, command) in commands.iter().enumerate() {
        ui.type_text(command);
        ui.press(&["Enter"]);
        let screen = ui.wait_until(&format!("{command} refused"), |s| {
            s.matches("· the session open goes on as it was").count() == n + 1
        });
        assert!(!screen.contains("no session is open"), "{screen}");
        ui.wait_until("the status line as it was", |_| footer(&ui) == idle);
    }
    ui.type_text("go on");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "still here");
    let sent = user_texts(&env.server.requests()[1]);
    assert!(sent.iter().any(|t| t.contains("hello")), "{sent:?}");
    let sessions = log_records(&env)
        .iter()
        .filter(|r| r["type"] == "session")
        .count();
    assert_eq!(sessions, 1, "one session throughout");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn permissions_switches_the_mode_between_turns_and_the_session_keeps_it() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("first answer")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("hello");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "first answer");
    ui.type_text("/permissions read-only");
    ui.press(&["Enter"]);
    ui.wait_until("the status line naming the new mode", |_| {
        footer(&ui).contains("· read-only ·")
    });
    let modes: Vec<Value> = log_records(&env)
        .into_iter()
        .filter(|r| r["type"] == "permission/mode")
        .collect();
    assert_eq!(modes.len(), 2, "{modes:?}");
    assert_eq!(modes[1]["data"]["mode"], "read-only");
    // `/plan` is plan mode.
    ui.type_text("/plan");
    ui.press(&["Enter"]);
    ui.wait_until("the status line naming plan mode", |_| {
        footer(&ui).contains("· plan ·")
    });
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_plan_is_read_approved_and_carried_out_and_the_footer_follows_the_mode() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "exit_plan_mode",
            json!({"plan": "# Marker plan\n\n- write **done.txt**"}),
        ),
        Turn::tool_call(
            "write",
            json!({"file_path": "done.txt", "content": "done\n"}),
        ),
        Turn::text("Carried out the plan."),
    ]);
    let ui = open(&env, &["--permission-mode", "plan"]);
    ui.wait_for("Type a message");
    assert!(footer(&ui).contains(" · plan · "), "{}", footer(&ui));
    ui.type_text("plan a marker");
    ui.press(&["Enter"]);
    // The plan is shown whole, as markdown, above the question (the call's line and the
    // question come by different channels: wait for both).
    let screen = ui.wait_until("the plan and the question", |s| {
        s.contains("1. Carry it out (workspace-write)") && s.contains("• write done.txt")
    });
    assert!(screen.contains("Marker plan"), "{screen}");
    assert!(screen.contains("• write done.txt"), "{screen}");
    ui.press(&["1", "Enter"]);
    wait_turn_end(&ui, "Carried out the plan.");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("done.txt")).unwrap(),
        "done\n"
    );
    ui.wait_until("the footer in the mode picked", |_| {
        footer(&ui).contains(" · workspace-write · ")
    });
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn rewind_picks_a_turn_shows_what_changes_and_takes_files_and_conversation_back() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call("write", json!({"file_path": "a.txt", "content": "first\n"})),
        Turn::text("wrote a"),
        Turn::tool_call(
            "write",
            json!({"file_path": "b.txt", "content": "second\n"}),
        ),
        Turn::text("wrote b"),
        Turn::text("fresh start"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("make a");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "wrote a");
    ui.type_text("make b");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "wrote b");
    ui.type_text("/rewind");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("Rewind to the start of a turn");
    assert!(
        screen.contains("› turn 2 · make b · 1 files changed"),
        "{screen}"
    );
    ui.press(&["Up"]);
    ui.press(&["Enter"]);
    let screen = ui.wait_for("Rewind to the start of turn 1?");
    assert!(screen.contains("remove      a.txt"), "{screen}");
    assert!(screen.contains("remove      b.txt"), "{screen}");
    assert!(env.ws.path().join("b.txt").exists());
    // A number chooses what is taken back; only Enter rewinds.
    ui.press(&["3"]);
    let screen = ui.wait_for("› 3. conversation only");
    assert!(
        screen.contains("Rewind to the start of turn 1?"),
        "{screen}"
    );
    assert!(env.ws.path().join("b.txt").exists());
    ui.press(&["1", "Enter"]);
    ui.wait_for("↶ rewound files and conversation to before turn 1");
    assert!(!env.ws.path().join("a.txt").exists());
    assert!(!env.ws.path().join("b.txt").exists());
    ui.type_text("again");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "fresh start");
    let sent = user_texts(&env.server.requests().pop().unwrap());
    assert_eq!(sent.last().map(String::as_str), Some("again"));
    assert!(!sent.iter().any(|t| t.contains("make a")), "{sent:?}");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_auto_review_denial_asks_and_the_user_runs_the_call_anyway() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo ran > ran.txt", "description": "write a marker"}),
        ),
        Turn::text(r#"{"decision":"deny","reason":"writes a file nobody asked for"}"#),
        Turn::text("it ran after all"),
    ]);
    let ui = open(&env, &["--permission-mode", "auto"]);
    ui.wait_for("Type a message");
    assert!(footer(&ui).contains(" · auto · "), "{}", footer(&ui));
    ui.type_text("mark it");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("2. Deny, and say why");
    assert!(
        screen.contains("bash wants to run this call, which auto review denied: writes a file"),
        "{screen}"
    );
    assert!(!screen.contains("for this session"), "{screen}");
    ui.press(&["1", "Enter"]);
    let screen = wait_turn_end(&ui, "it ran after all");
    assert!(
        screen.contains("⚖ auto review denied, run anyway by you: writes a file nobody asked for"),
        "{screen}"
    );
    assert!(env.ws.path().join("ran.txt").exists());
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_auto_review_denial_is_never_overridden_by_a_number_or_a_stray_enter() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo ran > ran.txt", "description": "write a marker"}),
        ),
        Turn::text(r#"{"decision":"deny","reason":"writes a file nobody asked for"}"#),
        Turn::text("the denial stands"),
    ]);
    let ui = open(&env, &["--permission-mode", "auto"]);
    ui.wait_for("Type a message");
    ui.type_text("mark it");
    ui.press(&["Enter"]);
    // The override opens on Deny.
    let screen = ui.wait_for("which auto review denied");
    assert!(screen.contains("› 2. Deny, and say why"), "{screen}");
    // 1 only chooses Allow once: the call does not run until Enter.
    ui.press(&["1"]);
    let screen = ui.wait_for("› 1. Allow once");
    assert!(screen.contains("Allow bash?"), "{screen}");
    assert!(!env.ws.path().join("ran.txt").exists());
    ui.press(&["2"]);
    ui.wait_for("› 2. Deny, and say why");
    ui.press(&["Enter"]);
    ui.wait_for("Why not?");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "the denial stands");
    assert!(!env.ws.path().join("ran.txt").exists());
    let results = env.server.requests()[2].tool_results();
    assert!(
        results[0].contains("writes a file nobody asked for"),
        "{results:?}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_mcp_servers_question_is_a_form_filled_in_and_sent() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__asking__sign_up", json!({})),
        Turn::text("signed up"),
    ]);
    env.write(
        ".dsh/config.toml",
        &format!(
            "[mcp.servers.asking]\ncommand = \"python3\"\nargs = [\"-c\", '''{}''']\n",
            dsh_testkit::mcp::ASKING_SERVER
        ),
    );
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("sign me up");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("MCP server \"asking\" asks");
    assert!(screen.contains("Who are you?"), "{screen}");
    assert!(screen.contains("name (text): John Doe"), "{screen}");
    // The age comes filled with its default, 30: the person types over it.
    ui.press(&["Down", "BSpace", "BSpace"]);
    ui.type_text("41");
    ui.press(&["Down", "Right", "Down", "Down"]);
    ui.wait_for("› Submit");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "signed up");
    let result: Value = serde_json::from_str(&env.server.requests()[1].tool_results()[0]).unwrap();
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"name": "John Doe", "age": 41, "status": "pending", "verified": true})
    );
}

#[test]
fn a_server_that_wants_a_sign_in_says_so_with_the_command() {
    if !Tmux::available() {
        return;
    }
    let auth = crate::mcp_oauth::AuthServer::start(3600);
    let env = TestEnv::new(vec![Turn::text("fine")]);
    env.write(
        ".dsh/config.toml",
        &format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\n", auth.base),
    );
    let ui = open(&env, &[]);
    // The notice wraps at 80 columns.
    let screen = ui.wait_for("needs a sign-in: run `dsh mcp");
    assert!(screen.contains("login docs`"), "{screen}");
}

/// The script of issue 47's flood: logs 4,000 characters a line, without end, for as long as
/// its time limit lets it.
pub(crate) fn flooding_workflow() -> Turn {
    Turn::tool_call(
        "workflow",
        json!({
            "script": "for (;;) log('x'.repeat(4000));",
            "meta": {"name": "flood", "description": "Logs without end."},
        }),
    )
}

/// What the flood runs under: a workflow's time limit of 3 s.
pub(crate) const FLOOD_CONFIG: &str = "[workflows]\ntimeout_ms = 3000\n";

#[test]
fn a_workflow_that_logs_without_end_leaves_the_ui_small() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![flooding_workflow(), Turn::text("flood over")]);
    env.write(".dsh/config.toml", FLOOD_CONFIG);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("flood");
    ui.press(&["Enter"]);
    let screen = wait_turn_end(&ui, "flood over");
    assert!(screen.contains("time limit"), "{screen}");
    let peak = dsh_testkit::peak_rss_mib(ui.program_pid());
    assert!(peak < 100, "dsh held {peak} MiB at its peak");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
    dsh_testkit::fault_matrix(
        "attack",
        "a workflow logs 4,000 characters a line without end (terminal UI)",
        "dsh stays under 100 MiB: lines cut, the log budgeted, the queue bounded",
    );
}

/// The id of the one session `env`'s home holds.
fn session_id(env: &TestEnv) -> String {
    let records = log_records(env);
    let session = records.iter().find(|r| r["type"] == "session");
    session.expect("a session in the log")["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_resumed_session_shows_the_mode_it_runs_under_every_way_it_is_resumed() {
    if !Tmux::available() {
        return;
    }
    for mode in ["danger-full-access", "read-only"] {
        let env = TestEnv::new(vec![Turn::text("saved")]);
        let ui = open(&env, &[]);
        ui.wait_for("Type a message");
        ui.type_text("hello");
        ui.press(&["Enter"]);
        wait_turn_end(&ui, "saved");
        ui.type_text(&format!("/permissions {mode}"));
        ui.press(&["Enter"]);
        ui.wait_until("the status line naming the mode saved", |_| {
            footer(&ui).contains(&format!(" · {mode} · "))
        });
        ui.press(&["C-d"]);
        assert_eq!(ui.wait_exit(), 0);
        let id = session_id(&env);
        for args in [
            vec!["--continue"],
            vec!["--session-id", &id],
            vec!["resume"],
        ] {
            let ui = open(&env, &args);
            if args == ["resume"] {
                ui.wait_for("Resume a session");
                ui.press(&["Enter"]);
            }
            let screen = ui.wait_for("resumed session");
            let shown = format!(" · {mode} · ");
            assert!(screen.contains(&shown), "{args:?}: the header: {screen}");
            ui.wait_until(&format!("{args:?}: the status line naming {mode}"), |_| {
                footer(&ui).contains(&shown)
            });
            ui.type_text("/status");
            ui.press(&["Enter"]);
            let screen = ui.wait_for("allowed for the session");
            assert!(
                screen.contains(&format!("sandbox                 {mode} · approvals:")),
                "{args:?}: /status: {screen}"
            );
            ui.type_text("/permissions");
            ui.press(&["Enter"]);
            ui.wait_for(&format!("permission mode: {mode} (/permissions MODE"));
            ui.press(&["C-d"]);
            assert_eq!(ui.wait_exit(), 0);
        }
        // The run itself works under the saved mode: its log records no other.
        let modes: Vec<Value> = log_records(&env)
            .into_iter()
            .filter(|r| r["type"] == "permission/mode")
            .map(|r| r["data"]["mode"].clone())
            .collect();
        assert_eq!(modes.last(), Some(&json!(mode)), "{modes:?}");
    }
}
