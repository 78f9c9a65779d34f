//! Secrets the run knows never reach the log, the event stream or the model through a tool's
//! result: they are replaced by `[REDACTED]` (`secrets.redact`, on by default).

use dsh_testkit::{TestEnv, Turn};
use serde_json::json;

use crate::dsh;

const TOKEN: &str = "tok_live_9f8e7d6c5b4a";

fn leaky_env() -> TestEnv {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("read", json!({"file_path": "notes.txt"})),
            (
                "bash",
                json!({"command": "cat notes.txt", "description": "show the notes"}),
            ),
        ]),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    env.write("notes.txt", &format!("the token is {TOKEN}\n"));
    env
}

#[test]
fn a_key_in_a_result_is_redacted_in_the_log_the_stream_and_the_next_request() {
    let env = leaky_env();
    let out = env.run(dsh(), &["--json", "what do the notes say?"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(!out.stdout.contains(TOKEN), "{}", out.stdout);
    assert!(!env.session_log().contains(TOKEN));
    let results = env.server.requests()[1].tool_results();
    assert_eq!(results.len(), 2);
    for result in &results {
        assert!(result.contains("the token is [REDACTED]"), "{result}");
        assert!(!result.contains(TOKEN), "{result}");
    }
    assert!(out.stdout.contains("[REDACTED]"));
    dsh_testkit::fault_matrix(
        "secret",
        "a .env token in a read and a command's output",
        "redacted in the log, the stream and the next request",
    );
}

#[test]
fn redaction_can_be_turned_off() {
    let env = leaky_env();
    env.write(".dsh/config.toml", "[secrets]\nredact = false\n");
    let out = env.run(dsh(), &["--json", "what do the notes say?"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let results = env.server.requests()[1].tool_results();
    assert!(results[0].contains(TOKEN), "{results:?}");
}

#[test]
fn writing_the_placeholder_back_over_a_secret_is_refused() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": ".env"})),
        Turn::tool_call(
            "write",
            json!({"file_path": ".env", "content": "PAYMENT_API_TOKEN=[REDACTED]\nDEBUG=1\n"}),
        ),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    let out = env.run(dsh(), &["add DEBUG=1 to .env"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let refused = env.server.requests()[2].tool_results();
    assert!(
        refused
            .last()
            .unwrap()
            .contains("stands for a secret dsh kept from you"),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join(".env")).unwrap(),
        format!("PAYMENT_API_TOKEN={TOKEN}\n")
    );
    dsh_testkit::fault_matrix(
        "secret",
        "the placeholder written back over a key",
        "refused; the file unchanged",
    );
}

#[test]
fn a_provider_error_that_quotes_the_key_is_redacted_everywhere() {
    let key = "sk-test-0123456789abcdef";
    let env = TestEnv::new(vec![Turn::status(
        400,
        &format!("the key {key} is not valid for this model"),
    )]);
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env("DEEPSEEK_API_KEY", key)
            .args(["--json", "hi"]),
    );
    assert_ne!(out.code(), Some(0));
    assert!(out.stdout.contains("[REDACTED]"), "{}", out.stdout);
    for (name, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("log", &env.session_log()),
    ] {
        assert!(!text.contains(key), "{name}: {text}");
    }
    dsh_testkit::fault_matrix(
        "secret",
        "the key quoted by a provider's error",
        "redacted in the log, the stream and stderr",
    );
}

#[test]
fn a_retry_notice_that_quotes_the_key_is_redacted() {
    let key = "sk-test-0123456789abcdef";
    let env = TestEnv::new(vec![
        Turn::status(503, &format!("overloaded while serving {key}")),
        Turn::text("fine now"),
    ]);
    env.write(
        ".dsh/config.toml",
        "[requests]\nretry_base_ms = 1\nretry_max_ms = 5\n",
    );
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env("DEEPSEEK_API_KEY", key)
            .args(["--json", "hi"]),
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("[REDACTED]"), "{}", out.stderr);
    assert!(!out.stderr.contains(key), "{}", out.stderr);
    assert!(!out.stdout.contains(key), "{}", out.stdout);
    dsh_testkit::fault_matrix(
        "secret",
        "the key quoted by a retried error",
        "redacted in the retry notice",
    );
}

#[test]
fn what_a_hook_prints_is_redacted_before_the_model_and_the_log_see_it() {
    let env = TestEnv::new(vec![Turn::text("noted")]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": "echo the token is $(cut -d= -f2 .env)"}
        ]}]}})
        .to_string(),
    );
    let out = env.run(dsh(), &["--json", "hello"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let sent = serde_json::to_string(env.server.requests()[0].messages()).unwrap();
    assert!(sent.contains("the token is [REDACTED]"), "{sent}");
    assert!(!sent.contains(TOKEN), "{sent}");
    assert!(!env.session_log().contains(TOKEN));
    assert!(!out.stdout.contains(TOKEN));
    dsh_testkit::fault_matrix(
        "secret",
        "a key printed by a hook",
        "redacted before the model, the log and the stream",
    );
}

#[test]
fn a_secret_cut_by_a_window_shows_no_part_and_the_full_output_file_holds_none() {
    // bash keeps the last 64,000 bytes: the window starts five bytes before the token ends.
    // The read cuts its line 2,000 characters in, six into the token.
    let big = format!("{}{TOKEN}{}", "a".repeat(70_000), "b".repeat(64_000 - 5));
    let line = format!("{}{TOKEN}\n", "x".repeat(1_994));
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            (
                "bash",
                json!({"command": "cat big.txt", "description": "show the big file"}),
            ),
            ("read", json!({"file_path": "line.txt"})),
        ]),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    env.write("big.txt", &big);
    env.write("line.txt", &line);
    let out = env.run(dsh(), &["--json", "show them"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let results = env.server.requests()[1].tool_results();
    let piece = &TOKEN[TOKEN.len() - 5..];
    assert!(!results[0].starts_with(piece), "{}", &results[0][..40]);
    assert!(results[0].contains("[output truncated; full output: "));
    let spill = results[0]
        .split("full output: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap();
    let full = std::fs::read_to_string(spill).unwrap();
    assert_eq!(full, big.replace(TOKEN, "[REDACTED]"));
    assert!(!results[1].contains(&TOKEN[..6]), "{}", results[1]);
    assert!(results[1].contains("... (line truncated to 2000 chars)"));
    for text in [&out.stdout, &env.session_log()] {
        assert!(!text.contains(piece) && !text.contains(&TOKEN[..6]));
    }
    dsh_testkit::fault_matrix(
        "secret",
        "a token cut by bash's kept window, read's line cut, and in bash's full-output file",
        "no part of it shows; the full-output file holds it redacted",
    );
}

#[test]
fn secrets_in_the_projects_other_env_files_and_urls_are_redacted_from_a_subfolder() {
    const STRIPE: &str = "sk_prod_77aa88bb99cc";
    const DB_PASSWORD: &str = "hunter2-but-longer";
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[(
            "bash",
            json!({"command": "cat ../.env.production ../.env; echo \"$DATABASE_URL\"",
                   "description": "print the settings"}),
        )]),
        Turn::text("done"),
    ]);
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    env.write(
        ".env.production",
        &format!("STRIPE_SECRET_KEY=\"{STRIPE}\"\n"),
    );
    env.write(
        ".env",
        &format!("DATABASE_URL=postgres://app:{DB_PASSWORD}@db:5432/app\n"),
    );
    env.write(".env.example", "STRIPE_SECRET_KEY=sk_example_placeholder\n");
    env.write("sub/README.md", "a subfolder\n");
    let mut command = env.command(dsh());
    command
        .current_dir(env.ws_path().join("sub"))
        .env(
            "DATABASE_URL",
            format!("postgres://app:{DB_PASSWORD}@db:5432/app"),
        )
        .args([
            "--json",
            "--permission-mode",
            "danger-full-access",
            "print them",
        ]);
    let out = dsh_testkit::RunOutput::of(&mut command);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let result = &env.server.requests()[1].tool_results()[0];
    assert!(
        !result.contains(STRIPE) && !result.contains(DB_PASSWORD),
        "{result}"
    );
    assert_eq!(result.matches("[REDACTED]").count(), 3, "{result}");
    // A template's values are placeholders, not secrets.
    assert!(!out.stdout.contains(STRIPE) && !out.stdout.contains(DB_PASSWORD));
    dsh_testkit::fault_matrix(
        "secret",
        "keys in the project root's .env.* files and a URL's password, started in a subfolder",
        "redacted in the next request and the stream",
    );
}

