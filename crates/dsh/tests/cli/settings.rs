//! `--dump-config` says what a run will do: every value in effect with its source, and the
//! run agrees with it.

use std::collections::{BTreeMap, BTreeSet};

use dsh_testkit::{RunOutput, TestEnv, Turn};
use pretty_assertions::assert_eq;

use crate::dsh;

/// `key -> (value, source)` of a dump.
fn parse_rows(stdout: &str) -> BTreeMap<String, (String, String)> {
    stdout
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (assignment, source) = line.rsplit_once("  # ").unwrap();
            let (key, value) = assignment.split_once(" = ").unwrap();
            (
                key.to_owned(),
                (value.trim().to_owned(), source.trim().to_owned()),
            )
        })
        .collect()
}

#[test]
fn with_no_config_files_every_value_in_effect_is_shown_with_defaults_marked() {
    let env = TestEnv::new(vec![]);
    let out = RunOutput::of(
        env.command(dsh())
            .env("HOME", env.home.path())
            .arg("--dump-config"),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The key's value is never printed, only where it was found.
    assert!(!out.stdout.contains("test-key"), "{}", out.stdout);
    let text = out
        .stdout
        .replace(&env.server.base_url(), "$BASE_URL")
        .replace(&env.home.path().display().to_string(), "$HOME")
        .replace(&env.ws.path().display().to_string(), "$WS");
    insta::assert_snapshot!(text);
}

#[test]
fn flags_and_the_environment_show_as_the_source_of_what_they_set() {
    let env = TestEnv::new(vec![]);
    let out = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "read-only")
            .args([
                "--dump-config",
                "--approval-policy",
                "never",
                "--effort=low",
            ]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let rows = parse_rows(&out.stdout);
    let row = |key: &str| rows[key].clone();
    assert_eq!(
        row("sandbox.mode"),
        ("\"read-only\"".into(), "DSH_PERMISSION_MODE".into())
    );
    assert_eq!(
        row("approval.policy"),
        ("\"never\"".into(), "--approval-policy".into())
    );
    assert_eq!(row("effort"), ("\"low\"".into(), "--effort".into()));
    assert_eq!(
        row("route.base_url"),
        (
            format!("{:?}", env.server.base_url()),
            "DEEPSEEK_BASE_URL".into()
        )
    );
    assert_eq!(
        row("route.api_key"),
        ("\"[hidden]\"".into(), "DEEPSEEK_API_KEY".into())
    );
    // Without a key the dump still answers, and says which variable to set.
    let out = RunOutput::of(
        env.command(dsh())
            .env_remove("DEEPSEEK_API_KEY")
            .arg("--dump-config"),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        parse_rows(&out.stdout)["route.api_key"].0,
        "\"not set: DEEPSEEK_API_KEY\""
    );
}

/// The keys docs/config.md's table names, with its shorthand spelled out
/// (`` `models."<name>".max_output_tokens`, `.reasoning_effort` `` is two keys).
fn documented_keys() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md"),
    )
    .unwrap();
    let (_, table) = doc.split_once("\n## Keys\n").unwrap();
    let table = table.split("\n## ").next().unwrap();
    let mut keys = BTreeSet::new();
    for row in table.lines().filter(|line| line.starts_with("| `")) {
        let cell = row.split('|').nth(1).unwrap();
        let named: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let parent = named[0].rsplit_once('.').map_or("", |(parent, _)| parent);
        for key in named {
            keys.insert(match key.strip_prefix('.') {
                Some(last) => format!("{parent}.{last}"),
                None => key.to_owned(),
            });
        }
    }
    keys
}

/// A dump's row as docs/config.md names its key: a server's, a route's, a model's or a
/// folder's own name becomes the table's placeholder.
fn as_documented(key: &str) -> String {
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["mcp", "servers", ..] => "mcp.servers.<name>.*".to_owned(),
        ["providers", ..] => "providers.<name>.*".to_owned(),
        ["models", _, field, ..] => format!("models.\"<name>\".{field}"),
        ["projects", _, field] => format!("projects.\"<path>\".{field}"),
        _ => key.to_owned(),
    }
}

