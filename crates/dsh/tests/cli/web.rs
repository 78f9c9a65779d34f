//! web_fetch and web_search against a site on 127.0.0.1 started by each test.

use std::time::Duration;

use dsh_testkit::site::{Page, Site};
use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

const HTML: &str = "<html><head><title>T</title><script>track()</script></head><body>\
    <h1>Release notes</h1><p>Version <b>2.0</b> adds <a href=\"/docs\">docs</a>.</p>\
    <ul><li>faster</li><li>smaller</li></ul></body></html>";

/// The results of a run's tool calls, in order, as `--json` reports them.
fn tool_results(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let out = env.run(dsh(), args);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    out.events()
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn fetch(url: &str) -> Turn {
    Turn::tool_call("web_fetch", json!({"url": url}))
}

#[test]
fn web_fetch_reads_pages_as_markdown_within_its_limits() {
    let site = Site::start(vec![
        ("/page", Page::new("text/html; charset=utf-8", HTML)),
        ("/moved", Page::redirect(301, "/page")),
        ("/loop", Page::redirect(302, "/loop")),
        ("/huge", Page::new("text/plain", vec![b'x'; 6_000_000])),
        (
            "/slow",
            Page::new("text/plain", "late").delayed(Duration::from_secs(30)),
        ),
        (
            "/image.png",
            Page::new("image/png", vec![0x89, b'P', b'N', b'G']),
        ),
        ("/gone", Page::new("text/plain", "no such page").status(404)),
        ("/data", Page::new("application/json", "{\"a\": 1}")),
    ]);
    let env = TestEnv::new(vec![
        fetch(&site.url("/page")),
        fetch(&site.url("/moved")),
        fetch(&site.url("/loop")),
        fetch(&site.url("/huge")),
        fetch(&site.url("/slow")),
        fetch(&site.url("/image.png")),
        fetch(&site.url("/gone")),
        fetch(&site.url("/data")),
        fetch("ftp://example.com/file"),
        Turn::text("read"),
    ]);
    env.write(
        ".dsh/config.toml",
        // The timeout bounds a whole fetch, its redirects included: long enough that the
        // six hops of the redirect loop fit on a loaded machine, far below the slow page.
        "[web]\nallow_private_addresses = true\nfetch_timeout_ms = 3000\n",
    );
    let results = tool_results(&env, &["--json", "read the notes"]);
    let text = |i: usize| results[i]["result"].as_str().unwrap().to_owned();
    let page = text(0);
    assert!(
        page.starts_with(&format!(
            "Fetched {} (HTTP 200)\n\n# Release notes",
            site.url("/page")
        )),
        "{page}"
    );
    assert!(
        page.contains("Version **2.0** adds [docs](/docs)."),
        "{page}"
    );
    assert!(page.contains("- faster\n- smaller"), "{page}");
    assert!(!page.contains("track()"), "{page}");
    // A redirect is followed and its final URL named.
    assert!(text(1).starts_with(&format!("Fetched {} (HTTP 200)", site.url("/page"))));
    assert_eq!(text(2), "Error: exceeded the maximum of 5 redirects");
    assert_eq!(site.hits("/loop"), 6);
    assert_eq!(
        text(3),
        "Error: response exceeds the maximum of 5000000 bytes"
    );
    assert_eq!(text(4), "Error: web fetch timed out");
    assert_eq!(
        results[4]["error"],
        json!({"name": "WebError", "code": "WEB_FETCH_TIMEOUT"})
    );
    assert_eq!(text(5), "Error: unsupported content type \"image/png\"");
    assert_eq!(
        text(6),
        format!("Fetched {} (HTTP 404)\n\nno such page", site.url("/gone"))
    );
    assert_eq!(
        text(7),
        format!("Fetched {} (HTTP 200)\n\n{{\"a\": 1}}", site.url("/data"))
    );
    assert_eq!(
        text(8),
        "Error: unsupported URL scheme \"ftp:\" (only http and https are allowed)"
    );
}

#[test]
fn web_fetch_keeps_off_private_addresses_and_a_network_switched_off() {
    let site = Site::start(vec![("/page", Page::new("text/plain", "secret"))]);
    let env = TestEnv::new(vec![
        fetch(&site.url("/page")),
        fetch("http://169.254.169.254/latest/meta-data/"),
        Turn::text("done"),
    ]);
    let results = tool_results(&env, &["--json", "fetch"]);
    assert_eq!(
        results[0]["error"],
        json!({"name": "WebError", "code": "WEB_BLOCKED_URL"})
    );
    assert!(
        results[0]["result"].as_str().unwrap().starts_with(
            "Error: 127.0.0.1 resolves to 127.0.0.1, a private, loopback or link-local address"
        ),
        "{}",
        results[0]["result"]
    );
    assert!(
        results[1]["result"]
            .as_str()
            .unwrap()
            .contains("169.254.169.254")
    );
    assert_eq!(site.hits("/page"), 0);
    // With the network off, nothing is fetched: no one can allow an exception here.
    let env = TestEnv::new(vec![fetch(&site.url("/page")), Turn::text("done")]);
    env.write(
        ".dsh/config.toml",
        "[web]\nallow_private_addresses = true\n[sandbox]\nnetwork = false\n",
    );
    let results = tool_results(&env, &["--json", "fetch"]);
    assert_eq!(results[0]["error"]["code"], "WEB_NETWORK_OFF");
    assert!(
        results[0]["result"]
            .as_str()
            .unwrap()
            .contains("network access is off for this run (sandbox.network = false)")
    );
    // Under the allowlist only commands reach the network (through dsh's proxy): the web
    // tools, which connect from dsh itself, are off too, and say so in the allowlist's words.
    let env = TestEnv::new(vec![fetch(&site.url("/page")), Turn::text("done")]);
    env.write(
        ".dsh/config.toml",
        "[web]\nallow_private_addresses = true\n[sandbox]\nnetwork = \"allowlist\"\n\
         allowed_domains = [\"127.0.0.1.example\"]\n",
    );
    let results = tool_results(&env, &["--json", "fetch"]);
    assert_eq!(results[0]["error"]["code"], "WEB_NETWORK_OFF");
    let said = results[0]["result"].as_str().unwrap();
    assert!(
        said.contains(
            "network access is limited to commands for this run (sandbox.network = \"allowlist\""
        ) && !said.contains("sandbox.network = false"),
        "{said}"
    );
    assert_eq!(site.hits("/page"), 0);
}

#[test]
fn web_search_lists_a_backends_results_and_names_the_key_it_lacks() {
    let searx = json!({"results": [
        {"url": "https://blog.rust-lang.org/r.html", "title": "Rust 1.80", "content": "LazyCell is stable", "publishedDate": "2024-07-25"},
        {"url": "https://github.com/rust-lang/rust", "title": ""},
    ]});
    let site = Site::start(vec![(
        "/search",
        Page::new("application/json", searx.to_string()),
    )]);
    let env = TestEnv::new(vec![
        Turn::tool_call("web_search", json!({"queries": ["rust 1.80", "rust 1.80"]})),
        Turn::tool_call("web_search", json!({"queries": []})),
        Turn::text("found"),
    ]);
    env.write(
        ".dsh/config.toml",
        &format!(
            "[web.search]\nprovider = \"searxng\"\nbase_url = \"{}\"\n",
            site.url("")
        ),
    );
    let found = tool_results(&env, &["--json", "search"]);
    assert_eq!(
        found[0]["result"],
        "Sources:\n- [Rust 1.80](https://blog.rust-lang.org/r.html) — LazyCell is stable (2024-07-25)\n\
         - [github.com](https://github.com/rust-lang/rust)\n\n\
         Cite the relevant URLs above as markdown links in your answer."
    );
    // The repeated query was sent once.
    assert_eq!(site.hits("/search"), 1);
    assert_eq!(
        found[1]["result"],
        "Error: queries must contain at least one query"
    );
    // No backend, and a backend without its key: web_search is not offered at all (a tool
    // whose every call fails is noise in the prompt), and --dump-config says why.
    // (A route without hosted search, here an OpenAI-compatible one, has no backend.)
    let local = |env: &TestEnv| {
        format!(
            "[providers.local]\nkind = \"openai-completions\"\nbase_url = \"{}/v1\"\n",
            env.server.base_url()
        )
    };
    for (brave, expected) in [
        (
            false,
            "web_search is off: no usable web provider is registered: set web.search.provider",
        ),
        (
            true,
            "web_search is off: Brave search has no API key: set BRAVE_API_KEY in the environment",
        ),
    ] {
        let env = TestEnv::new(vec![Turn::text("none")]);
        let mut config = local(&env);
        if brave {
            config.push_str("[web.search]\nprovider = \"brave\"\n");
        }
        env.write(".dsh/config.toml", &config);
        let out = env.run(dsh(), &["--json", "--model", "local/m", "search"]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        let offered = env.server.requests()[0].tool_names();
        assert!(offered.contains(&"web_fetch".to_owned()), "{offered:?}");
        assert!(!offered.contains(&"web_search".to_owned()), "{offered:?}");
        let shown = env.run(dsh(), &["--dump-config", "--model", "local/m"]);
        let tools = shown
            .stdout
            .lines()
            .find(|line| line.starts_with("tools ="))
            .unwrap();
        assert!(tools.contains(expected), "{tools}");
        assert!(!tools.contains("\"web_search\""), "{tools}");
    }
}

#[test]
fn on_a_deepseek_route_web_search_uses_the_providers_hosted_search_and_bills_it() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "web_search",
            json!({"queries": ["rust 1.80", "landlock abi"]}),
        ),
        Turn::text("found"),
    ]);
    let out = env.run(dsh(), &["--json", "search"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(
        result["result"],
        "Sources:\n- [Result for rust 1.80](https://example.com/rust-1.80) — About rust 1.80. (2026-12-01)\n\
         - [Result for landlock abi](https://example.com/landlock-abi) — About landlock abi. (2026-12-01)\n\n\
         Cite the relevant URLs above as markdown links in your answer."
    );
    // One Messages request a query, to DeepSeek's Anthropic-compatible API on the route's key,
    // offering the hosted search tool and nothing else.
    let searches: Vec<_> = env
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/anthropic/v1/messages")
        .collect();
    assert_eq!(searches.len(), 2);
    assert_eq!(searches[0].headers["x-api-key"], "test-key");
    assert_eq!(searches[0].body["model"], "deepseek-v4-flash");
    assert_eq!(
        searches[0].body["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}])
    );
    // What the searches billed is in the step that made them, and so in the run's usage: two
    // chat requests of 100 input tokens, two searches of 1000.
    let last = events.last().unwrap();
    assert_eq!(last["usage"]["inputTokens"], 2200);
    assert!(last["usage"]["costUsd"].as_f64().unwrap() > 0.0);
    let shown = env.run(dsh(), &["--dump-config"]).stdout;
    let row = shown
        .lines()
        .find(|l| l.starts_with("web.search.provider = "))
        .unwrap();
    assert!(row.contains("\"native\""), "{row}");
}

/// The attack: a repository's config points native search at an address that only looks like
/// this machine, so each search would carry the route's key over plain HTTP to another host.
/// web_search is not offered, and nothing goes out; this machine's own address still searches.
#[test]
fn lookalike_search_addresses_get_no_key() {
    let outside = crate::outside::Outside::start();
    // `None`: the test's own server, on this machine.
    let search = |base: Option<&str>| {
        let env = TestEnv::new(vec![
            Turn::tool_call("web_search", json!({"queries": ["rust"]})),
            Turn::text("done"),
        ]);
        let base = base.map_or_else(|| env.server.base_url(), str::to_owned);
        env.write(
            ".dsh/config.toml",
            &format!("[web.search]\nprovider = \"native\"\nbase_url = \"{base}/anthropic/v1\"\n"),
        );
        let mut command = env.command(dsh());
        outside.route(&mut command);
        let out = dsh_testkit::RunOutput::of(command.args(["--json", "search"]));
        assert_eq!(out.code(), Some(0), "{base}: {}", out.stderr);
        let mut dump = env.command(dsh());
        outside.route(&mut dump);
        let shown = dsh_testkit::RunOutput::of(dump.arg("--dump-config")).stdout;
        (env, shown)
    };
    for base in crate::outside::LOOKALIKES {
        let (env, shown) = search(Some(base));
        let offered = env.server.requests()[0].tool_names();
        assert!(
            !offered.contains(&"web_search".to_owned()),
            "{base}: {offered:?}"
        );
        let tools = shown.lines().find(|l| l.starts_with("tools =")).unwrap();
        assert!(
            tools.contains("web_search is off: web.search.base_url"),
            "{base}: {tools}"
        );
    }
    assert!(
        outside.requests().is_empty(),
        "sent out: {:?}",
        outside.requests()
    );
    let (env, _) = search(None);
    assert!(
        env.server
            .requests()
            .iter()
            .any(|r| r.path == "/anthropic/v1/messages"),
        "this machine's address searched"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "a project's config sets native web search at an address that only looks like this machine (127.0.0.1.evil.example, 127.0.0.1:1@evil.example, localhost.evil.example, [::1]:1@evil.example)",
        "web_search not offered; the route's key sent nowhere",
    );
}
