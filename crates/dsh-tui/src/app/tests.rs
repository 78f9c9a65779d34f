use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use dsh_protocol::{
    AssistantMessageRecord, Block, FinishReason, Message, Role, TodoItem, TodoStatus,
    ToolCallRecord, ToolOutputPart, ToolResultRecord, TurnEndReason, Usage,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::wrap::plain;

fn opened_app() -> App {
    open_app(None)
}

/// The file and shell tools, as a run with them describes their calls.
fn file_and_shell_tools() -> dsh_core::ToolCatalog {
    let mut tools = dsh_tools::ToolRegistry::with_file_tools(true);
    tools.add_shell_tools(true);
    tools.catalog()
}

fn open_app(prompt_dirs: Option<PromptDirs>) -> App {
    let mut app = App::new(prompt_dirs);
    let opened = Opened {
        info: SessionInfo {
            id: "session-1".into(),
            model: "deepseek-v4-flash".into(),
            cwd: "/work/project".into(),
            sandbox: "workspace-write".into(),
            approval: "ask".into(),
            catalog: file_and_shell_tools(),
            ..SessionInfo::default()
        },
        events: tokio::sync::mpsc::unbounded_channel().1,
        earlier: Vec::new(),
        not_shown: 0,
        steering: dsh_core::Steering::default(),
    };
    app.opened(&opened);
    app.take_pending();
    app
}

fn type_keys(app: &mut App, text: &str) -> Action {
    let mut last = Action::None;
    for c in text.chars() {
        last = app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    last
}

fn press(app: &mut App, code: KeyCode) -> Action {
    app.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn record(app: &mut App, record: Record) {
    app.event(AgentEvent::Record(record));
}

fn assistant(text: &str, reasoning: &str) -> Record {
    Record::AssistantMessage(AssistantMessageRecord {
        turn: 1,
        step: 1,
        message: Message {
            role: Role::Assistant,
            content: vec![
                Block::Reasoning {
                    text: reasoning.into(),
                    signature: None,
                    redacted: false,
                },
                Block::Text { text: text.into() },
            ],
        },
        finish: FinishReason::Stop,
        provider: "p".into(),
        model: "m".into(),
        usage: Usage::default(),
    })
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Record {
    Record::ToolCall(ToolCallRecord {
        turn: 1,
        step: 1,
        call_id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    })
}

fn result(id: &str, text: &str, is_error: bool) -> Record {
    Record::ToolResult(ToolResultRecord {
        turn: 1,
        step: 1,
        message: Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_call_id: id.into(),
                content: vec![ToolOutputPart::Text { text: text.into() }],
                is_error,
            }],
        },
        error: None,
        command: None,
    })
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| app.draw(frame)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_turn_in_the_scrollback() {
    let mut app = opened_app();
    record(&mut app, Record::TurnStart { turn: 1 });
    record(
        &mut app,
        Record::UserMessage {
            turn: 1,
            message: Message::user_text("fix the greeting"),
            instructions: None,
        },
    );
    record(
        &mut app,
        assistant("I will edit it.", "look at the file\nthen edit"),
    );
    record(
        &mut app,
        call(
            "c1",
            "edit",
            serde_json::json!({"file_path": "src/main.rs", "old_string": "println!(\"hi\");\n", "new_string": "println!(\"hello\");\n"}),
        ),
    );
    record(&mut app, result("c1", "edited src/main.rs", false));
    record(
        &mut app,
        call("c2", "bash", serde_json::json!({"command": "cargo test"})),
    );
    record(
        &mut app,
        result(
            "c2",
            "running 3 tests\ntest result: FAILED\n[exit code: 101]",
            false,
        ),
    );
    record(
        &mut app,
        Record::TodoWrite {
            turn: 1,
            todos: vec![
                TodoItem {
                    content: "edit the greeting".into(),
                    status: TodoStatus::Completed,
                },
                TodoItem {
                    content: "make the tests pass".into(),
                    status: TodoStatus::InProgress,
                },
            ],
        },
    );
    record(
        &mut app,
        call("c3", "read", serde_json::json!({"file_path": "missing.rs"})),
    );
    record(
        &mut app,
        result("c3", "cannot read \"missing.rs\": not found", true),
    );
    record(
        &mut app,
        Record::StepEnd {
            turn: 1,
            step: 1,
            usage: Usage {
                total_tokens: 1_234,
                ..Usage::default()
            },
        },
    );
    record(
        &mut app,
        Record::TurnEnd {
            turn: 1,
            reason: TurnEndReason::Aborted {
                reason: AbortReason::User,
            },
        },
    );
    insta::assert_snapshot!(plain(&app.take_pending()));
    // The footer follows the task in progress.
    assert!(screen(&app, 100, 4).contains("todo 1/2: make the tests pass"));
}

#[test]
fn the_live_area_while_a_turn_runs() {
    let mut app = opened_app();
    app.turn_started("x", Stop::new());
    app.event(AgentEvent::Delta(StreamDelta::Text(
        "## Plan\n\n- read the code\n- fix".into(),
    )));
    record(
        &mut app,
        call("c1", "bash", serde_json::json!({"command": "cargo build"})),
    );
    app.event(AgentEvent::ToolOutput {
        call_id: "c1".into(),
        text: "   Compiling a\n   Compiling b\n\n   Compiling c\n   Compiling d\n   Compiling e\n"
            .into(),
    });
    app.composer.insert("next, also @src");
    app.queued.push_back("a queued message".into());
    let shown = screen(&app, 60, 14).replace(char::is_numeric, "9");
    insta::assert_snapshot!(shown);
}

#[test]
fn a_stopped_commands_output_stays_above_its_error() {
    let mut app = opened_app();
    app.turn_started("x", Stop::new());
    record(
        &mut app,
        call("c1", "bash", serde_json::json!({"command": "cargo build"})),
    );
    app.take_pending();
    app.event(AgentEvent::ToolOutput {
        call_id: "c1".into(),
        text: "   Compiling a\r   Compiling b\n\nwarning: unused\n".into(),
    });
    record(&mut app, result("c1", "Error: tool call aborted", true));
    insta::assert_snapshot!(plain(&app.take_pending()), @r"
      │    Compiling b
      │ warning: unused
      ✗ Error: tool call aborted
    ");
    // A command that ends has its output in its result: it is not shown twice.
    record(
        &mut app,
        call("c2", "bash", serde_json::json!({"command": "echo hi"})),
    );
    app.event(AgentEvent::ToolOutput {
        call_id: "c2".into(),
        text: "hi\n".into(),
    });
    app.take_pending();
    record(&mut app, result("c2", "hi\n", false));
    assert_eq!(plain(&app.take_pending()).matches("hi").count(), 1);
}

#[test]
fn a_dialog_takes_the_composers_place_and_esc_cancels_it() {
    let mut app = opened_app();
    let (asked, mut rx) = dsh_core::ask::Approval::new(dsh_core::ask::ApprovalRequest {
        tool: "bash".into(),
        call_id: "c".into(),
        reason: "escalate sandbox to danger-full-access: install packages".into(),
        grant: Some("sandbox danger-full-access".into()),
    });
    app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(asked)));
    insta::assert_snapshot!(screen(&app, 80, 10));
    app.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(
        rx.try_recv().unwrap(),
        dsh_core::ask::ApprovalOutcome::Cancelled
    );
    assert!(
        screen(&app, 80, 10).lines().any(|l| l == "›"),
        "the composer is back"
    );
}

#[test]
fn keys_send_queue_interrupt_and_quit() {
    let mut app = opened_app();
    let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
    let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    for c in "hi\\".chars() {
        app.key(key(KeyCode::Char(c)));
    }
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Action::None,
        "a trailing \\ continues"
    );
    app.key(key(KeyCode::Char('x')));
    assert_eq!(app.key(key(KeyCode::Enter)), Action::Send("hi\nx".into()));
    let stop = Stop::new();
    app.turn_started("hi", stop.clone());
    app.composer.insert("later");
    assert_eq!(app.key(key(KeyCode::Tab)), Action::None);
    assert_eq!(app.queued.len(), 1, "a message queued with Tab waits");
    app.composer.insert("and more");
    assert_eq!(app.key(ctrl('c')), Action::Interrupt);
    assert!(stop.is_requested());
    // What was queued is not sent after the interrupt: it is back in the composer.
    assert!(app.queued.is_empty());
    assert_eq!(app.composer.text(), "later\nand more");
    assert_eq!(app.key(ctrl('c')), Action::Quit, "a second Ctrl-C quits");
    app.turn_ended(Ok(dsh_core::TurnSummary {
        turn: 1,
        reason: TurnEndReason::Completed,
        text: String::new(),
        usage: Usage::default(),
        steps: 0,
    }));
    assert_eq!(app.next_queued(), None);
    app.composer.clear();
    assert_eq!(
        app.key(ctrl('d')),
        Action::Quit,
        "Ctrl-D on an empty composer quits"
    );
    app.composer.insert("/status");
    assert_eq!(app.key(key(KeyCode::Enter)), Action::Slash(Slash::Status));
}

