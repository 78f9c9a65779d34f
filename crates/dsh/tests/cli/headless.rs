use dsh_testkit::{RunOutput, TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::dsh;

fn two_reads_then_answer() -> Vec<Turn> {
    vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"})).reasoning("look at a"),
        Turn::tool_call("read", json!({"file_path": "b.txt", "offset": 2})),
        Turn::text("Both files read."),
    ]
}

#[test]
fn a_three_step_session_prints_the_answer_and_sends_the_exact_results() {
    let env = TestEnv::new(two_reads_then_answer());
    env.write("a.txt", "alpha\nbeta\n");
    env.write("b.txt", "one\ntwo\nthree");
    let out = env.run(dsh(), &["read", "both", "files"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Both files read.\n");
    assert_eq!(out.stderr, "dsh: reasoning:\nlook at a\n");

    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    let ws = env.ws_path().display().to_string();
    let last = &requests[2];
    assert_eq!(
        last.tool_results(),
        vec![
            format!(
                "<path>{ws}/a.txt</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n(End of file - total 2 lines)\n</content>"
            ),
            format!(
                "<path>{ws}/b.txt</path>\n<type>file</type>\n<content>\n2: two\n3: three\n\n(End of file - total 3 lines)\n</content>"
            ),
        ]
    );
    // The first request is the system prompt and the task, with the read tool offered.
    let first = &requests[0];
    assert_eq!(first.path, "/chat/completions");
    assert_eq!(first.messages()[0]["role"], "system");
    assert_eq!(
        first.messages()[1],
        json!({"role": "user", "content": "read both files"})
    );
    assert_eq!(
        first.tool_names(),
        vec![
            "ask_user_question",
            "bash",
            "create_goal",
            "edit",
            "get_goal",
            "glob",
            "grep",
            "interrupt_agent",
            "job_kill",
            "job_list",
            "job_output",
            "list_agents",
            "present",
            "ralph",
            "read",
            "read_image",
            "send_message",
            "subagent",
            "subagent_fork",
            "todo_write",
            "update_goal",
            "web_fetch",
            "web_search",
            "workflow",
            "write"
        ]
    );
    // Reasoning of a tool-calling answer goes back with it, as the DeepSeek API requires.
    assert_eq!(requests[1].messages()[2]["reasoning_content"], "look at a");
}

#[test]
fn requests_carry_the_model_effort_and_key() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    let out = env.run(
        dsh(),
        &["--model", "deepseek-v4-pro", "--effort", "max", "go"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let request = &env.server.requests()[0];
    assert_eq!(request.body["model"], "deepseek-v4-pro");
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(request.body["thinking"], json!({"type": "enabled"}));
    assert_eq!(request.body["reasoning_effort"], "max");
    assert_eq!(request.headers["authorization"], "Bearer test-key");
    assert!(request.headers["user-agent"].starts_with("dsh/"));

    let env = TestEnv::new(vec![Turn::text("ok")]);
    env.run(dsh(), &["--effort", "off", "go"]);
    let request = &env.server.requests()[0];
    assert_eq!(request.body["model"], "deepseek-v4-flash");
    assert_eq!(request.body["thinking"], json!({"type": "disabled"}));
    assert!(request.body.get("reasoning_effort").is_none());
}

#[test]
fn the_task_can_come_from_stdin() {
    for args in [
        &[][..],
        &["-"][..],
        &["--profile", "headless"][..],
        &["headless", "-"][..],
    ] {
        let env = TestEnv::new(vec![Turn::text("ok")]);
        let out = dsh_testkit::RunOutput::fed(env.command(dsh()).args(args), b"piped task\n");
        assert_eq!(out.code(), Some(0), "{args:?}: {}", out.stderr);
        // A piped task is sent verbatim, its newline included.
        assert_eq!(
            env.server.requests()[0].messages()[1]["content"],
            "piped task\n"
        );
    }
}

#[test]
fn unknown_tools_and_invalid_arguments_are_results_the_model_reads() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("Read", json!({"file_path": "a.txt"})),
            ("read", json!({"file_path": 5})),
        ]),
        Turn::raw_tool_call("read", "{\"file_path\": \"a.txt\""),
        Turn::text("recovered"),
    ]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "recovered\n");
    assert_eq!(
        env.server.requests()[2].tool_results(),
        vec![
            "Error: unknown tool \"Read\"",
            "Error: invalid arguments: \"file_path\" must be a string",
            "Error: invalid arguments: \"arguments\" must be an object",
        ]
    );
}

