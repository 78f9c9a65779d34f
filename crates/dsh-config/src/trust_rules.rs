//! What of a workspace needs trust ([`crate::trust`]), each with why: the keys of its
//! `.dsh/config.toml` ([`mark`]) and its other files that run code or decide where a credential
//! goes ([`workspace_files`]). This is the rule: a key added to the configuration, or a file a
//! repository can supply, that decides a destination or an account for a credential, a key
//! variable, a program run unasked, what commands may do or what a run may spend belongs
//! here, and the tests below name each one checked. A number or a switch declares where it is
//! declared (each section's `GUARDS`) which way widens it, and [`crate::trust_limits`] sets
//! aside what widens; a test there makes sure every number and switch of the file says.

use std::path::Path;

use super::trust_look::{Look, Reason, SetAside, at, owned, table_keys};
use crate::Environment;

/// The workspace's hooks file, relative to it.
pub(crate) const HOOKS_FILE: &str = ".dsh/hooks.json";

/// The names (without `.extension`) of the files of `folder` with that extension, sorted,
/// escaped as the notice shows them.
fn file_names(folder: &Path, extension: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == extension))
        .filter_map(|path| {
            Some(
                path.file_stem()?
                    .to_string_lossy()
                    .escape_default()
                    .to_string(),
            )
        })
        .collect();
    names.sort();
    names
}

/// Marks every value of the workspace's layer that needs trust.
pub(crate) fn mark(look: &mut Look<'_>) {
    look.mark(&["projects"], Reason::Trust);
    providers(look);
    web(look);
    sandbox(look);
    secrets(look);
    look.mark_if(&["auto_review", "prompt"], Reason::Reviewer, |l, p| {
        l.project(p) != l.below(p)
    });
    look.mark_if(&["auto_review", "model"], Reason::Reviewer, |l, p| {
        l.project(p) != l.below(p)
    });
    // An allow list of yours is a ceiling: the workspace's may only name tools it names.
    look.mark_if(&["tools", "allow"], Reason::Tools, |l, p| {
        let Some(mine) = l.below(p).and_then(toml::Value::as_array) else {
            return false;
        };
        (l.project(p).and_then(toml::Value::as_array))
            .is_some_and(|theirs| theirs.iter().any(|name| !mine.contains(name)))
    });
    // An allow rule lets calls past Auto review: the workspace's own need trust. Its deny and
    // ask rules only narrow, and apply untrusted.
    look.mark_if(&["rules", "allow"], Reason::Sandbox, |l, p| {
        let mine = l.below(p).and_then(toml::Value::as_array);
        (l.project(p).and_then(toml::Value::as_array)).is_some_and(|theirs| {
            theirs
                .iter()
                .any(|rule| !mine.is_some_and(|m| m.contains(rule)))
        })
    });
    mcp_servers(look);
    costs(look);
    super::trust_limits::mark(look);
}

/// A route's address gets its key, your headers and the conversation; its key variable can be
/// one of yours.
fn providers(look: &mut Look<'_>) {
    for name in table_keys(look.project, &["providers"]) {
        look.mark(&["providers", &name, "base_url"], Reason::Destination);
        key_variable(look, &["providers", &name, "api_key_env"]);
        // They go with the key, and one (`Host`) can route the request elsewhere.
        look.mark(&["providers", &name, "headers"], Reason::Destination);
    }
}

/// A key variable the workspace names is set aside whatever it names. Even one only its own
/// `.env` holds: that file's keys are not read untrusted ([`workspace_files`]), so the lookup
/// would go on to yours (`$DSH_HOME/.env`, `dsh login`'s) and send your `GITHUB_TOKEN` to the
/// route.
fn key_variable(look: &mut Look<'_>, path: &[&str]) {
    look.mark(path, Reason::KeyVariable);
}

/// The search backend's address gets the route's key (native) or the search key (Brave).
fn web(look: &mut Look<'_>) {
    look.mark(&["web", "search", "base_url"], Reason::Destination);
    key_variable(look, &["web", "search", "api_key_env"]);
}

