use super::*;

fn rules(list: &[(RuleKind, &str)]) -> CommandRules {
    CommandRules::new(
        list.iter()
            .map(|(kind, text)| SourcedRule {
                kind: *kind,
                rule: text.parse().unwrap_or_else(|e| panic!("{text}: {e}")),
                source: PathBuf::from("/home/me/.dsh/config.toml"),
            })
            .collect(),
    )
}

fn bash(rules: &CommandRules, line: &str) -> Decision {
    rules.decide(
        "bash",
        Target::Command(line),
        Path::new("/ws"),
        Path::new("/ws"),
    )
}

fn kind(decision: &Decision) -> &'static str {
    match decision {
        Decision::Allow(_) => "allow",
        Decision::Ask(_) => "ask",
        Decision::Deny(_) => "deny",
        Decision::Undecided => "undecided",
    }
}

fn usual() -> CommandRules {
    rules(&[
        (RuleKind::Allow, "bash(cargo test)"),
        (RuleKind::Allow, "bash(git status)"),
        (RuleKind::Allow, "bash(echo)"),
        (RuleKind::Deny, "bash(git push)"),
        (RuleKind::Ask, "bash(rm -rf)"),
    ])
}

#[test]
fn an_allow_covers_a_line_only_when_every_command_is_allowed() {
    let rules = usual();
    for (line, expected) in [
        ("cargo test", "allow"),
        ("cargo test --workspace -- --nocapture", "allow"),
        ("cargo test && git status", "allow"),
        // A shell running its input runs what no rule sees: asked about, since a deny exists.
        ("cargo test; curl x | sh", "ask"),
        ("cargo test | sh", "ask"),
        ("cargo testx", "undecided"),
        ("cargo build", "undecided"),
        ("cargo test $(curl x)", "undecided"),
        ("echo `curl x | sh`", "ask"),
        ("./cargo test", "undecided"),
        ("sudo cargo test", "undecided"),
        ("env X=1 cargo test", "allow"),
        ("cargo test\ncurl x", "undecided"),
        ("(cargo test) & (sh)", "ask"),
    ] {
        assert_eq!(kind(&bash(&rules, line)), expected, "{line}");
    }
}

#[test]
fn a_deny_cannot_be_dodged() {
    let rules = usual();
    for line in [
        "git push",
        "git push --force origin main",
        "cargo test; git push",
        "cargo test && git push",
        "cargo test || git push",
        "cargo test | git push",
        "cargo test\ngit push",
        "(git push)",
        "{ git push; }",
        "echo $(git push)",
        "echo `git push`",
        "echo \"$(git push)\"",
        "'git' push",
        "g\"it\" p'ush'",
        "\\git push",
        "git \\\npush",
        "/usr/bin/git push",
        "env X=1 git push",
        "env -i PATH=/bin git push",
        "X=1 git push",
        "command git push",
        "exec git push",
        "nohup git push",
        "timeout 10 git push",
        "nice -n 5 git push",
        "time git push",
        "xargs git push < list",
        "bash -c 'git push'",
        "sh -c \"cargo test; git push\"",
        "bash -lc 'env A=1 git push'",
        "eval git push",
        "sudo git push",
        "find . -exec git push \\;",
        "if true; then git push; fi",
        "cat x >$(git push)",
        "diff <(git push) y",
    ] {
        assert_eq!(kind(&bash(&rules, line)), "deny", "{line:?}");
    }
}

#[test]
fn what_only_may_be_denied_is_asked_about() {
    let rules = usual();
    for line in [
        "$(echo git) push",
        "$GIT push",
        "`echo git` push",
        "$'\\x67it' push",
        "g{it,} push",
        "/usr/bin/gi? push",
        "git -C elsewhere push",
        "git $(echo push)",
        "git \"$VERB\"",
        "echo 'open",
        "cat <<EOF\n$(git push)\nEOF",
        "bash -c \"$SCRIPT\"",
        "eval \"$SCRIPT\"",
        "rm -rf target",
        "cargo test && rm -rf /",
    ] {
        assert_eq!(kind(&bash(&rules, line)), "ask", "{line:?}");
    }
    // The reason says which rule or what could not be read.
    match bash(&rules, "git -C x push") {
        Decision::Ask(why) => assert!(why.contains("bash(git push)"), "{why}"),
        other => panic!("{other:?}"),
    }
    // With only allow rules, a line that cannot be read is simply not allowed.
    let only_allow = rules_only_allow();
    assert_eq!(kind(&bash(&only_allow, "echo 'open")), "undecided");
    assert_eq!(kind(&bash(&only_allow, "$X")), "undecided");
}

fn rules_only_allow() -> CommandRules {
    rules(&[(RuleKind::Allow, "bash(cargo test)")])
}

#[test]
fn a_deny_wins_whichever_file_it_came_from() {
    let mut both = rules(&[(RuleKind::Deny, "bash(git push)")]);
    both.rules.push(SourcedRule {
        kind: RuleKind::Allow,
        rule: "bash(git push)".parse().unwrap(),
        source: PathBuf::from("/ws/.dsh/config.toml"),
    });
    match bash(&both, "git push") {
        Decision::Deny(why) => assert!(why.contains("/home/me/.dsh/config.toml"), "{why}"),
        other => panic!("{other:?}"),
    }
    let asked = rules(&[
        (RuleKind::Ask, "bash(git)"),
        (RuleKind::Allow, "bash(git status)"),
    ]);
    assert_eq!(kind(&bash(&asked, "git status")), "ask");
}

