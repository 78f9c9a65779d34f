//! Properties of reading settings from generated config files and patch layers: whatever a
//! file holds, dsh loads it or refuses it with an error that names the file; it never
//! panics. Cases: proptest's default (256), or `PROPTEST_CASES` (`scripts/fuzz`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

use dsh_config::{Environment, Flags, Settings};
use proptest::prelude::*;

/// Config text built from dsh's own keys and values of every kind, or arbitrary text.
fn toml_text() -> impl Strategy<Value = String> {
    let key = proptest::sample::select(vec![
        "model",
        "effort",
        "sandbox.mode",
        "sandbox.network",
        "sandbox.backend",
        "jobs.wait_ms",
        "requests.retries",
        "requests.retry_base_ms",
        "requests.idle_timeout_ms",
        "sessions.compression",
        "sessions.fsync",
        "approval.policy",
        "tools.allow",
        "tools.deny",
        "shell.scrub",
        "secrets.redact",
        "skills.dirs",
        "subagents.max_total",
        "mcp.servers.a.command",
        "mcp.servers.a.url",
        "mcp.servers.a.args",
        "mcp.servers.a.headers.X",
        "providers.p.kind",
        "providers.p.base_url",
        "providers.p.api_key_env",
        "models.m.context_window",
        "web.search.provider",
        "unknown.key",
    ]);
    let value = prop_oneof![
        Just("true".to_owned()),
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("1e400".to_owned()),
        Just("\"zstd\"".to_owned()),
        Just("\"danger-full-access\"".to_owned()),
        Just("\"p/m\"".to_owned()),
        Just("\"\"".to_owned()),
        Just("[\"a\", 1]".to_owned()),
        Just("{ x = 1 }".to_owned()),
        "\"[a-z/:.-]{0,16}\"".prop_map(|s| s),
    ];
    prop_oneof![
        proptest::collection::vec((key, value), 0..8).prop_map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| format!("{k} = {v}\n"))
                .collect::<String>()
        }),
        any::<String>(),
    ]
}

/// Patch layers in the reference's row format, damaged in every way a hand-written file is.
fn yaml_text() -> impl Strategy<Value = String> {
    let row = prop_oneof![
        Just("- id: agent-default-model\n  config:\n    model: m\n".to_owned()),
        Just("- id: llm-pi-ai\n  config:\n    providers: {}\n".to_owned()),
        Just("- id: nothing-known\n  config: 3\n".to_owned()),
        Just("- insert:\n    - id: x\n      config: [1, 2]\n".to_owned()),
        Just("- remove: [a, b]\n".to_owned()),
        Just("- id: x\n  config: !!js process.env.NOPE\n".to_owned()),
        Just("- 7\n".to_owned()),
        Just(":\n- [\n".to_owned()),
        "[a-z: \n-]{0,40}".prop_map(|s| s),
    ];
    prop_oneof![
        proptest::collection::vec(row, 0..5).prop_map(|rows| rows.concat()),
        any::<String>(),
    ]
}

fn load(config: Option<&str>, patch: Option<(&str, &str)>) -> Result<(), String> {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    if let Some(text) = config {
        std::fs::create_dir_all(ws.path().join(".dsh")).unwrap();
        std::fs::write(ws.path().join(".dsh/config.toml"), text).unwrap();
    }
    let mut flags = Flags::default();
    if let Some((name, text)) = patch {
        let path = ws.path().join(name);
        std::fs::write(&path, text).unwrap();
        flags.patches.push(path);
    }
    let env = Environment::from_pairs([
        ("HOME".to_owned(), home.path().display().to_string()),
        ("DSH_HOME".to_owned(), home.path().display().to_string()),
        ("DEEPSEEK_API_KEY".to_owned(), "k".to_owned()),
    ]);
    Settings::load(ws.path().to_path_buf(), &env, &flags)
        .map(|_| ())
        .map_err(|e| e.message)
}

proptest! {
    #[test]
    fn a_config_file_loads_or_is_refused_naming_itself(text in toml_text()) {
        if let Err(message) = load(Some(&text), None) {
            prop_assert!(message.contains("config.toml"), "{}", message);
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a config file of any content",
            "loaded, or refused naming the file; no panic",
        );
    }

    #[test]
    fn a_toml_patch_loads_or_is_refused_naming_itself(text in toml_text()) {
        if let Err(message) = load(None, Some(("layer.toml", &text))) {
            prop_assert!(message.contains("layer.toml"), "{}", message);
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a TOML patch of any content",
            "loaded, or refused naming the file; no panic",
        );
    }

    #[test]
    fn a_row_patch_loads_or_is_refused_naming_itself(text in yaml_text()) {
        if let Err(message) = load(None, Some(("layer.yml", &text))) {
            prop_assert!(message.contains("layer.yml"), "{}", message);
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a patch of rows of any content",
            "loaded, or refused naming the file; no panic",
        );
    }
}

/// Found by the properties above: an empty model was refused without saying where it was set.
#[test]
fn an_empty_model_is_refused_naming_the_file_that_set_it() {
    let message = load(Some("model = \"\"\n"), None).unwrap_err();
    assert!(
        message.starts_with("the model is empty (set by ")
            && message.contains(".dsh/config.toml): give a model, such as "),
        "{message}"
    );
}
