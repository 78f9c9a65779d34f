//! `dsh completions bash|zsh|fish` and `dsh man`, drawn from the definition `--help` is drawn
//! from: each script is loaded by its own shell and completes options, their values and the
//! first word; the man page is read by groff without a warning. Without a shell (or groff)
//! its test is skipped with a note, unless `DSH_TEST_REQUIRE_SHELLS=1` (CI) makes that a
//! failure.

use std::process::Command;

use dsh_testkit::TestEnv;

use crate::dsh;

/// Whether `program` runs here; a failure when CI requires it.
fn have(program: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("DSH_TEST_REQUIRE_SHELLS").is_none(),
            "{program} is required (DSH_TEST_REQUIRE_SHELLS is set) but cannot be run"
        );
    }
    found
}

/// The script for `shell`, written to a file.
fn script(env: &TestEnv, shell: &str) -> std::path::PathBuf {
    let out = env.run(dsh(), &["completions", shell]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let path = env.home.path().join(format!("dsh.{shell}"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

fn output(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completes_options_their_values_and_commands() {
    if !have("bash") {
        return;
    }
    let env = TestEnv::new(vec![]);
    let path = script(&env, "bash");
    let complete = |words: &str| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _dsh; \
             echo \"${{COMPREPLY[*]}}\"",
            path.display()
        );
        output(Command::new("bash").args(["-c", &program]))
            .trim()
            .to_owned()
    };
    assert_eq!(complete("dsh --perm"), "--permission-mode");
    assert_eq!(complete("dsh --permission-mode d"), "danger-full-access");
    assert_eq!(complete("dsh --effort m"), "max");
    assert_eq!(complete("dsh sess"), "sessions");
    assert!(complete("dsh -").split(' ').any(|o| o == "-o"));
    // A command's own options, after its word.
    assert_eq!(complete("dsh rewind session-x --fo"), "--force");
    assert_eq!(complete("dsh mcp login docs --no"), "--no-browser");
    assert_eq!(complete("dsh web --op"), "--open");
    assert_eq!(complete("dsh web --perm"), "--permission-mode");
    assert_eq!(
        complete("dsh --fo"),
        "--fork",
        "rewind's --force is its own"
    );
}

#[test]
fn zsh_and_fish_load_their_scripts() {
    let env = TestEnv::new(vec![]);
    if have("zsh") {
        let path = script(&env, "zsh");
        output(Command::new("zsh").arg("-n").arg(&path));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("#compdef dsh"), "{text}");
        assert!(
            text.contains("--effort'[Reasoning effort]:<level>:(off low high max)'"),
            "{text}"
        );
    }
    if have("fish") {
        let path = script(&env, "fish");
        let program = format!("source {}; complete -C'dsh --effort '", path.display());
        let offered = output(Command::new("fish").args(["-c", &program]));
        let values: Vec<&str> = offered
            .lines()
            .map(|l| l.split('\t').next().unwrap())
            .collect();
        assert_eq!(values, ["high", "low", "max", "off"]);
        let program = format!("source {}; complete -C'dsh rewind s --fo'", path.display());
        let offered = output(Command::new("fish").args(["-c", &program]));
        assert!(offered.starts_with("--force\t"), "{offered}");
    }
    let bad = env.run(dsh(), &["completions", "tcsh"]);
    assert_eq!(bad.code(), Some(1));
    assert!(bad.stderr.contains("bash, zsh or fish"), "{}", bad.stderr);
}

#[test]
fn the_man_page_is_read_without_a_warning_and_lists_every_option() {
    let env = TestEnv::new(vec![]);
    let out = env.run(dsh(), &["man"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(out.stdout.starts_with(".TH DSH 1"), "{}", out.stdout);
    let mut help = env.run(dsh(), &["--help"]).stdout;
    // And every command's own options.
    for word in [
        "login", "sessions", "rewind", "workflow", "web", "mcp", "sandbox",
    ] {
        help.push_str(&env.run(dsh(), &[word, "--help"]).stdout);
    }
    for option in help.split_whitespace().filter(|w| w.starts_with("--")) {
        let option = option.trim_end_matches([',', ')', ';']);
        if option
            .chars()
            .skip(2)
            .all(|c| c.is_ascii_lowercase() || c == '-')
        {
            assert!(
                out.stdout.contains(&option.replace('-', "\\-")),
                "{option} is in --help but not in the man page"
            );
        }
    }
    if !have("groff") {
        return;
    }
    let page = env.home.path().join("dsh.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let checked = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(checked.status.success());
    assert_eq!(String::from_utf8_lossy(&checked.stderr), "", "groff warned");
}
