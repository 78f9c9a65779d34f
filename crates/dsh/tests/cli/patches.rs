//! The reference's YAML patch rows (`--patch layer.yml`), translated onto dsh's keys.

use dsh_testkit::{RunOutput, TestEnv, Turn};
use serde_json::json;

use crate::dsh;

const SUPERVISOR: &str = include_str!("../fixtures/supervisor.patch.yml");

#[test]
fn a_supervisor_s_row_layer_drives_a_session() {
    let Some(server) = dsh_testkit::mcp::everything() else {
        return;
    };
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__hermit__echo", json!({"message": "from the adapter"})),
        Turn::text("done"),
    ]);
    env.write("layer.yml", SUPERVISOR);
    // The workspace is inside a repository whose instructions and skills must not reach it.
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    env.write("AGENTS.md", "REPOSITORY RULES\n");
    env.write(
        ".agents/skills/repo-skill/SKILL.md",
        "---\nname: repo-skill\ndescription: from the repository\n---\nbody\n",
    );
    env.write("task/AGENTS.md", "TASK RULES\n");
    env.write(
        "task/.dsh/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy the adapter\n---\nsteps\n",
    );
    let layer = env.ws_path().join("layer.yml");
    let out = RunOutput::of(
        env.command(dsh())
            .current_dir(env.ws_path().join("task"))
            .env("HERMIT_BASE_URL", format!("{}/v1", env.server.base_url()))
            .env("HERMIT_MCP_COMMAND", &server)
            .env("HERMIT_DSH_NO_KEY", "local")
            .args(["--patch", layer.to_str().unwrap(), "--json", "go"]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let first = &requests[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.headers["authorization"], "Bearer local");
    assert_eq!(first.body["model"], "scripted-model");
    assert!(first.body.get("reasoning_effort").is_none());
    assert_eq!(first.body["max_tokens"], 8192);
    let names = first.tool_names();
    assert!(names.contains(&"mcp__hermit__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"skill".to_owned()), "{names:?}");
    let sent = first.body.to_string();
    assert!(sent.contains("TASK RULES"));
    assert!(sent.contains("deploy"));
    assert!(!sent.contains("REPOSITORY RULES"));
    assert!(!sent.contains("repo-skill"));
    assert_eq!(requests[1].tool_results(), ["Echo: from the adapter"]);
    // Plain transcripts.
    let logs = env.session_logs();
    assert!(logs.contains("\"turn/start\""), "{logs}");
    let dirs: Vec<_> = walk(&env.home.path().join("sessions"));
    assert!(
        dirs.iter().any(|p| p.ends_with("session.jsonl")),
        "{dirs:?}"
    );
    assert!(!dirs.iter().any(|p| p.to_string_lossy().ends_with(".zst")));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn dump_config_shows_what_the_rows_became_and_what_was_switched_off() {
    let env = TestEnv::new(Vec::new());
    env.write("layer.yml", SUPERVISOR);
    let out = RunOutput::of(
        env.command(dsh())
            .env("HERMIT_BASE_URL", "http://127.0.0.1:9/v1")
            .env("HERMIT_MCP_COMMAND", "/opt/tools/server")
            .args(["--patch", "layer.yml", "--dump-config"]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let home = env.home.path().display().to_string();
    let text = out.stdout.replace(&home, "$HOME");
    insta::assert_snapshot!(text.replace(&env.ws.path().display().to_string(), "$WS"));
}

#[test]
fn rows_dsh_cannot_honour_are_errors_naming_the_row_and_line() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    for (yaml, expected) in [
        (
            "- id: session-title\n  disabled: false\n",
            "line 1: row session-title is a part dsh does not have; only `disabled: true` is accepted for it",
        ),
        (
            "- id: bash-sandbox\n  disabled: true\n",
            "line 1: row bash-sandbox cannot be switched off: dsh always has this part",
        ),
        (
            "- id: session-title\n  disabled: true\n- id: agent-default-model\n  config:\n    provider: p\n    model: m\n    temperature: 1\n",
            "line 3: the field temperature of row agent-default-model has no translation onto dsh's keys",
        ),
        (
            "- insert:\n    - id: x\n      name: '@deepseek-ai/dsh-lsp-stdio'\n",
            "line 2: inserted row of package \"@deepseek-ai/dsh-lsp-stdio\" has no translation onto dsh",
        ),
        (
            "- id: llm-pi-ai\n  config:\n    providers:\n      r:\n        baseURL: http://h\n",
            "providers.r names no api: dsh has no model catalog",
        ),
        (
            "- id: session-persistence-jsonl\n  config:\n    root: /elsewhere\n",
            "root \"/elsewhere\": dsh keeps sessions in $DSH_HOME/sessions",
        ),
        (
            "- id: agent-default-model\n  config:\n    provider: !!js ctx.headlessStartup.provider\n    model: m\n",
            "has the value !!js ctx.headlessStartup.provider, which dsh cannot evaluate",
        ),
        (
            "- id: agent-default-model\n  config:\n    provider: p\n    model: m\n    reasoningEffort: medium\n",
            "reasoningEffort \"medium\" is not an effort dsh has (off, low, high, max)",
        ),
        (
            "# nothing\n",
            "is empty: a patch file is a YAML list of rows; write [] for an empty layer",
        ),
        (
            "- id: agent\n  intercept: {}\n",
            "the row field `intercept` is not supported",
        ),
        (
            "- id: tool-web\n  config:\n    search: true\n    searchMaxResults: 4\n",
            "the field searchMaxResults of row tool-web has no translation onto dsh's keys",
        ),
        (
            "- insert:\n    - name: '@deepseek-ai/dsh-mcp-client'\n      config:\n        serverName: tools\n        command: x\n",
            "MCP server tools: needs `transport`: stdio (with command) or streamable-http (with url)",
        ),
        (
            "- insert:\n    - id: t\n      name: '@deepseek-ai/dsh-mcp-client'\n      config:\n        serverName: tools\n        transport: stdio\n        command: x\n- id: t\n  config:\n    serverName: other\n    transport: stdio\n    command: y\n",
            "line 8: the row's serverName \"other\" differs from the server \"tools\" it targets",
        ),
        (
            // Values of env and headers are not quoted back: they carry secrets.
            "- insert:\n    - name: '@deepseek-ai/dsh-mcp-client'\n      config:\n        serverName: tools\n        transport: stdio\n        command: x\n        env: [GITHUB_TOKEN=ghp_secret1]\n",
            "env must be a mapping of names to strings, got a list",
        ),
    ] {
        env.write("layer.yml", yaml);
        let out = env.run(dsh(), &["--patch", "layer.yml", "go"]);
        assert_eq!(out.code(), Some(1), "{yaml}");
        assert!(
            out.stderr.contains("config file layer.yml: ") && out.stderr.contains(expected),
            "{yaml}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("ghp_secret1"), "{}", out.stderr);
    }
    assert!(env.server.requests().is_empty());
}

#[test]
fn later_rows_target_rows_an_earlier_layer_inserted() {
    let env = TestEnv::new(vec![Turn::text("fine")]);
    env.write(
        "a.yml",
        "- insert:\n    - id: my-tools\n      name: '@deepseek-ai/dsh-mcp-client'\n      config:\n        serverName: tools\n        transport: stdio\n        command: dsh-test-no-such-server\n        failOnStartupError: true\n",
    );
    env.write("b.yml", "- id: my-tools\n  disabled: true\n");
    // The first layer alone fails the run at start; the second switches the server off.
    let out = env.run(dsh(), &["--patch", "a.yml", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(out.stderr.contains("MCP server \"tools\" could not start"));
    let out = env.run(dsh(), &["--patch", "a.yml", "--patch", "b.yml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "fine\n");
}

/// The settings a run would use, as `--dump-config` prints them.
fn dumped(env: &TestEnv, patches: &[&str]) -> String {
    let mut args = vec!["--dump-config"];
    for patch in patches {
        args.extend(["--patch", patch]);
    }
    let out = env.run(dsh(), &args);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    out.stdout
}

#[test]
fn a_later_row_s_config_replaces_the_row_s_whole_configuration() {
    let env = TestEnv::new(vec![Turn::text("fine")]);
    env.write(
        "a.yml",
        "- insert:\n    - id: my-tools\n      name: '@deepseek-ai/dsh-mcp-client'\n      config:\n        serverName: tools\n        transport: stdio\n        command: local-tools\n        args: [serve]\n        env: {A: b}\n- id: agent-instructions\n  config:\n    maxBytes: 1000\n    projectRootMarkers: [.hg]\n",
    );
    env.write(
        "b.yml",
        "- id: my-tools\n  config:\n    serverName: tools\n    transport: streamable-http\n    url: http://127.0.0.1:9/mcp\n- id: agent-instructions\n  config:\n    maxBytes: 2000\n",
    );
    let text = dumped(&env, &["a.yml", "b.yml"]);
    // A stdio server became an HTTP one: nothing of its stdio set-up is left to clash.
    assert!(
        text.contains("mcp.servers.tools.url = \"http://127.0.0.1:9/mcp\""),
        "{text}"
    );
    for gone in [
        "tools.command",
        "tools.args",
        "tools.env",
        ".hg",
        "max_bytes = 1000",
    ] {
        assert!(!text.contains(gone), "{gone} survived:\n{text}");
    }
    // What the row left out went back to its default.
    assert!(
        text.lines()
            .any(|l| l.starts_with("instructions.root_markers = [\".git\"]")
                && l.ends_with("# default")),
        "{text}"
    );
    assert!(text.contains("instructions.max_bytes = 2000"), "{text}");
    // A run with both layers goes ahead: the server is optional and nothing listens there.
    let out = env.run(dsh(), &["--patch", "a.yml", "--patch", "b.yml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("dsh: mcp tools: could not start"),
        "{}",
        out.stderr
    );
}

#[test]
fn disabled_false_switches_instructions_and_skills_back_on() {
    let env = TestEnv::new(vec![]);
    env.write(
        "off.yml",
        "- id: agent-instructions\n  disabled: true\n- id: skill-filesystem\n  disabled: true\n",
    );
    env.write(
        "on.yml",
        "- id: agent-instructions\n  disabled: false\n- id: skill-filesystem\n  disabled: false\n",
    );
    let off = dumped(&env, &["off.yml"]);
    assert!(off.contains("instructions.enabled = false"), "{off}");
    assert!(off.contains("skills.enabled = false"), "{off}");
    let on = dumped(&env, &["off.yml", "on.yml"]);
    assert!(on.contains("instructions.enabled = true"), "{on}");
    assert!(on.contains("skills.enabled = true"), "{on}");
}

#[test]
fn the_reference_s_own_patch_files_are_layers() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("ok")]);
    // Where the reference's documentation tells users to put rows: over every surface, and
    // for the headless profile.
    std::fs::create_dir_all(env.home.path().join("profiles/headless")).unwrap();
    std::fs::write(
        env.home.path().join("cordis.patch.yml"),
        "- id: tool-web\n  disabled: true\n",
    )
    .unwrap();
    std::fs::write(
        env.home.path().join("profiles/headless/cordis.patch.yml"),
        "- id: tool-jobs\n  disabled: true\n",
    )
    .unwrap();
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let tools = env.server.requests()[0].tool_names();
    assert!(tools.contains(&"bash".to_owned()), "{tools:?}");
    for gone in ["web_fetch", "web_search", "job_output", "job_kill"] {
        assert!(
            !tools.contains(&gone.to_owned()),
            "{gone} is still offered: {tools:?}"
        );
    }
    let dump = env.run(dsh(), &["--dump-config"]).stdout;
    assert!(dump.contains("cordis.patch.yml"), "{dump}");

    // A placeholder with nothing in it yet is no layer, not an error.
    std::fs::write(
        env.home.path().join("cordis.patch.yml"),
        "# rows go here\n\n",
    )
    .unwrap();
    let out = env.run(dsh(), &["--dump-config"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
}

#[test]
fn system_prompt_append_comes_last_from_the_flag_or_the_config() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("ok")]);
    let out = env.run(
        dsh(),
        &["--system-prompt-append", "Answer in French.", "go"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let system = |request: &dsh_testkit::Request| {
        request.messages()[0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(system(&env.server.requests()[0]).ends_with("\n\nAnswer in French."));

    env.write(".dsh/config.toml", "system_prompt_append = \"Be brief.\"\n");
    env.run(dsh(), &["go"]);
    assert!(system(&env.server.requests()[1]).ends_with("\n\nBe brief."));
}