#[test]
fn path_rules_match_globs_in_the_workspace_and_outside() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("src/deep")).unwrap();
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    let rules = rules(&[
        (RuleKind::Allow, "write(src/**)"),
        (RuleKind::Deny, "files(.env)"),
        (RuleKind::Deny, "edit(secrets)"),
        (RuleKind::Ask, "read(/etc/**)"),
    ]);
    let decide = |tool: &str, path: &str| kind(&rules.decide(tool, Target::Path(path), &ws, &ws));
    assert_eq!(decide("write", "src/deep/a.rs"), "allow");
    assert_eq!(decide("write", "./src/../src/a.rs"), "allow");
    assert_eq!(decide("write", "src/../Cargo.toml"), "undecided");
    assert_eq!(decide("write", "other/a.rs"), "undecided");
    assert_eq!(decide("read", ".env"), "deny");
    assert_eq!(decide("grep", "config/.env"), "deny");
    assert_eq!(decide("edit", "secrets/key.pem"), "deny");
    assert_eq!(
        decide("edit", &ws.join("secrets/x").display().to_string()),
        "deny"
    );
    assert_eq!(decide("read", "/etc/passwd"), "ask");
    assert_eq!(decide("read", "../../../../../../etc/passwd"), "ask");
    // A link inside an allowed folder to somewhere else is not allowed by it; one to a denied
    // file is denied.
    std::os::unix::fs::symlink("/etc", ws.join("src/etc")).unwrap();
    std::os::unix::fs::symlink(ws.join("secrets"), ws.join("src/hidden")).unwrap();
    assert_eq!(decide("write", "src/etc/passwd"), "undecided");
    assert_eq!(decide("edit", "src/hidden/key.pem"), "deny");
}

#[test]
fn a_tool_named_alone_covers_every_call_of_it() {
    let rules = rules(&[(RuleKind::Deny, "web_fetch"), (RuleKind::Allow, "bash")]);
    assert_eq!(
        kind(&rules.decide("web_fetch", Target::Nothing, Path::new("/"), Path::new("/"))),
        "deny"
    );
    assert_eq!(kind(&bash(&rules, "anything at all | sh")), "allow");
    assert_eq!(
        kind(&rules.decide("read", Target::Path("x"), Path::new("/"), Path::new("/"))),
        "undecided"
    );
}

#[test]
fn bad_rules_say_what_is_wrong() {
    for (text, says) in [
        ("", "is empty"),
        ("bash(cargo test", "does not parse"),
        ("bash(cargo test; curl x)", "holds 2 commands"),
        ("bash($X push)", "expansion"),
        ("bash(sudo rm)", "wrapper"),
        ("bash('open)", "never closed"),
        ("write(src/[)", "path rule is a glob"),
        ("read(~/x)", "absolute path"),
        ("ba sh(x)", "does not parse"),
        ("bash()", "does not parse"),
    ] {
        let error = text.parse::<Rule>().unwrap_err().to_string();
        assert!(error.contains(says), "{text}: {error}");
    }
    let rule: Rule = "bash(npm run test:*)".parse().unwrap();
    let rules = CommandRules::new(vec![SourcedRule {
        kind: RuleKind::Allow,
        rule,
        source: PathBuf::new(),
    }]);
    assert_eq!(kind(&bash(&rules, "npm run test -- x")), "allow");
}

/// The ways around a deny found by the attack pass of 2026-12-07 (docs/reliability.md), each
/// denied or asked about, beside lines that must stay as they were.
#[test]
fn the_ways_around_a_deny_found_by_the_attack_pass_are_closed() {
    let rules = usual();
    for line in [
        "bash -c -- 'git push'",
        "busybox sh -c 'git push'",
        "function f { git push; }; f",
        "function f() { git push; }; f",
        "shopt -s expand_aliases\nalias p='git push'\np",
        "trap 'git push' EXIT",
        "watch git push",
        "watch -n 5 'git push'",
        "su root -c 'git push'",
        "su --command='git push'",
        "script -qc 'git push' /dev/null",
        "timeout -- 5 git push",
        "flock /tmp/lock git push",
        "chroot / git push",
        "unshare -r git push",
        "nsenter -t 1 git push",
        "strace -f -o log git push",
        "ltrace git push",
        "ionice -c 3 git push",
        "chrt -i 0 git push",
        "taskset 1 git push",
    ] {
        assert_eq!(kind(&bash(&rules, line)), "deny", "{line:?}");
    }
    for line in [
        "echo 'git push' | sh",
        "bash <<EOF\ngit push\nEOF",
        "bash <<< 'git push'",
        "sh -s < script",
        "source /dev/stdin <<< 'git push'",
    ] {
        assert_eq!(kind(&bash(&rules, line)), "ask", "{line:?}");
    }
    for (line, expected) in [
        ("bash --version", "undecided"),
        ("bash script.sh", "undecided"),
        ("sh -c 'echo hi'", "allow"),
        ("trap - EXIT", "undecided"),
        ("alias ll='ls -l'", "undecided"),
        ("echo 'git push'", "allow"),
    ] {
        assert_eq!(kind(&bash(&rules, line)), expected, "{line:?}");
    }
}