/// Every key a config file can set is in docs/config.md's table, and the table names no key
/// that `--dump-config` does not show: the dump of files that set every kind of table (a
/// route, a model, an MCP server, a trusted folder, each search backend) against the table.
#[test]
fn dump_config_and_the_documented_keys_name_the_same_keys() {
    let env = TestEnv::new(vec![]);
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.local]\nkind = \"openai-completions\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
         [models.m1]\nmax_output_tokens = 100\nreasoning_effort = true\n\
         system_role = \"developer\"\ncontext_window = 1000\nimage_input = true\n\
         prices = { input = 1.0, output = 2.0 }\n\
         [mcp.servers.srv]\ncommand = \"true\"\n\
         [projects.\"/nowhere\"]\ntrusted = false\n",
    )
    .unwrap();
    env.write("brave.toml", "[web.search]\nprovider = \"brave\"\n");
    let mut shown = BTreeSet::new();
    for patches in [&[][..], &["--patch", "brave.toml"][..]] {
        let out = RunOutput::of(
            env.command(dsh())
                .env("HOME", env.home.path())
                .arg("--dump-config")
                .args(patches),
        );
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
        shown.extend(parse_rows(&out.stdout).keys().map(|key| as_documented(key)));
    }
    // Rows that are no key of a file: what the run resolves (`home`, the route, the tools
    // offered, the workspace's trust) and what only flags set (docs/cli.md has those).
    let not_keys = [
        "home",
        "tools",
        "max_steps",
        "max_turns",
        "max_budget_usd",
        "output_schema",
        "sandbox.add_dirs",
        "project.trust",
    ];
    shown.retain(|key| !not_keys.contains(&key.as_str()) && !key.starts_with("route."));
    let documented = documented_keys();
    let undocumented: Vec<_> = shown.difference(&documented).collect();
    let unshown: Vec<_> = documented.difference(&shown).collect();
    assert!(
        undocumented.is_empty() && unshown.is_empty(),
        "--dump-config shows keys docs/config.md's table lacks: {undocumented:?}; the table \
         names keys --dump-config does not show: {unshown:?}"
    );
}

/// The same files, environment and flags, dumped and then run: every setting the run's
/// requests and log show is the one the dump printed.
#[test]
fn a_run_does_what_dump_config_says() {
    let env = TestEnv::new(vec![Turn::text("done")]);
    env.write(
        ".dsh/config.toml",
        "model = \"deepseek-v4-pro\"\neffort = \"max\"\n[tools]\nstr_replace_editor = true\n\
         [sessions]\ncompression = \"zstd\"\n[sandbox]\nnetwork = false\n\
         [models.\"deepseek-v4-pro\"]\nmax_output_tokens = 777\n",
    );
    env.write("AGENTS.md", "Be brief.\n");
    env.write(
        "patch.toml",
        "[instructions]\nenabled = false\n[approval]\npolicy = \"never\"\n",
    );
    let args = ["--patch", "patch.toml", "--permission-mode", "read-only"];
    let command = || {
        let mut command = env.command(dsh());
        command.env("HOME", env.home.path()).args(args);
        command
    };
    let dump = RunOutput::of(command().arg("--dump-config"));
    assert_eq!(dump.code(), Some(0), "stderr: {}", dump.stderr);
    let rows = parse_rows(&dump.stdout);
    let value = |key: &str| rows[key].0.clone();
    let out = RunOutput::of(command().arg("go"));
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let body = &requests[0].body;

    // The route: the server reached (the base URL), the model, its output cap, the effort.
    assert_eq!(
        value("route.base_url"),
        format!("{:?}", env.server.base_url())
    );
    assert_eq!(value("route.model"), format!("{}", body["model"]));
    assert_eq!(
        value("route.max_output_tokens"),
        body["max_tokens"].to_string()
    );
    assert_eq!(value("effort"), format!("{}", body["reasoning_effort"]));
    // The tools offered, in order.
    let offered: Vec<String> = requests[0]
        .tool_names()
        .iter()
        .map(|name| format!("{name:?}"))
        .collect();
    assert_eq!(value("tools"), format!("[{}]", offered.join(", ")));
    // The sandbox and approval settings, as the system prompt states them to the model.
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(value("sandbox.mode"), "\"read-only\"");
    assert!(system.contains("Sandbox: read-only."), "{system}");
    assert_eq!(value("sandbox.network"), "false");
    assert!(
        system.contains("Commands have no network access."),
        "{system}"
    );
    assert_eq!(value("approval.policy"), "\"never\"");
    assert!(system.contains("Approval policy: never."), "{system}");
    // Instructions switched off: AGENTS.md is not sent.
    assert_eq!(value("instructions.enabled"), "false");
    assert!(!body.to_string().contains("Be brief."));
    // The log is written as the dump says.
    assert_eq!(value("sessions.compression"), "\"zstd\"");
    let logs: Vec<_> = walk(&env.home.path().join("sessions"));
    assert!(
        logs.iter().any(|p| p.ends_with("session.jsonl.zst")),
        "{logs:?}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
