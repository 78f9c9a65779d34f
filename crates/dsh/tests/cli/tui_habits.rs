//! The terminal UI's habits users bring from other coding agents (issue 52), as a person uses
//! them: the real binary in tmux (80x24) against the scripted model server, keys typed with
//! `send-keys`, the screen read with `capture-pane`.

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{TestEnv, Turn};
use serde_json::Value;

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

/// The user messages of a request, as the model was sent them.
fn user_texts(request: &dsh_testkit::Request) -> Vec<String> {
    (request.messages().iter())
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn log_records(env: &TestEnv) -> Vec<Value> {
    (env.session_logs().lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[test]
fn a_bang_command_runs_in_the_sandbox_and_the_model_reads_it_next_turn() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("I see the shell said 42.")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    // Under workspace-write the sandbox refuses a write outside the workspace: the command
    // runs where the model's calls run, not in dsh's own process.
    ui.type_text("!echo shell-said-$((6*7)); touch /usr/dsh-shell-probe; false");
    ui.press(&["Enter"]);
    let screen = wait_turn_end(&ui, "└ exit 1");
    assert!(
        screen.contains("! echo shell-said-$((6*7)); touch /usr/dsh-shell-probe; false"),
        "{screen}"
    );
    assert!(screen.contains("│ shell-said-42"), "{screen}");
    assert!(!std::path::Path::new("/usr/dsh-shell-probe").exists());
    assert!(
        env.server.requests().is_empty(),
        "a ! command asks the model nothing"
    );
    ui.type_text("what did it say?");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "I see the shell said 42.");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    let sent = user_texts(&requests[0]);
    let shell = (sent.iter())
        .find(|t| t.contains("The user ran this shell command themselves"))
        .unwrap_or_else(|| panic!("the command is in the next request: {sent:?}"));
    assert!(shell.contains("$ echo shell-said-$((6*7))"), "{shell}");
    assert!(shell.contains("shell-said-42"), "{shell}");
    assert!(shell.contains("[exit code: 1]"), "{shell}");
    assert!(
        sent.last().unwrap().contains("what did it say?"),
        "{sent:?}"
    );
    // The command is a turn of the session, which ended as completed.
    let ends = (log_records(&env).iter())
        .filter(|r| r["type"] == "turn/end" && r["data"]["reason"]["kind"] == "completed")
        .count();
    assert_eq!(ends, 2);
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn copy_puts_the_last_answer_on_the_clipboard_and_export_writes_a_page() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            serde_json::json!({"file_path": "notes.txt", "content": "first <line>\n"}),
        ),
        Turn::text("Wrote **notes.txt** for you."),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("/copy");
    ui.press(&["Enter"]);
    ui.wait_for("no answer to copy yet");
    ui.type_text("write the notes");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "Wrote notes.txt for you.");
    ui.type_text("/copy");
    ui.press(&["Enter"]);
    // The terminal has read the OSC 52 sequence before the note written after it.
    ui.wait_for("copied the last answer (28 characters)");
    assert_eq!(ui.clipboard(), "Wrote **notes.txt** for you.");

    ui.type_text("/export transcript.html");
    ui.press(&["Enter"]);
    ui.wait_for("the session is exported to");
    let page = std::fs::read_to_string(env.ws.path().join("transcript.html")).unwrap();
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("write the notes"), "{page}");
    assert!(page.contains("Wrote **notes.txt** for you."), "{page}");
    assert!(
        page.contains("<span class=\"add\">+first &lt;line&gt;</span>"),
        "the write's change as a diff, escaped: {page}"
    );
    // Self-contained: nothing is loaded from elsewhere.
    for outside in ["<script", "<link", "src=", "http://", "https://"] {
        assert!(!page.contains(outside), "{outside} in {page}");
    }
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn sessions_export_writes_markdown_with_the_secrets_redacted() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            serde_json::json!({"command": "echo built", "description": "build"}),
        ),
        Turn::text("It built."),
    ]);
    let out = env.run(
        dsh(),
        &["--json", "build it; my new key is sk-new-0123456789abcdef"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let id = (out.events().iter())
        .find_map(|e| e["sessionId"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("a session id in {:?}", out.events()));
    // The key is one the settings know by the time of the export: it is taken out.
    let mut export = env.command(dsh());
    export
        .args(["sessions", "export", &id])
        .env("DEEPSEEK_API_KEY", "sk-new-0123456789abcdef");
    let out = dsh_testkit::RunOutput::of(&mut export);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = &out.stdout;
    assert!(
        text.starts_with("# build it; my new key is [REDACTED]"),
        "{text}"
    );
    assert!(!text.contains("sk-new-0123456789abcdef"), "{text}");
    assert!(text.contains("## Turn 1"), "{text}");
    assert!(text.contains("**You:**"), "{text}");
    assert!(text.contains("**bash** `echo built`"), "{text}");
    assert!(text.contains("```text\nbuilt\n```"), "{text}");
    assert!(text.contains("It built."), "{text}");
    assert!(text.contains("*turn ended: completed*"), "{text}");

    let html = env.run(dsh(), &["sessions", "export", &id, "--format", "html"]);
    assert!(
        html.stdout.starts_with("<!doctype html>"),
        "{}",
        html.stdout
    );
    let bad = env.run(dsh(), &["sessions", "export", &id, "--format", "pdf"]);
    assert_eq!(bad.code(), Some(1), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("unknown export format \"pdf\""),
        "{}",
        bad.stderr
    );
}

/// The composer's first row: the line after the last rule on the visible screen.
fn composer(ui: &Tmux) -> String {
    let screen = ui.screen();
    let lines: Vec<&str> = screen.lines().collect();
    // No rule: the live area is not drawn yet (the editor has just given the terminal back).
    let rule = (lines.iter()).rposition(|l| !l.is_empty() && l.chars().all(|c| c == '─'));
    rule.and_then(|rule| lines.get(rule + 1).copied())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn ctrl_r_finds_a_prompt_of_another_session_of_the_workspace() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("done"), Turn::text("done too")]);
    for task in ["fix the parser timeout", "look at the docs"] {
        let out = env.run(dsh(), &["--json", task]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
    }
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.press(&["C-r"]);
    // Newest first: both sessions' prompts, before anything is typed.
    let screen = ui.wait_for("  fix the parser timeout");
    assert!(screen.contains("  look at the docs"), "{screen}");
    assert!(screen.contains("history search: ▏"), "{screen}");
    ui.type_text("PARS");
    let screen = ui.wait_for("history search: PARS▏");
    assert!(!screen.contains("  look at the docs"), "{screen}");
    ui.press(&["Enter"]);
    ui.wait_until("the prompt in the composer", |_| {
        composer(&ui) == "› fix the parser timeout"
    });
    // Taken into the composer, not sent.
    assert_eq!(env.server.requests().len(), 2);
    // Esc leaves the composer as it was.
    ui.press(&["C-r"]);
    ui.wait_for("history search: ▏");
    ui.type_text("docs");
    ui.wait_for("history search: docs▏");
    ui.press(&["Escape"]);
    ui.wait_until("the search closed", |s| !s.contains("history search"));
    assert_eq!(composer(&ui), "› fix the parser timeout");
    ui.press(&["C-u", "C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn ctrl_g_and_edit_write_the_message_in_the_editor() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("read your long message")]);
    // An editor that rewrites the file it is given: what it saved comes back to the composer.
    let script = env.ws.path().join("fake-editor");
    std::fs::write(
        &script,
        "#!/bin/sh\nold=$(cat \"$1\")\nprintf 'from the editor, was [%s]\\n' \"$old\" > \"$1\"\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    let mut vars = env.variables();
    vars.push(("VISUAL", script.display().to_string()));
    vars.push(("EDITOR", script.display().to_string()));
    let argv = [dsh().to_str().unwrap()];
    let ui = Tmux::start(&argv, env.ws.path(), &vars, 80, 24);
    ui.wait_for("Type a message");
    ui.type_text("draft");
    ui.press(&["C-g"]);
    ui.wait_until("the edited text in the composer", |_| {
        composer(&ui) == "› from the editor, was [draft]"
    });
    assert!(env.server.requests().is_empty(), "nothing is sent");
    ui.press(&["C-u"]);
    ui.type_text("/edit");
    ui.press(&["Enter"]);
    ui.wait_until("the editor's text for /edit", |_| {
        composer(&ui) == "› from the editor, was []"
    });
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "read your long message");
    let sent = user_texts(&env.server.requests()[0]);
    assert!(
        sent.iter().any(|t| t.contains("from the editor, was []")),
        "{sent:?}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn the_footer_shows_the_share_of_the_context_window_in_use() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("short answer")]);
    env.write(
        ".dsh/config.toml",
        "[models.\"deepseek-v4-flash\"]\ncontext_window = 1000\n",
    );
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    let last_row = |s: &str| {
        s.lines()
            .rev()
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        !last_row(&ui.screen()).contains("context"),
        "nothing sent yet"
    );
    ui.type_text("hello");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "short answer");
    // The scripted step is 110 tokens, of a window of 1000.
    ui.wait_until("the share in the footer", |_| {
        last_row(&ui.screen()).ends_with(" tokens · $0.0000 · 11% context")
    });
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn compact_with_a_focus_asks_the_summary_to_keep_it() {
    if !Tmux::available() {
        return;
    }
    let long = |n: usize| Turn::text(&format!("answer {n}: {}", "some words here ".repeat(150)));
    let env = TestEnv::new(vec![
        long(1),
        long(2),
        long(3),
        Turn::text("the last answer"),
        Turn::text("## Goal\n- fix the parser\n## Next\n- (none)"),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    for n in 1..=4 {
        ui.type_text(&format!("question {n}"));
        ui.press(&["Enter"]);
        let answer = if n == 4 {
            "the last answer".to_owned()
        } else {
            format!("answer {n}:")
        };
        wait_turn_end(&ui, &answer);
    }
    ui.type_text("/compact the parser's error paths");
    ui.press(&["Enter"]);
    ui.wait_until("the compaction done", |s| {
        s.contains("history compacted (manual)") && !s.contains("compacting the history")
    });
    let requests = env.server.requests();
    assert_eq!(requests.len(), 5, "one summary request");
    let asked = user_texts(&requests[4]);
    let instruction = asked.last().unwrap();
    assert!(
        instruction.contains("write a checkpoint of the conversation above"),
        "{instruction}"
    );
    assert!(
        instruction.contains("focus on: the parser's error paths"),
        "{instruction}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_message_typed_while_a_call_runs_reaches_the_model_at_the_next_step() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            serde_json::json!({
                "command": "echo waiting-line; until [ -f release ]; do sleep 0.02; done",
                "description": "wait for the test",
            }),
        ),
        Turn::text("Switching to the blue one."),
        Turn::text("You asked for green after the turn."),
    ]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    ui.type_text("paint it red");
    ui.press(&["Enter"]);
    ui.wait_for("│ waiting-line");
    // Enter during the turn: the message waits for the next step, not for the turn's end.
    ui.type_text("use blue instead");
    ui.press(&["Enter"]);
    ui.wait_for("at the next step: use blue instead");
    // Tab keeps the old way: after the turn.
    ui.type_text("then green");
    ui.press(&["Tab"]);
    ui.wait_for("queued: then green");
    std::fs::write(env.ws.path().join("release"), "").unwrap();
    let screen = wait_turn_end(&ui, "You asked for green after the turn.");
    assert!(screen.contains("› use blue instead"), "{screen}");
    let requests = env.server.requests();
    assert_eq!(
        requests.len(),
        3,
        "two steps of one turn, then the queued turn"
    );
    // The second request, the same turn's next step, carries it after the call's result.
    let second = requests[1].messages();
    let last = second.last().unwrap();
    assert_eq!(last["role"], "user", "{second:?}");
    assert!(
        last["content"].to_string().contains("use blue instead"),
        "{last}"
    );
    assert!(
        second.iter().any(|m| m["role"] == "tool"),
        "after the result: {second:?}"
    );
    assert!(!user_texts(&requests[1]).concat().contains("then green"));
    // The queued message was a turn of its own, after the first.
    assert_eq!(
        user_texts(&requests[2]).last().map(String::as_str),
        Some("then green")
    );
    let turns = (log_records(&env).iter())
        .filter(|r| r["type"] == "turn/start")
        .count();
    assert_eq!(turns, 2);
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_automatic_compaction_is_a_note_saying_what_was_kept() {
    if !Tmux::available() {
        return;
    }
    // Each step writes and reads a 3,000-character file; the last read reports a prompt past
    // 0.8 of a 6,000-token window, so the history is summarised before the next request.
    let chunk = "word ".repeat(600);
    let mut script = Vec::new();
    for i in 0..3 {
        script.push(Turn::tool_call(
            "write",
            serde_json::json!({"file_path": format!("f{i}.txt"), "content": chunk}),
        ));
        script.push(Turn::tool_call(
            "read",
            serde_json::json!({"file_path": format!("f{i}.txt")}),
        ));
    }
    let last = script.pop().unwrap().usage(5000, 10, 0);
    script.push(last);
    script.push(Turn::text("## Goal\n- three files\n## Next\n- (none)").usage(900, 40, 0));
    script.push(Turn::text("All three written."));
    let env = TestEnv::new(script);
    env.write("AGENTS.md", "Keep lines short.\n");
    env.write(
        "window.toml",
        "[models.\"deepseek-v4-flash\"]\ncontext_window = 6000\n",
    );
    let ui = open(&env, &["--patch", "window.toml"]);
    ui.wait_for("Type a message");
    ui.type_text("write and read");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "All three written.");
    let all = ui.everything();
    let note = all
        .find("history compacted (threshold)")
        .unwrap_or_else(|| panic!("{all}"));
    let after = &all[note..];
    assert!(after.contains("earlier messages summarised by"), "{after}");
    assert!(
        after.contains("kept as they were: the messages after those"),
        "{after}"
    );
    // The instructions given again show as their card, after the note.
    assert!(
        (after.lines())
            .any(|l| l.starts_with("· workspace instructions: ") && l.ends_with("/AGENTS.md")),
        "{after}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn a_turn_ending_while_the_terminal_is_not_focused_rings_and_notifies() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::text("First answer."),
        Turn::text("Second answer."),
    ]);
    env.write("notify.toml", "[tui]\nnotify = \"always\"\n");
    let ui = open(&env, &["--patch", "notify.toml"]);
    ui.wait_for("Type a message");
    let output = env.ws.path().join("terminal-output");
    ui.record_output(&output);
    let notification = "\x07\x1b]9;dsh: the turn has ended\x07";
    // Focused: the turn ends quietly.
    ui.type_text("one");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "First answer.");
    // The terminal reports the focus gone (CSI O), then a turn ends: the bell and OSC 9.
    ui.press(&["-H", "1b", "5b", "4f"]);
    ui.type_text("two");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "Second answer.");
    ui.wait_until("the notification written to the terminal", |_| {
        std::fs::read_to_string(&output).is_ok_and(|o| o.contains(notification))
    });
    let written = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        written.matches(notification).count(),
        1,
        "only the turn that ended unfocused"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn an_approval_waiting_while_the_terminal_is_not_focused_rings_and_notifies() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::escalated("echo asked"),
        Turn::text("Not run, then."),
    ]);
    // The default setting (long-turns) notifies a waiting approval whatever the turn's length.
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    let output = env.ws.path().join("terminal-output");
    ui.record_output(&output);
    ui.press(&["-H", "1b", "5b", "4f"]);
    ui.type_text("run it");
    ui.press(&["Enter"]);
    ui.wait_for("Allow bash?");
    let notification = "\x07\x1b]9;dsh: an answer is needed\x07";
    ui.wait_until("the notification written to the terminal", |_| {
        std::fs::read_to_string(&output).is_ok_and(|o| o.contains(notification))
    });
    ui.press(&["Escape"]);
    wait_turn_end(&ui, "Not run, then.");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}