#[test]
fn messages_typed_while_busy_wait_and_stale_dialogs_are_dropped() {
    let mut app = opened_app();
    let stop = Stop::new();
    app.begin_busy("compacting", Some(stop.clone()));
    app.composer.insert("after the compaction");
    assert_eq!(
        app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        Action::None
    );
    assert_eq!(app.next_queued(), None, "not while busy");
    app.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(stop.is_requested(), "Esc stops a compaction");
    app.end_busy();
    assert_eq!(app.next_queued().as_deref(), Some("after the compaction"));

    let (asked, rx) = dsh_core::ask::Approval::new(dsh_core::ask::ApprovalRequest {
        tool: "bash".into(),
        call_id: "c".into(),
        reason: "r".into(),
        grant: Some("g".into()),
    });
    drop(rx);
    app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(asked)));
    assert!(
        !screen(&app, 80, 10).contains("Allow bash?"),
        "nobody waits for it"
    );
}

#[test]
fn keys_typed_before_a_dialog_was_drawn_never_answer_it() {
    let mut app = opened_app();
    app.turn_started("x", Stop::new());
    assert_eq!(app.front_view(), None, "the composer has the keys");
    let ask = || dsh_core::ask::ApprovalRequest {
        tool: "bash".into(),
        call_id: "c".into(),
        reason: "escalate sandbox to danger-full-access: r".into(),
        grant: Some("sandbox danger-full-access".into()),
    };
    let (asked, mut first) = dsh_core::ask::Approval::new(ask());
    app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(asked)));
    let shown = app.front_view();
    assert!(shown.is_some());
    for c in ['1', 'y'] {
        app.typed_before(Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
    }
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(app.typed_before(Event::Key(enter)), Action::None);
    assert!(first.try_recv().is_err(), "the dialog was answered");
    assert_eq!(
        app.steer.as_ref().unwrap().take_all(),
        ["1y"],
        "what was typed went to the composer, and Enter sent it to the turn"
    );
    app.steering.clear();
    assert!(screen(&app, 80, 10).contains("› 3. Deny, and say why"));
    // A second question waits behind the first; it is new on screen once the first goes.
    let (asked, _second) = dsh_core::ask::Approval::new(ask());
    app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(asked)));
    assert_eq!(app.front_view(), shown);
    app.key(enter);
    app.key(enter);
    assert!(matches!(
        first.try_recv(),
        Ok(dsh_core::ask::ApprovalOutcome::Rejected { reason: None })
    ));
    assert!(app.front_view().is_some_and(|v| Some(v) != shown));
}