fn sandbox(look: &mut Look<'_>) {
    look.mark_if(&["sandbox", "mode"], Reason::Sandbox, Look::wider_mode);
    look.mark_if(&["sandbox", "backend"], Reason::Sandbox, |l, p| {
        let auto = toml::Value::String("auto".into());
        l.project(p) != Some(l.below(p).unwrap_or(&auto))
    });
    look.mark(&["sandbox", "bwrap"], Reason::Program);
    // The network from least to most: off, the allowlist, on.
    let rank = |v: Option<&toml::Value>| match v {
        Some(toml::Value::Boolean(false)) => 0,
        Some(toml::Value::String(_)) => 1,
        _ => 2,
    };
    look.mark_if(&["sandbox", "network"], Reason::Sandbox, |l, p| {
        l.project(p).is_some() && rank(l.project(p)) > rank(l.below(p))
    });
    // Under an allowlist of yours, the workspace's may only name domains yours names; under
    // the network on, its list (with its own "allowlist") only narrows.
    look.mark_if(&["sandbox", "allowed_domains"], Reason::Sandbox, |l, p| {
        let mine = l.below(p).and_then(toml::Value::as_array);
        let open = rank(l.below(&["sandbox", "network"])) == 2;
        (l.project(p).and_then(toml::Value::as_array)).is_some_and(|theirs| {
            !open && (theirs.iter()).any(|d| !mine.is_some_and(|m| m.contains(d)))
        })
    });
}

fn secrets(look: &mut Look<'_>) {
    // The names kept from commands: the workspace's list must keep every one of yours.
    look.mark_if(&["shell", "scrub"], Reason::Secrets, |l, p| {
        let upper = |v: &toml::Value| v.as_str().map(str::to_uppercase);
        let theirs: Vec<String> = (l.project(p).and_then(toml::Value::as_array))
            .into_iter()
            .flatten()
            .filter_map(upper)
            .collect();
        let mine: Vec<String> = match l.below(p).and_then(toml::Value::as_array) {
            Some(list) => list.iter().filter_map(upper).collect(),
            None => dsh_tools::DEFAULT_SCRUB
                .iter()
                .map(|s| s.to_uppercase())
                .collect(),
        };
        mine.iter().any(|name| !theirs.contains(name))
    });
}

/// A server's program and its arguments, environment and folder; its address and how dsh
/// signs in there; turning on one you turned off. A server only the workspace declares goes
/// whole when its program or address does, so no half of it is left to fail the run.
fn mcp_servers(look: &mut Look<'_>) {
    for name in table_keys(look.project, &["mcp", "servers"]) {
        let server = |key: &str| owned(&["mcp", "servers", &name, key]);
        let yours = ["command", "url"]
            .iter()
            .any(|key| look.below(&["mcp", "servers", &name, key]).is_some());
        let program = look.project(&["mcp", "servers", &name, "command"]).cloned();
        let address = look.project(&["mcp", "servers", &name, "url"]).cloned();
        if !yours && (program.is_some() || address.is_some()) {
            let shown = match (&program, &address) {
                (Some(command), _) => {
                    let args = look.project(&["mcp", "servers", &name, "args"]);
                    let args = args
                        .map(|a| format!(", args = {}", super::layer::render_value(a)))
                        .unwrap_or_default();
                    format!(
                        "{{ command = {}{args} }}",
                        super::layer::render_value(command)
                    )
                }
                (None, Some(url)) => format!(
                    "{{ url = {:?} }}",
                    dsh_protocol::shown_url(url.as_str().unwrap_or_default())
                ),
                (None, None) => String::new(),
            };
            let why = if program.is_some() {
                Reason::Program
            } else {
                Reason::Destination
            };
            look.mark_shown(owned(&["mcp", "servers", &name]), why, Some(shown));
            continue;
        }
        for key in ["command", "args", "env", "cwd"] {
            look.mark_shown(server(key), Reason::Program, None);
        }
        for key in ["url", "oauth", "headers"] {
            look.mark_shown(server(key), Reason::Destination, None);
        }
    }
}

/// What a run's cost is counted at and how much it may spend: a price lower than yours or dsh's
/// built-in one (`0` defeats `--max-budget-usd` and `costUsd`), a price for a model nobody
/// priced (it would make `--max-budget-usd` count with the project's numbers), and a spending
/// limit above yours (or dsh's default). Higher prices and lower limits apply.
fn costs(look: &mut Look<'_>) {
    for model in table_keys(look.project, &["models"]) {
        look.mark_if(&["models", &model, "prices"], Reason::Cost, |l, p| {
            lowers_a_price(l, p, &model)
        });
    }
    for provider in table_keys(look.project, &["providers"]) {
        for model in table_keys(look.project, &["providers", &provider, "models"]) {
            let path = [
                "providers",
                provider.as_str(),
                "models",
                model.as_str(),
                "prices",
            ];
            look.mark_if(&path, Reason::Cost, |l, p| lowers_a_price(l, p, &model));
        }
    }
}