#[test]
fn the_session_log_records_every_result_with_its_error_code() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "nope.txt"})),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let log = env.session_log();
    let records: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["type"], "session");
    assert_eq!(records[0]["cwd"], env.ws_path().display().to_string());
    let result = records.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(
        result["data"]["error"],
        json!({"name": "FsError", "code": "FS_NOT_FOUND"})
    );
    assert_eq!(result["data"]["message"]["content"][0]["isError"], true);
    assert_eq!(records.last().unwrap()["type"], "turn/end");
}

#[test]
fn the_step_cap_ends_the_run_with_max_steps() {
    let looping = || Turn::tool_call("read", json!({"file_path": "a.txt"}));
    let env = TestEnv::new(vec![looping(), looping(), looping()]);
    env.write("a.txt", "x\n");
    let out = env.run(dsh(), &["--max-steps", "2", "go"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(env.server.requests().len(), 2);
    assert!(
        out.stderr
            .starts_with("dsh: MAX_STEPS: the turn reached its limit of 2 steps"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_answer_cut_at_the_token_limit_exits_1() {
    let env = TestEnv::new(vec![Turn::text("partial").finish("length")]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(out.stdout, "partial\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn help_and_version() {
    let env = TestEnv::new(vec![]);
    let help = env.run(dsh(), &["--help"]);
    assert_eq!(help.code(), Some(0));
    assert!(help.stdout.contains("Usage:\n  dsh [OPTIONS] [TASK...]"));
    let help = env.run(dsh(), &["--profile", "headless", "--help"]);
    assert_eq!(help.code(), Some(0));
    let version = env.run(dsh(), &["--version"]);
    // The version, then the commit it was built from (a test build is built in a clone).
    let line = version.stdout.strip_suffix('\n').unwrap();
    let (name, stamp) = line
        .split_once(" (")
        .unwrap_or_else(|| panic!("no commit in {line:?}"));
    assert_eq!(name, format!("dsh {}", env!("CARGO_PKG_VERSION")));
    let commit = stamp.split(&[' ', '-']).next().unwrap();
    assert!(
        commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{line}"
    );
    assert!(env.server.requests().is_empty());
}

/// A valid 1x1 RGBA PNG.
pub(crate) const DOT_PNG: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 252, 207, 192, 240, 31, 0,
    5, 5, 2, 0, 95, 200, 241, 210, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

#[test]
fn an_image_read_reaches_an_image_model_as_a_data_url() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read_image", json!({"file_path": "snapshot"})),
        Turn::text("A dot."),
    ]);
    std::fs::write(env.ws_path().join("snapshot"), DOT_PNG).unwrap();
    let out = env.run(
        dsh(),
        &["--model", "deepseek-v4-flash-vision-exp", "what is in it?"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let messages = requests[1].messages();
    let ws = env.ws_path().display().to_string();
    let tool = &messages[3];
    assert_eq!(tool["role"], "tool");
    let text = tool["content"].as_str().unwrap();
    let (envelope, handle) = text.rsplit_once('\n').unwrap();
    assert_eq!(
        envelope,
        format!(
            "<path>{ws}/snapshot</path>\n<type>image</type>\n<content>\nimage/png image, 1x1 px, \
             70 bytes\n</content>"
        )
    );
    assert!(handle.starts_with("Image sha256:"), "{handle}");
    assert!(handle.ends_with("; request image 1x1px."), "{handle}");
    let user = &messages[4];
    assert_eq!(user["role"], "user");
    assert_eq!(
        user["content"][0],
        json!({"type": "text", "text": "Attached image(s) from tool result:"})
    );
    let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
}

#[test]
fn a_text_model_is_refused_images_before_the_file_is_touched() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read_image", json!({"file_path": "missing.png"})),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["look"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        env.server.requests()[1].tool_results(),
        vec![
            "Error: cannot read \"missing.png\" as an image: model \"deepseek-v4-flash\" does not \
             declare image input; switch to an image-capable model to read images"
                .to_owned()
        ]
    );
}

#[test]
fn a_job_that_finishes_after_the_answer_gets_the_model_to_answer_again() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            // Ends only once the test lets it, after the model has answered.
            json!({"command": "while [ ! -e go ]; do sleep 0.01; done; echo late", "description": "Print", "run_in_background": true}),
        ),
        Turn::text("Started it."),
        Turn::text("It printed late."),
    ]);
    let out = std::thread::scope(|scope| {
        let run =
            scope.spawn(|| env.run(dsh(), &["--permission-mode", "danger-full-access", "go"]));
        assert!(
            env.server
                .wait_for_requests(2, std::time::Duration::from_secs(20))
        );
        std::fs::write(env.ws_path().join("go"), "").unwrap();
        run.join().unwrap()
    });
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "It printed late.\n");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1].tool_results(),
        vec!["started background job bash-1".to_owned()]
    );
    let last = requests[2].messages().last().unwrap().clone();
    assert_eq!(
        last,
        json!({"role": "user", "content": "background job bash-1 (bash: while [ ! -e go ]; do sleep \
               0.01; done; echo late) finished [status: completed, exit code: 0]. Read its output \
               with job_output."})
    );
}