/// The index of files is made at the first `@`, and again (in the background) at the
/// first `@` after a turn ended: the files it made are offered; the old index serves
/// meanwhile.
#[test]
fn the_mention_index_is_made_again_after_a_turn() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("old.rs"), "").unwrap();
    let mut app = opened_app();
    assert!(matches!(type_keys(&mut app, "@"), Action::IndexFiles));
    app.files_indexed(FileIndex::build(ws.path()));
    assert!(matches!(type_keys(&mut app, " @"), Action::None));
    app.composer.clear();
    app.turn_ended(Ok(dsh_core::TurnSummary {
        turn: 1,
        reason: TurnEndReason::Completed,
        text: String::new(),
        usage: Usage::default(),
        steps: 0,
    }));
    std::fs::write(ws.path().join("new.rs"), "").unwrap();
    assert!(matches!(type_keys(&mut app, "@"), Action::IndexFiles));
    assert!(
        screen(&app, 80, 8).contains("@old.rs"),
        "the old index serves meanwhile"
    );
    assert!(
        matches!(type_keys(&mut app, " @"), Action::None),
        "made once"
    );
    app.composer.clear();
    app.files_indexed(FileIndex::build(ws.path()));
    type_keys(&mut app, "@new");
    assert!(screen(&app, 80, 8).contains("@new.rs"));
}

