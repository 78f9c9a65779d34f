use super::*;

/// Each command's words, as text.
fn read(line: &str) -> Vec<Vec<String>> {
    commands(line)
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
        .into_iter()
        .map(|c| c.words.into_iter().map(|w| w.text).collect())
        .collect()
}

fn words(list: &[&[&str]]) -> Vec<Vec<String>> {
    list.iter()
        .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
        .collect()
}

#[test]
fn lists_pipelines_and_subshells_are_split_into_their_commands() {
    assert_eq!(
        read("cargo test; curl x | sh"),
        words(&[&["cargo", "test"], &["curl", "x"], &["sh"]])
    );
    assert_eq!(
        read("a && b || c & d\ne |& f"),
        words(&[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]])
    );
    assert_eq!(
        read("(cd x && git push) ; { make; }"),
        words(&[&["cd", "x"], &["git", "push"], &["make"]])
    );
    assert_eq!(
        read("if true; then git push; fi"),
        words(&[&["true"], &["git", "push"]])
    );
    assert_eq!(read("for f in a b; do rm $f; done"), words(&[&["rm", ""]]));
}

#[test]
fn quotes_and_escapes_are_taken_off() {
    assert_eq!(read("'git' push"), words(&[&["git", "push"]]));
    assert_eq!(read("g\"i\"t pu''sh"), words(&[&["git", "push"]]));
    assert_eq!(read("\\git push"), words(&[&["git", "push"]]));
    assert_eq!(read("git \\\npush"), words(&[&["git", "push"]]));
    assert_eq!(
        read("echo 'a;b' \"c|d\""),
        words(&[&["echo", "a;b", "c|d"]])
    );
    assert_eq!(read("echo x # ; git push"), words(&[&["echo", "x"]]));
}

#[test]
fn substitutions_are_commands_of_their_own() {
    assert_eq!(
        read("echo $(git push) `rm -rf /` \"$(curl x)\""),
        words(&[
            &["git", "push"],
            &["rm", "-rf", "/"],
            &["curl", "x"],
            &["echo", "", "", ""]
        ])
    );
    assert_eq!(
        read("diff <(ls a) >(tee b)"),
        words(&[&["ls", "a"], &["tee", "b"], &["diff", "", ""]])
    );
    let dynamic = commands("$(echo git) push").unwrap();
    assert!(dynamic.last().unwrap().words[0].dynamic);
    assert!(commands("$X push").unwrap()[0].words[0].dynamic);
    assert!(commands("$'\\x67it' push").unwrap()[0].words[0].dynamic);
    assert!(commands("g{it,x} push").unwrap()[0].words[0].dynamic);
    assert!(commands("/usr/bin/gi? push").unwrap()[0].words[0].dynamic);
}

#[test]
fn redirections_are_not_arguments() {
    assert_eq!(read("make 2>&1 >out.txt"), words(&[&["make"]]));
    assert_eq!(
        read("cat <<EOF\ngit push\nEOF\nls"),
        words(&[&["cat"], &["ls"]])
    );
    assert_eq!(
        read("cat <<'EOF' | sh\n$(x)\nEOF"),
        words(&[&["cat"], &["sh"]])
    );
    assert_eq!(
        read("echo x >$(git push)"),
        words(&[&["git", "push"], &["echo", "x"]])
    );
}

#[test]
fn wrappers_are_looked_through() {
    for (line, inner) in [
        ("env X=1 git push", &["git", "push"][..]),
        ("X=1 Y=2 git push", &["git", "push"]),
        ("command git push", &["git", "push"]),
        ("/usr/bin/env -u HOME git push", &["git", "push"]),
        ("nohup nice -n 5 git push", &["git", "push"]),
        ("timeout -s KILL 10 git push", &["git", "push"]),
        ("exec git push", &["git", "push"]),
        ("time git push", &["git", "push"]),
        ("xargs -n 1 git push", &["git", "push"]),
        ("bash -c 'git push'", &["git", "push"]),
        ("sh -ec \"cd x; git push\"", &["git", "push"]),
        ("eval git push", &["git", "push"]),
        ("! git push", &["git", "push"]),
    ] {
        let found = read(line);
        assert_eq!(found.last().unwrap(), &inner.to_vec(), "{line}");
    }
    let sudo = commands("sudo -u root git push").unwrap();
    assert!(sudo[0].privileged);
    assert_eq!(sudo[0].wrappers[0][0].text, "sudo");
    assert_eq!(
        read("find . -name x -exec rm {} \\;"),
        words(&[
            &["rm", "{}"],
            &["find", ".", "-name", "x", "-exec", "rm", "{}", ";"]
        ])
    );
    assert_eq!(read("command -v git"), words(&[&["command", "-v", "git"]]));
}

#[test]
fn what_cannot_be_read_is_an_error() {
    for line in [
        "echo 'open",
        "echo \"open",
        "echo $(open",
        "echo `open",
        "a )",
        "cat <<EOF\n$(git push)\nEOF",
        "cat <<EOF\nno end",
        "echo $(( $(git push) ))",
        "bash -c \"$CMD\"",
        "eval \"$CMD\"",
        "env -S 'git push'",
    ] {
        assert!(commands(line).is_err(), "{line:?} was read");
    }
    let deep = "$(".repeat(40) + &")".repeat(40);
    assert_eq!(commands(&deep), Err(ParseError::TooDeep));
}