#[test]
fn without_a_usable_backend_bash_is_offered_and_refuses_every_command() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo x > escaped.txt", "description": "Try a write"}),
        ),
        Turn::text("ok"),
    ]);
    // Forced onto bubblewrap, with no bwrap where it is said to be: nothing can confine the
    // command.
    env.write(
        "only-bwrap.toml",
        "[sandbox]\nbackend = \"bubblewrap\"\nbwrap = \"/nonexistent/bwrap\"\n",
    );
    let out = RunOutput::of(
        env.command(dsh())
            .args(["--patch", "only-bwrap.toml", "go"]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let names = requests[0].tool_names();
    for tool in ["bash", "job_kill", "job_list", "job_output"] {
        assert!(names.contains(&tool.to_owned()), "{tool} in {names:?}");
    }
    let result = &requests[1].tool_results()[0];
    assert!(
        result.starts_with(
            "Error: sandbox mode \"workspace-write\" is requested but no sandbox backend is \
             usable on this host; refusing to run the command unconfined."
        ),
        "{result}"
    );
    assert!(
        result.ends_with(
            "(bubblewrap: sandbox.bwrap names /nonexistent/bwrap, which is not an executable \
             file; `dsh sandbox check` says what to do)"
        ),
        "{result}"
    );
    assert!(!env.ws_path().join("escaped.txt").exists());
}

#[test]
fn workspace_instructions_follow_the_first_task_once() {
    let env = TestEnv::new(vec![
        Turn::text("ok"),
        Turn::text("again"),
        Turn::text("off"),
    ]);
    std::fs::create_dir_all(env.ws_path().join(".git")).unwrap();
    env.write("AGENTS.md", "Run `make check` before you finish.\n");
    env.write("sub/AGENTS.md", "Files here are generated.\n");
    let sub = env.ws_path().join("sub");
    let out = RunOutput::of(env.command(dsh()).current_dir(&sub).args(["--json", "go"]));
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let first = env.server.requests()[0].messages().to_vec();
    assert_eq!(first[1], json!({"role": "user", "content": "go"}));
    let reminder = first[2]["content"].as_str().unwrap();
    assert!(reminder.starts_with("<system-reminder>\n"), "{reminder}");
    assert!(
        reminder.contains("Instructions from: AGENTS.md\n\nRun `make check` before you finish.")
    );
    assert!(reminder.contains("Instructions from: sub/AGENTS.md\n\nFiles here are generated."));
    // Resumed, the session has them already: they are not sent again.
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let out =
        RunOutput::of(
            env.command(dsh())
                .current_dir(&sub)
                .args(["--session-id", &id, "more"]),
        );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let resumed = env.server.requests()[1].messages().to_vec();
    let reminders = resumed
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("<system-reminder>"))
        })
        .count();
    assert_eq!(reminders, 1);
    // Switched off, nothing is sent.
    env.write("off.toml", "[instructions]\nenabled = false\n");
    let out =
        RunOutput::of(
            env.command(dsh())
                .current_dir(&sub)
                .args(["--patch", "../off.toml", "go"]),
        );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests()[2].messages().len(), 2);
}