/// Whether the workspace's prices at `path` for `model` are below any price you or dsh's table
/// give that model, or no one prices it.
fn lowers_a_price(look: &Look<'_>, path: &[&str], model: &str) -> bool {
    let prices = |v: Option<&toml::Value>| {
        v.cloned()
            .and_then(|v| v.try_into::<dsh_protocol::Prices>().ok())
    };
    let Some(theirs) = prices(look.project(path)) else {
        return true;
    };
    let mut known: Vec<dsh_protocol::Prices> = Vec::new();
    known.extend(prices(look.below(&["models", model, "prices"])));
    for provider in table_keys(look.below, &["providers"]) {
        known.extend(prices(look.below(&[
            "providers",
            &provider,
            "models",
            model,
            "prices",
        ])));
    }
    known.extend(dsh_llm::deepseek::prices(model));
    known.is_empty() || known.iter().any(|mine| !at_least(&theirs, mine))
}

/// Whether every rate of `theirs`, at peak and off-peak hours, is at least `mine`'s (NaN is
/// not).
fn at_least(theirs: &dsh_protocol::Prices, mine: &dsh_protocol::Prices) -> bool {
    let peak = |p: &dsh_protocol::Prices| [p.input, p.output, p.cache_read, p.cache_write];
    let off_peak = |p: &dsh_protocol::Prices| match &p.off_peak {
        Some(o) => [o.input, o.output, o.cache_read, o.cache_write],
        None => peak(p),
    };
    let each = |a: [f64; 4], b: [f64; 4]| a.iter().zip(b).all(|(a, b)| *a >= b);
    each(peak(theirs), peak(mine)) && each(off_peak(theirs), off_peak(mine))
}

/// What the workspace's files other than its config hold that needs trust, in a folder not
/// trusted: its hooks (`.dsh/hooks.json`: commands dsh would run at start-up and around every
/// message and tool call, without anyone asking for them), and the keys of its `.env` that a
/// run would read (every route's and the search backend's key variable, unless exported).
///
/// Why a key of the project's `.env` is set aside even when nothing of yours provides it: a
/// key decides whose account the requests are made under, and so who can read them (providers
/// keep logs of requests for the account's owner). A cloned repository that commits its
/// author's key would otherwise have your prompts, and the code and files the model reads,
/// recorded in its author's account, with no sign of it, just as a `base_url` it sets would
/// send them to its author's server; and where you keep your own key (`$DSH_HOME/.env`, `dsh
/// login`), it would win over yours. Your own project's `.env` is used once you trust the
/// folder (the terminal UI asks), and a key you export is yours wherever it comes from.
pub(crate) fn workspace_files(
    cwd: &Path,
    home: &Path,
    tables: &[&toml::Table],
    env: &Environment,
) -> Vec<SetAside> {
    let mut found = Vec::new();
    let hooks = cwd.join(HOOKS_FILE);
    if std::fs::symlink_metadata(&hooks).is_ok() {
        found.push(SetAside {
            value: hook_commands(&hooks),
            file: hooks,
            key: "hooks".to_owned(),
            reason: Reason::Hooks,
        });
    }
    for (folder, extension, key, reason) in [
        (
            crate::project::workflows_folder(cwd),
            "js",
            "workflows",
            Reason::Workflows,
        ),
        (
            crate::project::prompts_folder(cwd),
            "md",
            "prompts",
            Reason::Prompts,
        ),
    ] {
        let names = file_names(&folder, extension);
        if !names.is_empty() {
            found.push(SetAside {
                value: format!("{names:?}"),
                file: folder,
                key: key.to_owned(),
                reason,
            });
        }
    }
    let dotenv = cwd.join(".env");
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    // `$DSH_HOME/.env` itself (a run in the home) is yours.
    if real(&dotenv).is_some_and(|r| Some(r) != real(&home.join(".env"))) {
        let keys = key_variables(tables);
        let names = (crate::dotenv::parse_file(&dotenv)
            .unwrap_or_default()
            .into_iter())
        .map(|(name, _)| name)
        .filter(|name| keys.contains(name) && env.raw(name).is_none());
        for name in names {
            found.push(SetAside {
                file: dotenv.clone(),
                key: name,
                value: "\"[hidden]\"".to_owned(),
                reason: Reason::Account,
            });
        }
    }
    found
}

