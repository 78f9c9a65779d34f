//! The flags of a run (`dsh [OPTIONS] [TASK...]`), which the commands that start runs or
//! serve sessions take too: each its names, help and what it sets.

use std::str::FromStr;

use dsh_core::config::{AgentPreset, ApprovalPolicy, Effort, PermissionMode, Usd};

use super::flag::{Complete, Flag, Given, Stop};

const EFFORTS: &[&str] = &["off", "low", "high", "max"];
const MODES: &[&str] = &[
    "read-only",
    "workspace-write",
    "danger-full-access",
    "plan",
    "auto",
];

/// A run's flags, in the order `--help` lists them.
pub const RUN_FLAGS: &[Flag] = &[
    JSON,
    Flag::valued(
        "--model",
        "<name>",
        Complete::Nothing,
        "Model to use (default: deepseek-v4-flash)",
        |p, given| {
            let model = not_blank(&given, "needs a model name")?;
            p.flags.model = Some(model.to_owned());
            Ok(())
        },
    ),
    Flag::valued(
        "--effort",
        "<level>",
        Complete::Words(EFFORTS),
        "Reasoning effort: off, low, high or max (default: high)",
        |p, given| {
            let level = Effort::from_str(given.required()?);
            p.flags.effort = Some(level.map_err(|e| Stop::refused(e.to_string(), false))?);
            Ok(())
        },
    ),
    Flag::valued(
        "--preset",
        "<name>",
        Complete::Words(&["standard", "minimal"]),
        "The tool set: standard (default), or minimal (bash and str_replace_editor only, the \
         smallest prompt)",
        |p, given| {
            let preset = AgentPreset::from_str(given.required()?);
            p.flags.preset = Some(preset.map_err(|e| Stop::refused(e, false))?);
            Ok(())
        },
    ),
    Flag::valued(
        "--max-steps",
        "<n>",
        Complete::Nothing,
        "Stop a turn after this many model requests (default: 500)",
        |p, given| {
            p.flags.max_steps = Some(positive(&given)?);
            Ok(())
        },
    ),
    Flag::valued(
        "--input-format",
        "<format>",
        Complete::Words(&["text", "stream-json"]),
        "text (default), or stream-json: with --json, user messages are read from stdin as JSON \
         lines, a turn each, until EOF",
        |p, given| {
            p.stream_input = match given.required()? {
                "text" => false,
                "stream-json" => true,
                other => {
                    return Err(Stop::refused(
                        format!(
                            "{} must be text or stream-json, got \"{other}\"",
                            given.flag.long
                        ),
                        false,
                    ));
                }
            };
            Ok(())
        },
    ),
    Flag::valued(
        "--output-schema",
        "<file>",
        Complete::File,
        "The final answer must be JSON valid against this JSON Schema; an invalid one is sent \
         back twice, then the run fails (exit status 6)",
        |p, given| {
            p.flags.output_schema = Some(not_blank(&given, "needs a file name")?.into());
            Ok(())
        },
    ),
    Flag::valued(
        "--system-prompt-append",
        "<text>",
        Complete::Nothing,
        "Add this text at the end of the system prompt",
        |p, given| {
            p.flags.system_prompt_append = Some(not_blank(&given, "needs text")?.to_owned());
            Ok(())
        },
    ),
    Flag::switch(
        "--continue",
        "Continue the latest session of this directory",
        |p, _| {
            p.flags.continue_latest = true;
            Ok(())
        },
    ),
    Flag::switch(
        "--fork",
        "With --session-id or --continue: a new session that starts from a copy of that one's \
         history (the old one is left as it was)",
        |p, _| {
            p.flags.fork = true;
            Ok(())
        },
    ),
    Flag::switch(
        "--title",
        "Ask the model for the session's title after its first turn (one short request; the \
         terminal UI and dsh web do by default, a headless run only with this or sessions.titles)",
        |p, _| {
            p.flags.title = true;
            Ok(())
        },
    ),
    Flag::valued(
        "--max-turns",
        "<n>",
        Complete::Nothing,
        "Stop the run after this many model requests in all (exit status 3)",
        |p, given| {
            p.flags.max_turns = Some(positive(&given)?);
            Ok(())
        },
    ),
    Flag::valued(
        "--max-budget-usd",
        "<usd>",
        Complete::Nothing,
        "Stop the run once it has cost this much at the model's prices (exit status 4; refused \
         for a model without prices)",
        |p, given| {
            let amount = given.required()?;
            p.flags.max_budget_usd = Some(Usd::parse(amount).ok_or_else(|| {
                Stop::refused(
                    format!(
                        "{} needs a positive amount of US dollars, like 0.50, got \"{amount}\"",
                        given.flag.long
                    ),
                    false,
                )
            })?);
            Ok(())
        },
    ),
    Flag::valued(
        "--timeout",
        "<duration>",
        Complete::Nothing,
        "Stop the run after this long: 90s, 500ms, 10m, 1h (exit status 5)",
        |p, given| {
            let text = given.required()?;
            p.timeout = Some(parse_duration(text).ok_or_else(|| {
                Stop::refused(
                    format!(
                        "{} needs a duration like 90s, 500ms, 10m or 1h (a bare number is \
                         seconds), got \"{text}\"",
                        given.flag.long
                    ),
                    false,
                )
            })?);
            Ok(())
        },
    ),
    Flag::valued(
        "--patch",
        "<file>",
        Complete::File,
        "Apply a config file (TOML or YAML rows) over the others (repeatable)",
        |p, given| {
            let file = not_blank(&given, "needs a file name")?;
            p.flags.patches.push(file.into());
            Ok(())
        },
    ),
    Flag::valued(
        "--permission-mode",
        "<mode>",
        Complete::Words(MODES),
        "read-only, workspace-write (default), danger-full-access, plan (explore and submit a \
         plan; nothing is changed), or auto (full access, a reviewer model allowing or denying \
         each call that could change something)",
        |p, given| {
            let mode = given.required()?;
            p.flags.permission_mode = Some(mode.parse::<PermissionMode>().map_err(|_| {
                Stop::refused(
                    format!(
                        "{} must be {}, got \"{mode}\"",
                        given.flag.long,
                        PermissionMode::CHOICES
                    ),
                    false,
                )
            })?);
            Ok(())
        },
    ),
    Flag::valued(
        "--approval-policy",
        "<policy>",
        Complete::Words(&["ask", "never"]),
        "ask or never: whether a call may ask for a wider sandbox (default: never under \
         danger-full-access, else ask; headless has no one to ask either way)",
        |p, given| {
            let policy = given.required()?;
            p.flags.approval_policy = Some(policy.parse::<ApprovalPolicy>().map_err(|_| {
                Stop::refused(
                    format!("{} must be ask or never, got \"{policy}\"", given.flag.long),
                    false,
                )
            })?);
            Ok(())
        },
    ),
    Flag::valued(
        "--add-dir",
        "<dir>",
        Complete::Dir,
        "Another writable directory: absolute, existing, its real path (repeatable)",
        |p, given| {
            let dir = not_blank(&given, "needs a directory")?;
            p.flags.add_dirs.push(dir.into());
            Ok(())
        },
    ),
    Flag::valued(
        "--session-id",
        "<id>",
        Complete::Nothing,
        "Continue that session (from the directory it ran in)",
        |p, given| {
            // The id is opaque: used exactly as given, whitespace included (as the reference
            // does); an empty one is an error.
            let id = given.required()?;
            if id.is_empty() {
                return Err(Stop::refused(
                    format!("{} needs a session id", given.flag.long),
                    true,
                ));
            }
            p.flags.session_id = Some(id.to_owned());
            Ok(())
        },
    ),
    Flag::valued(
        "--tools",
        "<names>",
        Complete::Nothing,
        "Offer only these tools (comma-separated; mcp__<server>__* for a server's; repeatable; \
         \"\" for none)",
        |p, given| {
            // Repeatable; an empty list offers no tools at all.
            let names = tool_names(given.required()?);
            p.flags.tools.get_or_insert_with(Vec::new).extend(names);
            Ok(())
        },
    ),
    Flag::valued(
        "--disallowed-tools",
        "<names>",
        Complete::Nothing,
        "Never offer these tools (comma-separated; repeatable)",
        |p, given| {
            let names = tool_names(given.required()?);
            p.flags.disallowed_tools.extend(names);
            Ok(())
        },
    ),
    Flag::valued(
        "--output-last-message",
        "<file>",
        Complete::File,
        "Also write the final answer to this file",
        |p, given| {
            p.output_last_message = Some(not_blank(&given, "needs a file name")?.into());
            Ok(())
        },
    )
    .short('o'),
    Flag::valued(
        "--profile",
        "<name>",
        Complete::Words(&["headless"]),
        "headless: always run headless, as DeepSeek Harness takes it; keys saved by dsh login \
         and MCP sign-ins are then not used unless a patch restores them",
        |p, given| {
            match given.required()? {
                "" => {
                    let message = format!("{} needs a name", given.flag.long);
                    return Err(Stop::refused(message, false));
                }
                "headless" => {}
                other => {
                    return Err(Stop::refused(
                        format!(
                            "profile \"{other}\" is not available: the profiles are headless, \
                             and none for the terminal UI (use --profile headless, or leave the \
                             option out)"
                        ),
                        false,
                    ));
                }
            }
            p.profile = true;
            Ok(())
        },
    ),
    Flag::switch(
        "--dump-config",
        "Print every setting in effect (defaults included, secrets hidden) and where each came \
         from, and exit",
        |p, _| {
            p.dump_config = true;
            Ok(())
        },
    )
    .whole(),
    HELP,
    Flag::switch(
        "--version",
        "Print the version and the commit it was built from",
        |_, _| Err(Stop::Version),
    )
    .short('V'),
];

