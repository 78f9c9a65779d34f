//! `dsh <command> --help` for every command, and the first words dsh does not take as a task.

use dsh_testkit::{TestEnv, Turn};

use crate::dsh;

/// The command words `dsh --help`'s usage lines start with.
fn command_words(help: &str) -> Vec<String> {
    let (_, usage) = help.split_once("Usage:\n").unwrap();
    let (usage, _) = usage.split_once("\n\n").unwrap();
    let mut words: Vec<String> = (usage.lines())
        .filter_map(|line| line.trim().strip_prefix("dsh "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .filter(|word| !word.starts_with('-'))
        .map(str::to_owned)
        .collect();
    words.dedup();
    words
}

#[test]
fn every_command_answers_help_with_its_own_options() {
    let env = TestEnv::new(vec![]);
    let help = env.run(dsh(), &["--help"]).stdout;
    let words = command_words(&help);
    for expected in ["rewind", "login", "workflow", "mcp", "sessions", "web"] {
        assert!(words.iter().any(|w| w == expected), "{words:?}");
    }
    for word in &words {
        for flag in ["--help", "-h"] {
            let out = env.run(dsh(), &[word, flag]);
            assert_eq!(out.code(), Some(0), "dsh {word} {flag}: {}", out.stderr);
            assert!(
                out.stdout.starts_with(&format!("dsh {word}: ")),
                "dsh {word} {flag}:\n{}",
                out.stdout
            );
        }
    }
    // Asked after the command's other words too, as a person adds it to what failed.
    let rewind = env
        .run(dsh(), &["rewind", "session-x", "--to", "2", "--help"])
        .stdout;
    for option in [
        "--to <turn>",
        "--files",
        "--before-call <call>",
        "--undo",
        "--yes",
        "--json",
    ] {
        assert!(rewind.contains(option), "{option} in\n{rewind}");
    }
    let web = env.run(dsh(), &["web", "--help"]).stdout;
    let web = web.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        web.contains("--port <n>") && web.contains("--open"),
        "{web}"
    );
    assert!(web.contains("those about one run"), "{web}");
    // A command's mistakes point at its own help, not the run's.
    for (args, help) in [
        (&["rewind", "session-x", "--soon"][..], "dsh rewind --help"),
        (&["mcp", "frob"], "dsh mcp --help"),
        (&["sessions"], "dsh sessions --help"),
        (&["--bogus"], "dsh --help"),
    ] {
        let out = env.run(dsh(), args);
        assert_eq!(out.code(), Some(1));
        assert!(
            out.stderr.ends_with(&format!(" (see {help})\n")),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert!(env.server.requests().is_empty());
}

/// Another agent's habit (`codex exec "task"`) is told what `exec` is not, instead of being run
/// as the task "exec task"; after `--` the word is a task word.
#[test]
fn exec_is_not_taken_as_a_task_word() {
    let env = TestEnv::new(vec![Turn::text("ran")]);
    for args in [&["exec", "fix the tests"][..], &["exec", "--json", "x"]] {
        let out = env.run(dsh(), args);
        assert_eq!(out.code(), Some(1), "{args:?}");
        assert!(
            out.stderr.starts_with("dsh: `exec` is not a dsh command:"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("(dsh -- exec ...)"), "{}", out.stderr);
    }
    let json = env.run(dsh(), &["exec", "--json", "x"]);
    assert_eq!(json.events()[0]["code"], "USAGE");
    assert!(env.server.requests().is_empty());
    let out = env.run(dsh(), &["--", "exec", "x"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let sent = env.server.requests()[0].messages().to_vec();
    assert!(
        sent.iter().any(|m| m.to_string().contains("exec x")),
        "{sent:?}"
    );
}