#[test]
fn a_long_resumed_session_says_how_many_turns_it_does_not_show() {
    let mut app = App::new(None);
    let opened = Opened {
        info: SessionInfo {
            id: "session-9".into(),
            ..SessionInfo::default()
        },
        events: tokio::sync::mpsc::unbounded_channel().1,
        earlier: vec![Record::TurnStart { turn: 61 }],
        not_shown: 60,
        steering: dsh_core::Steering::default(),
    };
    app.opened(&opened);
    assert!(
        plain(&app.take_pending()).contains(
            "… 60 earlier turns are not shown here (dsh sessions show session-9 prints them all)"
        ),
        "the transcript says what it left out"
    );
}

#[test]
fn the_same_session_reopened_on_another_model_is_not_shown_again() {
    let mut app = opened_app();
    let mut info = app.info.clone().unwrap();
    info.model = "deepseek-v4-pro".into();
    let reopened = Opened {
        info,
        events: tokio::sync::mpsc::unbounded_channel().1,
        earlier: vec![Record::UserMessage {
            turn: 1,
            message: Message::user_text("old"),
            instructions: None,
        }],
        not_shown: 0,
        steering: dsh_core::Steering::default(),
    };
    app.opened(&reopened);
    assert_eq!(
        plain(&app.take_pending()),
        "· now on deepseek-v4-pro; the session goes on"
    );
    assert!(screen(&app, 80, 4).contains("deepseek-v4-pro"));
}

#[test]
fn a_prompt_saved_while_the_ui_runs_is_a_command_at_once() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut app = open_app(Some(PromptDirs {
        home: home.path().to_path_buf(),
        cwd: cwd.path().to_path_buf(),
    }));
    std::fs::create_dir_all(home.path().join("prompts")).unwrap();
    std::fs::write(home.path().join("prompts/fresh.md"), "Check $ARGUMENTS.").unwrap();
    type_keys(&mut app, "/fr");
    assert!(
        screen(&app, 80, 6).contains("/fresh  saved prompt"),
        "the hint offers it"
    );
    type_keys(&mut app, "esh now");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Prompt("Check now.".into()))
    );
    // One saved while a command line is already being typed is found when it is entered.
    type_keys(&mut app, "/later");
    std::fs::create_dir_all(home.path().join("prompts")).unwrap();
    std::fs::write(home.path().join("prompts/later.md"), "Later.").unwrap();
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Prompt("Later.".into()))
    );
}

#[test]
fn tab_and_enter_take_the_completion_shown() {
    let mut app = opened_app();
    type_keys(&mut app, "/st");
    assert!(screen(&app, 80, 6).contains("/status  session, model"));
    assert_eq!(press(&mut app, KeyCode::Tab), Action::None);
    assert_eq!(
        app.composer.text(),
        "/status ",
        "Tab accepts the completion"
    );
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Status)
    );
    type_keys(&mut app, "/st");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Status),
        "Enter runs the one command the hint names"
    );
    // Several matches: Tab goes as far as they agree, Enter runs none of them.
    type_keys(&mut app, "/");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.composer.text(), "/");
    type_keys(&mut app, "m");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.composer.text(), "/model ");
    app.composer.clear();
    type_keys(&mut app, "/x");
    assert!(matches!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Unknown(_))
    ));
}

