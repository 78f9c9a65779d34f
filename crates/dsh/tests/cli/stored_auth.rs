//! Stored authentication under the headless profile: `--profile headless` (or `dsh headless`)
//! ignores the keys `dsh login` saved, as the reference's profile does, until the rows
//! `credentials`, `authorization` and `deepseek-account` restore them; a run that is headless
//! only because stdin and stdout are not terminals uses them. (The MCP sign-ins' half is in
//! mcp_oauth.rs, beside the sign-in server it needs.)

use dsh_testkit::{RunOutput, TestEnv, Turn};

use crate::dsh;

/// The seed's three rows that restore stored authentication.
pub(crate) const RESTORE_ROWS: &str = "- id: credentials\n  disabled: false\n\
                                       - id: authorization\n  disabled: false\n\
                                       - id: deepseek-account\n  disabled: false\n";

/// `dsh args...` with no key in the environment: only the saved one could be used.
fn keyless(env: &TestEnv, args: &[&str]) -> RunOutput {
    RunOutput::of(env.command(dsh()).env_remove("DEEPSEEK_API_KEY").args(args))
}

/// The key each request was sent with.
fn keys_sent(env: &TestEnv) -> Vec<String> {
    (env.server.requests().iter())
        .map(|r| r.headers.get("authorization").cloned().unwrap_or_default())
        .collect()
}

#[test]
fn the_headless_profile_ignores_a_saved_key_until_the_rows_restore_it() {
    let env = TestEnv::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]);
    std::fs::write(
        env.home.path().join("credentials"),
        "DEEPSEEK_API_KEY=saved-key\n",
    )
    .unwrap();
    let saved_before = std::fs::read(env.home.path().join("credentials")).unwrap();

    // Headless only for want of a terminal: the saved key is used.
    let piped = keyless(&env, &["--json", "go"]);
    assert_eq!(piped.code(), Some(0), "{}", piped.stderr);
    assert_eq!(keys_sent(&env), ["Bearer saved-key"]);

    // The profile by name, either way: not used, and the error says how to have it used.
    for args in [
        &["--profile", "headless", "--json", "go"][..],
        &["headless", "--json", "go"],
    ] {
        let out = keyless(&env, args);
        assert_eq!(out.code(), Some(1), "{args:?}: {}", out.stderr);
        let events = out.events();
        assert_eq!(events.len(), 1, "{}", out.stdout);
        assert_eq!(events[0]["code"], "AUTH");
        let message = events[0]["message"].as_str().unwrap();
        for needle in [
            "no API key for provider \"deepseek\": set DEEPSEEK_API_KEY",
            "under --profile headless the keys `dsh login` saved are not used",
            "- id: credentials",
            "$DSH_HOME/profiles/headless/cordis.patch.yml",
        ] {
            assert!(message.contains(needle), "{args:?}: {message}");
        }
    }
    assert_eq!(env.server.requests().len(), 1, "nothing was sent keyless");
    let dump = keyless(&env, &["--profile", "headless", "--dump-config"]);
    assert!(
        dump.stdout
            .lines()
            .any(|l| l.starts_with("stored_auth.saved_keys = false")
                && l.ends_with("# --profile headless")),
        "{}",
        dump.stdout
    );
    let dump = keyless(&env, &["--dump-config"]);
    assert!(
        (dump.stdout.lines())
            .any(|l| l.starts_with("stored_auth.saved_keys = true") && l.ends_with("# default")),
        "{}",
        dump.stdout
    );

    // The seed's rows restore it, from the profile's own patch file or from a --patch.
    let rows = env.ws.path().join("restore.yml");
    std::fs::write(&rows, RESTORE_ROWS).unwrap();
    let patched = keyless(
        &env,
        &[
            "--profile",
            "headless",
            "--patch",
            rows.to_str().unwrap(),
            "go",
        ],
    );
    assert_eq!(patched.code(), Some(0), "{}", patched.stderr);
    let profile = env.home.path().join("profiles/headless");
    std::fs::create_dir_all(&profile).unwrap();
    std::fs::write(profile.join("cordis.patch.yml"), RESTORE_ROWS).unwrap();
    let restored = keyless(&env, &["headless", "go"]);
    assert_eq!(restored.code(), Some(0), "{}", restored.stderr);
    assert_eq!(
        keys_sent(&env)[1..],
        ["Bearer saved-key", "Bearer saved-key"]
    );
    let dump = keyless(&env, &["--profile", "headless", "--dump-config"]);
    let row = (dump.stdout.lines())
        .find(|l| l.starts_with("stored_auth.saved_keys"))
        .unwrap();
    assert!(
        row.starts_with("stored_auth.saved_keys = true") && row.ends_with("cordis.patch.yml"),
        "{row}"
    );
    assert!(
        dump.stdout.contains("row deepseek-account:"),
        "{}",
        dump.stdout
    );
    // Ignored, never changed.
    assert_eq!(
        std::fs::read(env.home.path().join("credentials")).unwrap(),
        saved_before
    );
}