#[test]
fn a_command_that_holds_the_placeholder_is_refused() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "sed -i 's/^token=.*/token=[REDACTED]/' app.ini",
                   "description": "reset the token line"}),
        ),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    env.write("app.ini", &format!("token={TOKEN}\n"));
    let out = env.run(dsh(), &["tidy app.ini"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let refused = &env.server.requests()[1].tool_results()[0];
    assert!(
        refused.contains("through the variable that holds it"),
        "{refused}"
    );
    // Model-facing text: no runs of spaces left by lost line continuations.
    assert!(!refused.contains("  "), "{refused}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("app.ini")).unwrap(),
        format!("token={TOKEN}\n")
    );
    dsh_testkit::fault_matrix(
        "secret",
        "a command that would write the placeholder over a key",
        "refused; the file unchanged",
    );
}

/// The red team's attack on instruction files (issue 31): a command copies `.env` into an
/// `AGENTS.md`, in a subfolder the model then reads (a nested delivery), and an `AGENTS.md` and
/// a skill's description already hold the key when the run starts (a baseline delivery and the
/// skill catalog). Instructions and skills reach the model like tool results, so they are
/// redacted like them: no request (a subagent's included) and no log holds the key.
#[test]
fn secrets_copied_into_instruction_files_and_skills_are_redacted() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "mkdir -p sub && cp .env sub/AGENTS.md && echo x > sub/a.txt",
                   "description": "copy the keys"}),
        ),
        Turn::tool_call("read", json!({"file_path": "sub/a.txt"})),
        Turn::tool_call(
            "subagent",
            json!({"description": "look", "prompt": "read sub/a.txt"}),
        ),
        Turn::tool_call("read", json!({"file_path": "sub/a.txt"})),
        Turn::text("child done"),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    env.write("AGENTS.md", &format!("Use the key {TOKEN} for payments.\n"));
    env.write(
        ".dsh/skills/pay/SKILL.md",
        &format!("---\nname: pay\ndescription: Pay with {TOKEN}\n---\nPay.\n"),
    );
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let requests = env.server.requests();
    // The attack reached the model's context: the nested file was delivered to the top agent
    // and to the subagent (whose requests carry its prompt and not the top agent's calls).
    let delivered =
        |r: &&dsh_testkit::Request| r.body.to_string().contains("PAYMENT_API_TOKEN=[REDACTED]");
    let child = |r: &&dsh_testkit::Request| {
        let body = r.body.to_string();
        body.contains("read sub/a.txt") && !body.contains("copy the keys")
    };
    assert!(requests.iter().filter(child).any(|r| delivered(&r)));
    assert!(requests.iter().filter(|r| !child(r)).any(|r| delivered(&r)));
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("Use the key [REDACTED]")
    );
    assert!(requests[0].body.to_string().contains("Pay with [REDACTED]"));
    for (i, request) in requests.iter().enumerate() {
        assert!(!request.body.to_string().contains(TOKEN), "request {i}");
    }
    assert!(!env.session_logs().contains(TOKEN));
    assert!(!out.stdout.contains(TOKEN));
    dsh_testkit::fault_matrix(
        "secret",
        "a .env token copied into AGENTS.md (baseline, nested, subagent) and a skill description",
        "redacted in every request and log",
    );
}