#[test]
fn skills_are_listed_in_the_system_prompt_and_loaded_with_the_skill_tool() {
    let env = TestEnv::new(vec![
        Turn::tool_call("skill", json!({"name": "release"})),
        Turn::tool_call("skill", json!({"name": "nope"})),
        Turn::text("done"),
    ]);
    // Written as docs/config.md shows a skill, comments included.
    env.write(
        ".dsh/skills/release/SKILL.md",
        "---\nname: release                      # lower-case words joined by -\n\
         description: Cut a release of the project\n\
         disable-model-invocation: false    # true keeps it out of the model's catalog\n\
         ---\nRun scripts/release.sh, then tag.\n",
    );
    env.write(
        ".dsh/skills/broken/SKILL.md",
        "---\nname: Broken\ndescription: x\n---\n",
    );
    env.write(
        "more/lint.md",
        "---\nname: lint\ndescription: Run every linter\n---\nclippy, fmt\n",
    );
    env.write("skills.toml", "[skills]\ndirs = [\"more\"]\n");
    let out = env.run(dsh(), &["--patch", "skills.toml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The skill that cannot be loaded is named, with what is wrong.
    assert!(
        out.stderr.contains(&format!(
            "skill {} is not loaded: its name \"Broken\" is not lower-case words joined by -",
            env.ws_path().join(".dsh/skills/broken/SKILL.md").display()
        )),
        "{}",
        out.stderr
    );
    let requests = env.server.requests();
    assert!(requests[0].tool_names().contains(&"skill".to_owned()));
    let system = requests[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("- `release`: Cut a release of the project\n"),
        "{system}"
    );
    assert!(system.contains("- `lint`: Run every linter\n"), "{system}");
    let ws = std::fs::canonicalize(env.ws_path()).unwrap();
    let loaded = &requests[1].tool_results()[0];
    assert_eq!(
        loaded,
        &format!(
            "<skill_content name=\"release\">\n<skill_resources>\nBase directory for this skill: \
             {}\nResolve relative paths mentioned by this skill against the base directory \
             before using them. Load referenced resources only as needed.\n</skill_resources>\n\n\
             <skill_instructions>\nRun scripts/release.sh, then tag.\n</skill_instructions>\n\
             </skill_content>",
            ws.join(".dsh/skills/release").display()
        )
    );
    assert_eq!(
        requests[2].tool_results()[1],
        "Error: skill \"nope\" is unknown or no longer available; the skills are release, lint"
    );
}

#[test]
fn instructions_below_the_working_directory_join_when_the_file_tools_reach_them() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "pkg/app/main.c"})),
        Turn::tool_call("read", json!({"file_path": "pkg/app/main.c"})),
        Turn::text("done"),
    ]);
    env.write("pkg/app/main.c", "int main;\n");
    env.write("pkg/app/AGENTS.md", "Keep main.c C89.\n");
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let second = requests[1].messages();
    let last = second.last().unwrap()["content"].as_str().unwrap();
    assert!(
        last.starts_with("<system-reminder>\nAdditional instructions from: pkg/app/AGENTS.md\n"),
        "{last}"
    );
    assert!(last.contains("Keep main.c C89."));
    // Sent once: the second read of the same folder adds nothing.
    let count = |r: &dsh_testkit::Request| {
        r.messages()
            .iter()
            .filter(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("pkg/app/AGENTS.md"))
            })
            .count()
    };
    assert_eq!(count(&requests[2]), 1);
}

/// `-o` writes the final answer to a file as well (the stream is unchanged); a file that
/// cannot be written is refused before anything is sent.
#[test]
fn the_final_answer_can_also_go_to_a_file() {
    let env = TestEnv::new(vec![Turn::text("the answer\nin two lines")]);
    let out = env.run(dsh(), &["--json", "-o", "answer.txt", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let written = std::fs::read_to_string(env.ws_path().join("answer.txt")).unwrap();
    assert_eq!(written, "the answer\nin two lines");
    assert_eq!(out.events().last().unwrap()["type"], "final");
    let leftovers: Vec<_> = std::fs::read_dir(env.ws_path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let env = TestEnv::new(vec![Turn::text("never asked")]);
    let out = env.run(
        dsh(),
        &["--output-last-message", "missing/answer.txt", "go"],
    );
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr.trim(),
        "dsh: --output-last-message missing/answer.txt: the folder missing does not exist; \
         create it or name another file"
    );
    assert!(env.server.requests().is_empty());
    let out = env.run(dsh(), &["-o", "", "go"]);
    assert_eq!(out.code(), Some(1), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("--output-last-message needs a file name")
    );
}