/// Every variable a run may read a key from: DeepSeek's, Brave's, and each `api_key_env` the
/// config files name.
fn key_variables(tables: &[&toml::Table]) -> Vec<String> {
    let mut names = vec!["DEEPSEEK_API_KEY".to_owned(), "BRAVE_API_KEY".to_owned()];
    for table in tables {
        let name = |path: &[&str]| {
            at(table, &owned(path))
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
        };
        for provider in table_keys(table, &["providers"]) {
            names.extend(name(&["providers", &provider, "api_key_env"]));
        }
        names.extend(name(&["web", "search", "api_key_env"]));
    }
    names
}

/// The commands of a hooks file as the notice shows them: the first few, each cut short and
/// escaped (the file is the repository's: its text must not reach the terminal raw).
fn hook_commands(file: &Path) -> String {
    const SHOWN: usize = 3;
    const CUT: usize = 80;
    let text = (std::fs::metadata(file).ok())
        .filter(|m| m.is_file() && m.len() <= 1 << 20)
        .and_then(|_| std::fs::read_to_string(file).ok());
    let Some(value) = text.and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()) else {
        return "\"(not read)\"".to_owned();
    };
    let commands: Vec<&str> = (value.get("hooks").and_then(|h| h.as_object()))
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(serde_json::Value::as_array))
        .flatten()
        .filter_map(|hook| hook.get("command").and_then(serde_json::Value::as_str))
        .collect();
    let mut shown: Vec<String> = (commands.iter().take(SHOWN))
        .map(|c| {
            let cut: String = c.chars().take(CUT).collect();
            let more = if cut.len() < c.len() { "..." } else { "" };
            format!("{:?}", format!("{cut}{more}"))
        })
        .collect();
    if commands.len() > SHOWN {
        shown.push(format!("\"and {} more\"", commands.len() - SHOWN));
    }
    format!("[{}]", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use crate::{ConfigFiles, Environment, Reason};

    /// The keys set aside of the workspace's `project` config under your `mine`, and what
    /// the merged files then say.
    fn gated(mine: &str, project: &str) -> (Vec<String>, crate::Config) {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(home.join("config.toml"), mine).unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), project).unwrap();
        let files = ConfigFiles::load(&home, &ws, &Environment::default(), &[], false).unwrap();
        let keys = files.set_aside().iter().map(|s| s.key.clone()).collect();
        (keys, files.config().clone())
    }

    #[test]
    fn what_decides_a_destination_a_key_a_program_or_more_for_commands_is_set_aside() {
        for (project, key) in [
            (
                "[providers.deepseek]\nbase_url = \"http://x\"\n",
                "providers.deepseek.base_url",
            ),
            (
                "[providers.p]\napi_key_env = \"HOME_KEY\"\n",
                "providers.p.api_key_env",
            ),
            (
                "[providers.deepseek.headers]\nHost = \"elsewhere\"\n",
                "providers.deepseek.headers",
            ),
            (
                "[web.search]\nbase_url = \"https://x\"\n",
                "web.search.base_url",
            ),
            (
                "[web.search]\napi_key_env = \"K\"\n",
                "web.search.api_key_env",
            ),
            (
                "[web]\nallow_private_addresses = true\n",
                "web.allow_private_addresses",
            ),
            ("[mcp.servers.s]\ncommand = \"sh\"\n", "mcp.servers.s"),
            ("[mcp.servers.s]\nurl = \"https://x\"\n", "mcp.servers.s"),
            ("[sandbox]\nmode = \"danger-full-access\"\n", "sandbox.mode"),
            ("[sandbox]\nmode = \"auto\"\n", "sandbox.mode"),
            ("[sandbox]\nbackend = \"landlock\"\n", "sandbox.backend"),
            ("[sandbox]\nbwrap = \"./bwrap\"\n", "sandbox.bwrap"),
            ("[secrets]\nredact = false\n", "secrets.redact"),
            (
                "[stored_auth]\nsaved_keys = true\n",
                "stored_auth.saved_keys",
            ),
            ("[shell]\nscrub = [\"KEY\"]\n", "shell.scrub"),
            (
                "[auto_review]\nprompt = \"allow all\"\n",
                "auto_review.prompt",
            ),
            ("[auto_review]\nmodel = \"tiny\"\n", "auto_review.model"),
            ("[projects.\"/\"]\ntrusted = true\n", "projects"),
            // Prices below dsh's own table: costUsd and --max-budget-usd would count nothing.
            (
                "[models.deepseek-v4-flash.prices]\ninput = 0.0\noutput = 0.0\n\
                 cache_read = 0.0\ncache_write = 0.0\n",
                "models.deepseek-v4-flash.prices",
            ),
            // The peak rates, and an off-peak table of zeros.
            (
                "[models.deepseek-v4-pro.prices]\ninput = 9.0\noutput = 9.0\ncache_read = 9.0\n\
                 cache_write = 9.0\noff_peak = { peak_hours = \"deepseek\" }\n",
                "models.deepseek-v4-pro.prices",
            ),
            (
                "[providers.deepseek.models.deepseek-v4-flash.prices]\ninput = nan\n\
                 output = 9.0\ncache_read = 9.0\ncache_write = 9.0\n",
                "providers.deepseek.models.deepseek-v4-flash.prices",
            ),
            // Nobody prices it: the project's numbers would be what a budget counts.
            (
                "[models.m.prices]\ninput = 1.0\noutput = 1.0\ncache_read = 1.0\n\
                 cache_write = 1.0\n",
                "models.m.prices",
            ),
            (
                "[subagents]\nmax_tokens = 2000001\n",
                "subagents.max_tokens",
            ),
            ("[subagents]\nmax_total = 17\n", "subagents.max_total"),
            (
                "[goals]\ndefault_max_rounds = 257\n",
                "goals.default_max_rounds",
            ),
            ("[workflows]\nmax_agents = 1001\n", "workflows.max_agents"),
            // The red team's second pass (issue 47, F5): limits raised and the reviewer
            // blinded.
            (
                "[workflows]\nmax_memory_mb = 4096\n",
                "workflows.max_memory_mb",
            ),
            (
                "[workflows]\ntimeout_ms = 99999999\n",
                "workflows.timeout_ms",
            ),
            ("[auto_review]\ntask = false\n", "auto_review.task"),
            (
                "[auto_review]\ntranscript_messages = 0\n",
                "auto_review.transcript_messages",
            ),
            (
                "[auto_review]\ntimeout_ms = 600001\n",
                "auto_review.timeout_ms",
            ),
            (
                "[checkpoints]\nmax_store_mb = 1000000\n",
                "checkpoints.max_store_mb",
            ),
            (
                "[checkpoints]\nmax_file_mb = 100000\n",
                "checkpoints.max_file_mb",
            ),
            (
                "[checkpoints]\ninclude_ignored = true\n",
                "checkpoints.include_ignored",
            ),
            (
                "[subagents]\nmax_concurrent = 64\n",
                "subagents.max_concurrent",
            ),
            ("[subagents]\nmax_depth = 50\n", "subagents.max_depth"),
            ("[requests]\nretries = 1000000\n", "requests.retries"),
            (
                "[instructions]\nmax_bytes = 100000000\n",
                "instructions.max_bytes",
            ),
            ("[jobs]\nwait_ms = 60001\n", "jobs.wait_ms"),
            ("[mcp]\nstartup_grace_ms = 3001\n", "mcp.startup_grace_ms"),
        ] {
            let (keys, _) = gated("", project);
            assert_eq!(keys, [key], "{project}");
        }
        // Against your own values: more than yours is set aside.
        for (mine, project, key) in [
            (
                "[sandbox]\nnetwork = false\n",
                "[sandbox]\nnetwork = true\n",
                "sandbox.network",
            ),
            (
                "[sandbox]\nmode = \"read-only\"\n",
                "[sandbox]\nmode = \"workspace-write\"\n",
                "sandbox.mode",
            ),
            (
                "[sandbox]\nmax_processes = 10\n",
                "[sandbox]\nmax_processes = 11\n",
                "sandbox.max_processes",
            ),
            (
                "[tools]\nallow = [\"read\"]\n",
                "[tools]\nallow = [\"read\", \"bash\"]\n",
                "tools.allow",
            ),
            (
                "[mcp.servers.s]\ncommand = \"mine\"\nenabled = false\n",
                "[mcp.servers.s]\nenabled = true\n",
                "mcp.servers.s.enabled",
            ),
            (
                "[mcp.servers.s]\nurl = \"https://mine\"\n",
                "[mcp.servers.s]\nurl = \"https://theirs\"\n",
                "mcp.servers.s.url",
            ),
            (
                "[mcp.servers.s]\ncommand = \"mine\"\n",
                "[mcp.servers.s]\nargs = [\"-x\"]\n",
                "mcp.servers.s.args",
            ),
            (
                "[mcp.servers.s]\nurl = \"https://mine\"\n",
                "[mcp.servers.s.headers]\nHost = \"elsewhere\"\n",
                "mcp.servers.s.headers",
            ),
            (
                "[models.m.prices]\ninput = 2.0\noutput = 2.0\ncache_read = 2.0\n\
                 cache_write = 2.0\n",
                "[models.m.prices]\ninput = 1.0\noutput = 3.0\ncache_read = 3.0\n\
                 cache_write = 3.0\n",
                "models.m.prices",
            ),
            (
                "[providers.p.models.m.prices]\ninput = 2.0\noutput = 2.0\ncache_read = 2.0\n\
                 cache_write = 2.0\n",
                "[models.m.prices]\ninput = 1.0\noutput = 3.0\ncache_read = 3.0\n\
                 cache_write = 3.0\n",
                "models.m.prices",
            ),
            (
                "[subagents]\nmax_total = 100\n",
                "[subagents]\nmax_total = 101\n",
                "subagents.max_total",
            ),
            (
                "[auto_review]\ntranscript_messages = 10\n",
                "[auto_review]\ntranscript_messages = 8\n",
                "auto_review.transcript_messages",
            ),
            (
                "[mcp.servers.s]\ncommand = \"mine\"\ncall_timeout_ms = 10\n",
                "[mcp.servers.s]\ncall_timeout_ms = 11\n",
                "mcp.servers.s.call_timeout_ms",
            ),
            (
                "[sandbox]\nnetwork = false\n",
                "[sandbox]\nnetwork = \"allowlist\"\n",
                "sandbox.network",
            ),
            (
                "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"a.com\"]\n",
                "[sandbox]\nnetwork = true\n",
                "sandbox.network",
            ),
            (
                "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"a.com\"]\n",
                "[sandbox]\nallowed_domains = [\"a.com\", \"evil.net\"]\n",
                "sandbox.allowed_domains",
            ),
            (
                "[workflows]\nmax_memory_mb = 32\n",
                "[workflows]\nmax_memory_mb = 48\n",
                "workflows.max_memory_mb",
            ),
        ] {
            let (keys, _) = gated(mine, project);
            assert_eq!(keys, [key], "{project}");
        }
    }

    #[test]
    fn what_narrows_or_is_the_projects_own_business_applies() {
        // Every name kept from commands by default, and one more.
        let more = (dsh_tools::DEFAULT_SCRUB.iter().chain(&["more"]))
            .map(|name| format!("{name:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let scrub = format!("[shell]\nscrub = [{more}]\n");
        for (mine, project) in [
            ("", scrub.as_str()),
            (
                "",
                "model = \"m\"\neffort = \"low\"\n[tools]\ndeny = [\"bash\"]\n",
            ),
            (
                "",
                "[sandbox]\nmode = \"read-only\"\nnetwork = false\nmax_memory_mb = 100\n",
            ),
            ("", "[sandbox]\nnetwork = true\n"),
            (
                "",
                "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"a.com\"]\n",
            ),
            (
                "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"a.com\", \"b.org\"]\n",
                "[sandbox]\nnetwork = false\nallowed_domains = [\"b.org\"]\n",
            ),
            (
                "[sandbox]\nmode = \"danger-full-access\"\n",
                "[sandbox]\nmode = \"auto\"\n",
            ),
            ("", "[tools]\nallow = [\"read\"]\n"),
            (
                "[mcp.servers.s]\ncommand = \"mine\"\n",
                "[mcp.servers.s]\ncall_timeout_ms = 5\nenabled = false\n",
            ),
            // Higher prices than dsh's table, and lower limits: a run counts more, spends less.
            (
                "",
                "[models.deepseek-v4-flash.prices]\ninput = 9.0\noutput = 9.0\n\
                 cache_read = 9.0\ncache_write = 9.0\n\
                 [subagents]\nmax_tokens = 1000\nmax_total = 1\n\
                 [goals]\ndefault_max_rounds = 2\n[workflows]\nmax_agents = 3\n",
            ),
            // Stricter limits, and a reviewer that reads more.
            (
                "",
                "[workflows]\nmax_memory_mb = 32\ntimeout_ms = 1000\n\
                 [auto_review]\ntask = true\ntranscript_messages = 12\n\
                 [checkpoints]\nmax_store_mb = 10\ninclude_ignored = false\n\
                 [subagents]\nmax_depth = 1\nmax_concurrent = 1\n\
                 [requests]\nretries = 0\n[instructions]\nmax_bytes = 100\n",
            ),
            (
                "[models.m.prices]\ninput = 1.0\noutput = 1.0\ncache_read = 1.0\n\
                 cache_write = 1.0\n[subagents]\nmax_total = 100\n",
                "[models.m.prices]\ninput = 1.0\noutput = 2.0\ncache_read = 1.0\n\
                 cache_write = 1.0\n[subagents]\nmax_total = 50\n",
            ),
        ] {
            let (keys, _) = gated(mine, project);
            assert!(keys.is_empty(), "{project}: {keys:?}");
        }
    }

    #[test]
    fn a_trusted_folder_or_one_under_it_applies_in_full_and_a_refusal_below_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("a/ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        // `a` is the repository; `ws` a folder in it.
        std::fs::create_dir_all(dir.path().join("a/.git")).unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), "[sandbox]\nbwrap = \"./x\"\n").unwrap();
        let above = std::fs::canonicalize(dir.path().join("a")).unwrap();
        let load = |mine: String| {
            std::fs::write(home.join("config.toml"), mine).unwrap();
            ConfigFiles::load(&home, &ws, &Environment::default(), &[], false).unwrap()
        };
        let key = |p: &std::path::Path| crate::trust::quote_path(p);
        let files = load(format!("[projects.{}]\ntrusted = true\n", key(&above)));
        assert!(files.set_aside().is_empty());
        assert_eq!(
            files.config().sandbox.bwrap.as_deref(),
            Some("./x".as_ref())
        );
        let real = std::fs::canonicalize(&ws).unwrap();
        let files = load(format!(
            "[projects.{}]\ntrusted = true\n[projects.{}]\ntrusted = false\n",
            key(&above),
            key(&real)
        ));
        assert_eq!(files.set_aside().len(), 1);
        assert_eq!(files.config().sandbox.bwrap, None);
        let notice = files.trust_notice().unwrap();
        assert!(notice.contains("you chose not to trust"), "{notice}");
        // A folder beside it is not under it.
        let files = load(format!(
            "[projects.{}]\ntrusted = true\n",
            key(&above.join("w"))
        ));
        assert_eq!(files.set_aside().len(), 1);
        let notice = files.trust_notice().unwrap();
        assert!(notice.contains("run `dsh trust` in"), "{notice}");
        assert!(notice.contains("sandbox.bwrap (it runs a program outside the sandbox)"));
    }

    /// The attack: a repository cloned (or a tarball unpacked, or a submodule checked out)
    /// into a folder the user trusted, the one that holds their clones, was trusted with it.
    /// Trust reaches down only within the trusted folder's own repository; a refusal reaches
    /// down everywhere.
    #[test]
    fn trust_does_not_reach_into_another_repository_below() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let clones = dir.path().join("src");
        std::fs::create_dir_all(&home).unwrap();
        let mine = std::fs::canonicalize(&home).unwrap().join("config.toml");
        let entry = |folder: &std::path::Path, trusted: bool| {
            let real = std::fs::canonicalize(folder).unwrap();
            let text = format!(
                "[projects.{}]\ntrusted = {trusted}\n",
                crate::trust::quote_path(&real)
            );
            std::fs::write(&mine, text).unwrap();
        };
        let set_aside = |ws: &std::path::Path| {
            std::fs::create_dir_all(ws.join(".dsh")).unwrap();
            std::fs::write(ws.join(".dsh/config.toml"), "[sandbox]\nbwrap = \"./x\"\n").unwrap();
            let files = ConfigFiles::load(&home, ws, &Environment::default(), &[], false).unwrap();
            files.set_aside().len()
        };
        let clone = clones.join("evil");
        let submodule = dir.path().join("mine/vendor/lib");
        std::fs::create_dir_all(clone.join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("mine/.git")).unwrap();
        std::fs::create_dir_all(&submodule).unwrap();
        std::fs::write(submodule.join(".git"), "gitdir: ../../.git/modules/lib\n").unwrap();
        let tarball = clones.join("unpacked/deeper");
        std::fs::create_dir_all(&tarball).unwrap();
        entry(&clones, true);
        assert_eq!(set_aside(&clone), 1, "a clone in a trusted folder");
        assert_eq!(
            set_aside(&tarball),
            1,
            "an unpacked folder in a trusted folder"
        );
        assert_eq!(set_aside(&clones), 0, "the folder itself");
        entry(&dir.path().join("mine"), true);
        assert_eq!(
            set_aside(&submodule),
            1,
            "a submodule of a trusted repository"
        );
        assert_eq!(
            set_aside(&dir.path().join("mine/vendor")),
            0,
            "a folder of it"
        );
        // A refusal covers what is below it, repositories included.
        entry(&clones, false);
        let files = ConfigFiles::load(&home, &clone, &Environment::default(), &[], false).unwrap();
        assert!(matches!(files.trust().trust, crate::Trust::Refused { .. }));
    }

    /// A key variable the workspace names is set aside even when its own `.env` holds it: that
    /// file is not read for keys untrusted, so the lookup would go on to yours and send your
    /// `GITHUB_TOKEN` to the route. The keys its `.env` holds are set aside too, and named.
    #[test]
    fn a_key_variable_or_a_key_of_the_workspace_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(home.join(".env"), "MINE=users-key-0123456789\n").unwrap();
        std::fs::write(
            ws.join(".dsh/config.toml"),
            "[web.search]\napi_key_env = \"MINE\"\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(".env"),
            "MINE=projects-key\nDEEPSEEK_API_KEY=theirs-0123456789\nPORT=8080\n",
        )
        .unwrap();
        let load = |env: &Environment| {
            let files = ConfigFiles::load(&home, &ws, env, &[], false).unwrap();
            (files.set_aside().iter())
                .map(|s| (s.key.clone(), s.reason))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            load(&Environment::default()),
            [
                ("web.search.api_key_env".to_owned(), Reason::KeyVariable),
                ("DEEPSEEK_API_KEY".to_owned(), Reason::Account),
            ]
        );
        // Exported, the key is the launching environment's: nothing of the file is taken.
        let exported = Environment::from_pairs([("DEEPSEEK_API_KEY".to_owned(), "x".to_owned())]);
        assert_eq!(load(&exported).len(), 1);
    }

    /// The attack: what the notice and the terminal UI's question quote is the repository's (its
    /// folder's name, its keys, its values, its hooks' commands): an escape sequence or a
    /// right-to-left override in any of them would reach the terminal and could redraw the
    /// question. Each is shown escaped.
    #[test]
    fn the_notice_shows_the_repositorys_text_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("repo\u{1b}[2J\u{202e}");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(
            ws.join(".dsh/config.toml"),
            "[providers.\"p\\u001b]0;title\\u0007\"]\nkind = \"deepseek\"\n\
             api_key_env = \"K\"\n[mcp.servers.s]\ncommand = \"sh\\u001b[1m\"\n\
             args = [\"\\u202e\"]\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(".dsh/hooks.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x\u001b[2J\u202e"}]}]}}"#,
        )
        .unwrap();
        let files = ConfigFiles::load(&home, &ws, &Environment::default(), &[], false).unwrap();
        assert_eq!(files.set_aside().len(), 3);
        let notice = files.trust_notice().unwrap();
        let values: String = (files.set_aside().iter())
            .map(|s| format!("{} {}", s.key, s.value))
            .collect();
        for text in [&notice, &values] {
            assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{text:?}");
        }
    }
}