/// Issue 47, item 3: a key `dsh login` saved for another provider, under a variable named like
/// no secret (`ZP_ACCESS`), and one the home's `.env` shadows, are secrets by what they are.
#[test]
fn keys_saved_for_any_provider_are_redacted_whatever_their_names() {
    let saved = "zpsaved0123456789abcdef";
    let shadowed = "zpshadowed0123456789abc";
    let home_env = "zphomeenv0123456789abcd";
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "notes.txt"})),
        Turn::text("done"),
    ]);
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.zp]\nkind = \"openai-completions\"\nbase_url = \"https://zp.example/v1\"\n\
         api_key_env = \"ZP_ACCESS\"\n",
    )
    .unwrap();
    std::fs::write(
        env.home.path().join("credentials"),
        format!("ZP_ACCESS={shadowed}\nOTHER_PROVIDER={saved}\n"),
    )
    .unwrap();
    std::fs::write(
        env.home.path().join(".env"),
        format!("ZP_ACCESS={home_env}\n"),
    )
    .unwrap();
    env.write(
        "notes.txt",
        &format!("pasted: {saved} and {shadowed} and {home_env}\n"),
    );
    let out = env.run(dsh(), &["--json", "what do the notes say?"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let results = env.server.requests()[1].tool_results();
    for secret in [saved, shadowed, home_env] {
        assert!(!out.stdout.contains(secret), "{secret} in the stream");
        assert!(!env.session_log().contains(secret), "{secret} in the log");
        assert!(!results[0].contains(secret), "{secret}: {}", results[0]);
    }
    dsh_testkit::fault_matrix(
        "secret",
        "keys saved by dsh login for other providers, under names like no secret, and one a .env shadows",
        "redacted in the log, the stream and the next request",
    );
}

/// The red team's finding 4 after issue 47: a header and an MCP server's env value in the
/// user's config, under names like no secret's (`X-Org`, `ZZ_CONF`), reached the model raw
/// through `read` of a link to the config and through an `AGENTS.md` linked to it (the whole
/// file in the instructions, with no call at all). Every header and env value the config holds
/// is a secret by value.
#[test]
fn config_values_under_any_name_are_redacted_when_the_config_is_read_or_given_as_instructions() {
    let header = "org-header-7781-xy";
    let env_value = "zz-conf-value-9921";
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "sub/cfg.toml"})),
        Turn::text("done"),
    ]);
    let config = env.home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.deepseek]\nheaders = {{ X-Org = \"{header}\" }}\n\
             [mcp.servers.off]\nenabled = false\ncommand = \"x\"\n\
             env = {{ ZZ_CONF = \"{env_value}\" }}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(env.ws_path().join("sub")).unwrap();
    for link in ["AGENTS.md", "sub/AGENTS.md", "sub/cfg.toml"] {
        std::os::unix::fs::symlink(&config, env.ws_path().join(link)).unwrap();
    }
    let out = env.run(dsh(), &["--json", "what does the config say?"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    // The links were followed: the config reached the model, its values blanked.
    let sent = requests[1].body.to_string();
    assert!(sent.contains("ZZ_CONF"), "{sent}");
    for secret in [header, env_value] {
        for (i, request) in requests.iter().enumerate() {
            let body = request.body.to_string();
            assert!(!body.contains(secret), "{secret} in request {i}: {body}");
        }
        assert!(!out.stdout.contains(secret), "{secret} in the stream");
        assert!(!env.session_log().contains(secret), "{secret} in the log");
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a header and an MCP env value under names like no secret's, read from the config through a link and an AGENTS.md linked to it",
        "redacted in every request, the stream and the log",
    );
}