/// `--json`, which decides how the errors found before it are reported.
pub const JSON: Flag = Flag::switch(
    "--json",
    "Write a JSON event stream to stdout, one object per line",
    |p, _| {
        p.json = true;
        Ok(())
    },
);

/// `--help`, which also asks for a command's own help after its word.
pub const HELP: Flag = Flag::switch("--help", "Print this help", |_, _| Err(Stop::Help)).short('h');

/// Whether the run's flag `name` takes a value (the next argument, unless given as
/// `--name=value`).
pub fn takes_value(name: &str) -> bool {
    super::flag::find(RUN_FLAGS, name).is_some_and(|flag| flag.value.is_some())
}

/// The value, unless it is blank: then "`--flag` `needs`", pointing at the help.
fn not_blank<'a>(given: &Given<'a>, needs: &str) -> Result<&'a str, Stop> {
    let value = given.required()?;
    if value.trim().is_empty() {
        return Err(Stop::refused(format!("{} {needs}", given.flag.long), true));
    }
    Ok(value)
}

/// A whole number above zero.
fn positive(given: &Given<'_>) -> Result<u32, Stop> {
    let n = given.required()?;
    n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
        Stop::refused(
            format!(
                "{} needs a positive whole number, got \"{n}\"",
                given.flag.long
            ),
            false,
        )
    })
}

/// `500ms`, `90s`, `10m`, `1h`, or a bare number of seconds; more than zero.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    (seconds.is_finite() && seconds > 0.0 && seconds < 1e9)
        .then(|| std::time::Duration::from_secs_f64(seconds))
}

/// Tool names given as `a,b` or `a b`.
fn tool_names(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split([',', ' '])
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}