fn footer_of(app: &App) -> String {
    screen(app, 80, 4)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn notices_clear_when_what_they_announce_is_over() {
    let ended = || {
        Ok(dsh_core::TurnSummary {
            turn: 1,
            reason: TurnEndReason::Aborted {
                reason: AbortReason::User,
            },
            text: String::new(),
            usage: Usage::default(),
            steps: 0,
        })
    };
    let idle = "deepseek-v4-flash · workspace-write · 0 tokens";
    let mut app = opened_app();
    app.turn_started("x", Stop::new());
    press(&mut app, KeyCode::Esc);
    assert_eq!(footer_of(&app), "interrupting… (Ctrl-C again quits)");
    app.turn_ended(ended());
    assert_eq!(footer_of(&app), idle, "the interrupt is over");

    // After Ctrl-C, the footer says what a second one does, until another key.
    app.turn_started("x", Stop::new());
    app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    app.turn_ended(ended());
    assert_eq!(footer_of(&app), "press Ctrl-C again (or Ctrl-D) to quit");
    type_keys(&mut app, "a");
    assert_eq!(footer_of(&app), idle);

    // "reasoning is now…" goes at the next key.
    app.key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    assert!(footer_of(&app).starts_with("reasoning is now"));
    type_keys(&mut app, "b");
    assert_eq!(footer_of(&app), idle);

    // Stopping a compaction, and "wait for the turn", hold until the work is over.
    app.begin_busy("compacting", Some(Stop::new()));
    app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(footer_of(&app).starts_with("stopping…"));
    app.end_busy();
    assert_eq!(footer_of(&app), idle);
    app.turn_started("x", Stop::new());
    app.notice_until_idle("wait for the turn to end");
    type_keys(&mut app, "c");
    assert_eq!(footer_of(&app), "wait for the turn to end");
    app.turn_ended(ended());
    assert_eq!(footer_of(&app), idle);

    // A session that failed to open leaves none open, and the footer says so.
    app.begin_busy("opening the session", None);
    app.open_failed("no session abc in this folder");
    assert_eq!(
        footer_of(&app),
        "no session is open: /new starts one, /resume picks one"
    );
}

fn summary(id: &str, task: &str) -> dsh_protocol::SessionSummary {
    dsh_protocol::SessionSummary {
        id: id.into(),
        title: None,
        created_at: 0,
        first_task: task.into(),
        turns: 1,
        total_tokens: 1200,
        parent_session: None,
        path: String::new(),
    }
}

/// The `/resume` picker filters as the user types (the search `dsh sessions search` makes,
/// which finds nothing in an empty home here: tests/cli/tui_archive.rs finds real sessions),
/// and shows everything again once the search is erased.
#[test]
fn the_resume_picker_filters_by_a_search_as_the_user_types() {
    let home = tempfile::tempdir().unwrap();
    let mut app = opened_app();
    app.open_picker(
        vec![
            summary("session-aaaa1111", "fix the parser"),
            summary("session-bbbb2222", "write the docs"),
        ],
        home.path(),
    );
    insta::assert_snapshot!("picker_all", screen(&app, 80, 8));
    type_keys(&mut app, "zebra");
    insta::assert_snapshot!("picker_searched", screen(&app, 80, 8));
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::None,
        "nothing to open"
    );
    for _ in 0..5 {
        press(&mut app, KeyCode::Backspace);
    }
    press(&mut app, KeyCode::Down);
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Slash(Slash::Resume(Some("session-bbbb2222".into())))
    );
}

#[test]
fn a_message_typed_during_a_turn_goes_to_its_next_step_and_an_interrupt_takes_it_back() {
    let mut app = opened_app();
    let inbox = app.steer.clone().unwrap();
    app.turn_started("x", Stop::new());
    type_keys(&mut app, "use b.txt");
    assert_eq!(press(&mut app, KeyCode::Enter), Action::None);
    type_keys(&mut app, "and c.txt");
    assert_eq!(press(&mut app, KeyCode::Enter), Action::None);
    assert!(app.queued.is_empty(), "nothing waits for the turn's end");
    assert_eq!(inbox.waiting(), 2, "both wait for the next step");
    assert!(screen(&app, 80, 12).contains("at the next step: use b.txt"));
    // The agent reads the first; the log's record of it takes it off the list.
    assert_eq!(inbox.take_all().len(), 2);
    inbox.push("and c.txt".into());
    record(
        &mut app,
        Record::UserMessage {
            turn: 1,
            message: Message::user_text("use b.txt"),
            instructions: None,
        },
    );
    assert!(!screen(&app, 80, 12).contains("at the next step: use b.txt"));
    assert!(screen(&app, 80, 12).contains("at the next step: and c.txt"));
    // An interrupt takes back the one not read, into the composer.
    type_keys(&mut app, "draft");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.composer.text(), "and c.txt\ndraft");
    assert_eq!(inbox.waiting(), 0);
    assert!(!screen(&app, 80, 12).contains("at the next step"));
}

#[test]
fn what_the_turn_left_unread_is_sent_next_and_bang_commands_wait() {
    let mut app = opened_app();
    let inbox = app.steer.clone().unwrap();
    app.turn_started("x", Stop::new());
    type_keys(&mut app, "!git status");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.queued,
        ["!git status"],
        "a ! command runs after the turn"
    );
    type_keys(&mut app, "one");
    press(&mut app, KeyCode::Enter);
    type_keys(&mut app, "two");
    press(&mut app, KeyCode::Enter);
    assert_eq!(inbox.waiting(), 2);
    app.turn_ended(Ok(dsh_core::TurnSummary {
        turn: 1,
        reason: TurnEndReason::Completed,
        text: String::new(),
        usage: Usage::default(),
        steps: 1,
    }));
    assert_eq!(inbox.waiting(), 0);
    assert_eq!(app.next_queued().as_deref(), Some("one\n\ntwo"));
    assert_eq!(app.next_queued().as_deref(), Some("!git status"));
}
