//! The commands that are not runs, each read by its form's flags ([`super::commands`]) and
//! then checked for the words it takes. Their refusals point at the command's own help.

use dsh_core::checkpoints::RewindRequest;
use dsh_core::export::ExportFormat;

use super::command::Command;
use super::commands::{
    BLAME_FLAGS, KEY_FLAGS, MCP_LIST_FLAGS, MCP_LOGIN_FLAGS, REPLAY_FLAGS, REWIND_FLAGS,
    SANDBOX_FLAGS, SESSIONS_DIFF_FLAGS, SESSIONS_EXPORT_FLAGS, SESSIONS_LIST_FLAGS,
    SESSIONS_SEARCH_FLAGS, SESSIONS_SHOW_FLAGS, WORKFLOW_FLAGS, synopsis,
};
use super::completions::Shell;
use super::flag::{Parsed, Stop, Word, scan};
use crate::login_cmd::KeyCommand;
use crate::mcp_cmd::{LOGIN_WAIT, McpCommand};
use crate::rewind_cmd::RewindArgs;

fn refused(message: impl Into<String>) -> Stop {
    Stop::refused(message, true)
}

/// Every argument that is no flag, kept.
fn keep(_: &str) -> Result<Word, Stop> {
    Ok(Word::Keep)
}

/// `sessions list [--json]`, `sessions show ID [--json]`, `sessions rename ID TITLE`,
/// `sessions search TEXT [--limit N] [--json]`, `sessions export ID [--format F]` or
/// `sessions diff A B [--json]`.
pub fn sessions(args: &[String]) -> Result<Command, Stop> {
    let mut parsed = Parsed::default();
    match args {
        [verb, rest @ ..] if verb == "list" => {
            let words = scan(rest.to_vec(), SESSIONS_LIST_FLAGS, &mut parsed, keep)?;
            if !words.is_empty() || rest.len() > 1 {
                return Err(refused("`dsh sessions list` takes only --json"));
            }
            Ok(Command::SessionsList { json: parsed.json })
        }
        [verb, rest @ ..] if verb == "show" => {
            let ids = scan(rest.to_vec(), SESSIONS_SHOW_FLAGS, &mut parsed, keep)?;
            match ids.as_slice() {
                [id] if !id.starts_with("--") => Ok(Command::SessionsShow {
                    id: id.clone(),
                    json: parsed.json,
                }),
                _ => Err(refused(
                    "`dsh sessions show` needs one session id, and takes --json",
                )),
            }
        }
        [verb, id, title @ ..]
            if verb == "rename" && !id.starts_with("--") && !title.is_empty() =>
        {
            // The title's words may come quoted or not: `rename ID fix the parser`.
            Ok(Command::SessionsRename {
                id: id.clone(),
                title: title.join(" "),
            })
        }
        [verb, rest @ ..] if verb == "search" => {
            let words = scan(rest.to_vec(), SESSIONS_SEARCH_FLAGS, &mut parsed, keep)?;
            if let Some(flag) = words.iter().find(|word| word.starts_with("--")) {
                return Err(refused(format!(
                    "unknown option {flag} for dsh sessions search: dsh sessions search <text> \
                     [--limit <n>] [--json]"
                )));
            }
            let text = words.join(" ");
            if text.trim().is_empty() {
                return Err(refused(
                    "`dsh sessions search` needs the text to look for, as `dsh sessions search \
                     \"parser timeout\"`",
                ));
            }
            Ok(Command::SessionsSearch {
                text,
                limit: parsed.limit.unwrap_or(dsh_core::SEARCH_LIMIT),
                json: parsed.json,
            })
        }
        [verb, rest @ ..] if verb == "export" => {
            let ids = scan(rest.to_vec(), SESSIONS_EXPORT_FLAGS, &mut parsed, keep)?;
            match ids.as_slice() {
                [id] if !id.starts_with("--") => Ok(Command::SessionsExport {
                    id: id.clone(),
                    format: (parsed.export_format).unwrap_or(ExportFormat::Markdown),
                }),
                _ => Err(refused(
                    "`dsh sessions export` needs one session id, and takes --format markdown|html",
                )),
            }
        }
        [verb, rest @ ..] if verb == "diff" => {
            let ids = scan(rest.to_vec(), SESSIONS_DIFF_FLAGS, &mut parsed, keep)?;
            match ids.as_slice() {
                [a, b] if !a.starts_with("--") && !b.starts_with("--") => {
                    Ok(Command::SessionsDiff {
                        a: a.clone(),
                        b: b.clone(),
                        json: parsed.json,
                    })
                }
                _ => Err(refused(
                    "`dsh sessions diff` needs two session ids, as `dsh sessions diff A B`, and \
                     takes --json",
                )),
            }
        }
        [verb, ..] if verb == "rename" => Err(refused(
            "`dsh sessions rename` needs a session id and a title (\"\" takes the title away)",
        )),
        _ => Err(refused(
            "`dsh sessions` needs a subcommand: list [--json], show <id> [--json], rename \
             <id> <title>, search <text> [--limit <n>] [--json], export <id> [--format markdown|html], \
             or diff <a> <b> [--json]",
        )),
    }
}

/// `mcp login SERVER [--timeout D] [--no-browser]`, `mcp logout SERVER` or `mcp list [--json]`.
pub fn mcp(args: &[String]) -> Result<Command, Stop> {
    let usage = synopsis("mcp");
    let Some((verb, rest)) = args.split_first() else {
        return Err(refused(format!("`dsh mcp` needs a subcommand: {usage}")));
    };
    let mut parsed = Parsed::default();
    let command = match verb.as_str() {
        "login" => {
            let mut seen = 0;
            let words = scan(rest.to_vec(), MCP_LOGIN_FLAGS, &mut parsed, |word| {
                if word.starts_with('-') {
                    return Err(refused(format!(
                        "unknown option {word} for dsh mcp login: {usage}"
                    )));
                }
                seen += 1;
                if seen > 1 {
                    return Err(refused(format!("unexpected \"{word}\": {usage}")));
                }
                Ok(Word::Keep)
            })?;
            let server = words.into_iter().next().ok_or_else(|| {
                refused(format!(
                    "dsh mcp login needs a server name (`dsh mcp list` shows them): {usage}"
                ))
            })?;
            McpCommand::Login {
                server,
                wait: parsed.timeout.unwrap_or(LOGIN_WAIT),
                no_browser: parsed.no_browser,
            }
        }
        "logout" => match rest {
            [name] if !name.starts_with('-') => McpCommand::Logout {
                server: name.clone(),
            },
            _ => {
                return Err(refused(format!(
                    "dsh mcp logout takes one server name: {usage}"
                )));
            }
        },
        "list" => {
            let only_json = || refused(format!("dsh mcp list takes only --json: {usage}"));
            scan(rest.to_vec(), MCP_LIST_FLAGS, &mut parsed, |_| {
                Err(only_json())
            })?;
            if rest.len() > 1 {
                return Err(only_json());
            }
            McpCommand::List { json: parsed.json }
        }
        other => {
            return Err(refused(format!(
                "unknown subcommand \"{other}\" for dsh mcp: {usage}"
            )));
        }
    };
    Ok(Command::Mcp(command))
}

/// `rewind ID [--to TURN [--files | --conversation] | --before-call CALL | --undo] [--yes]
/// [--force] [--json]`.
pub fn rewind(args: &[String]) -> Result<Command, Stop> {
    let usage = synopsis("rewind");
    let mut parsed = Parsed::default();
    let mut seen = 0;
    let words = scan(args.to_vec(), REWIND_FLAGS, &mut parsed, |word| {
        if word.starts_with('-') {
            return Err(refused(format!(
                "unknown option {word} for dsh rewind: {usage}"
            )));
        }
        seen += 1;
        if seen > 1 {
            return Err(refused(format!("unexpected \"{word}\": {usage}")));
        }
        Ok(Word::Keep)
    })?;
    let id = words.into_iter().next().ok_or_else(|| {
        refused(format!(
            "dsh rewind needs a session id (`dsh sessions list` shows them): {usage}"
        ))
    })?;
    let Parsed {
        to_turn,
        before_call,
        undo,
        yes,
        force,
        files_only,
        conversation_only,
        json,
        ..
    } = parsed;
    if files_only && conversation_only {
        return Err(refused(
            "--files and --conversation exclude each other: give neither to rewind both",
        ));
    }
    let targets =
        usize::from(undo) + usize::from(to_turn.is_some()) + usize::from(before_call.is_some());
    if targets > 1 {
        return Err(refused(
            "--to, --before-call and --undo exclude each other: give one place to go back to",
        ));
    }
    if before_call.is_some() && conversation_only {
        return Err(refused(
            "--before-call takes the files back only: leave --conversation out",
        ));
    }
    let action = (targets == 1).then_some(RewindRequest {
        to_turn,
        // Mid-turn, only the files can go back.
        conversation: !files_only && before_call.is_none(),
        before_call,
        files: !conversation_only,
        force,
        accepted_outside: Vec::new(),
        apply: yes,
    });
    if action.is_none() && (yes || force || files_only || conversation_only) {
        return Err(refused(format!(
            "say what to rewind to, with --to TURN or --undo: {usage}"
        )));
    }
    Ok(Command::Rewind(RewindArgs { id, json, action }))
}

/// `blame FILE[:LINE] [--json]`: a path, and a line when it ends in `:N` and is no file itself.
pub fn blame(args: &[String]) -> Result<Command, Stop> {
    let usage = synopsis("blame");
    let mut parsed = Parsed::default();
    let words = scan(args.to_vec(), BLAME_FLAGS, &mut parsed, |word| {
        if word.starts_with('-') {
            return Err(refused(format!(
                "unknown option {word} for dsh blame: {usage}"
            )));
        }
        Ok(Word::Keep)
    })?;
    let [given] = words.as_slice() else {
        return Err(refused(format!(
            "dsh blame takes one file, with a line if you like (src/main.rs:12): {usage}"
        )));
    };
    let split = (given.rsplit_once(':'))
        .filter(|_| !std::path::Path::new(given).exists())
        .and_then(|(file, line)| Some((file, line.parse::<usize>().ok()?)));
    let (file, line) = match split {
        Some((_, 0)) => {
            return Err(refused(format!(
                "lines are counted from 1: give {given} with a line of 1 or more"
            )));
        }
        Some((file, line)) => (file.to_owned(), Some(line)),
        None => (given.clone(), None),
    };
    Ok(Command::Blame {
        file: file.into(),
        line,
        json: parsed.json,
    })
}

/// `replay ID --model ROUTE [--to TURN] [--keep] [--json]`.
pub fn replay(args: &[String]) -> Result<Command, Stop> {
    let usage = synopsis("replay");
    let mut parsed = Parsed::default();
    let words = scan(args.to_vec(), REPLAY_FLAGS, &mut parsed, |word| {
        if word.starts_with('-') {
            return Err(refused(format!(
                "unknown option {word} for dsh replay: {usage}"
            )));
        }
        Ok(Word::Keep)
    })?;
    let [id] = words.as_slice() else {
        return Err(refused(format!(
            "dsh replay takes one session id (`dsh sessions search TEXT` finds one): {usage}"
        )));
    };
    let Some(model) = parsed.flags.model else {
        return Err(refused(format!(
            "dsh replay needs --model, the route to replay on (as `--model deepseek/deepseek-v4-pro`): \
             {usage}"
        )));
    };
    Ok(Command::Replay(crate::replay_cmd::ReplayArgs {
        id: id.clone(),
        model,
        to: parsed.to_turn,
        keep: parsed.keep,
        json: parsed.json,
    }))
}

/// `login [--model NAME]` or `logout [--model NAME]`.
pub fn key(logout: bool, args: &[String]) -> Result<Command, Stop> {
    let verb = if logout { "logout" } else { "login" };
    let takes_only = || {
        refused(format!(
            "`dsh {verb}` takes only --model NAME (the provider is the one NAME is routed to; \
             without it, the configured model's)"
        ))
    };
    let mut parsed = Parsed::default();
    scan(args.to_vec(), KEY_FLAGS, &mut parsed, |_| Err(takes_only())).map_err(|_| takes_only())?;
    let model = parsed.flags.model;
    if args.len() > 2 || model.as_deref().is_some_and(|m| m.starts_with('-')) {
        return Err(takes_only());
    }
    Ok(Command::Key(KeyCommand { logout, model }))
}

/// `sandbox check [--patch FILE]...`.
pub fn sandbox(args: &[String]) -> Result<Command, Stop> {
    let Some((verb, rest)) = args.split_first() else {
        return Err(refused("`dsh sandbox` needs a subcommand: check"));
    };
    if verb != "check" {
        return Err(refused(format!(
            "unknown sandbox subcommand \"{verb}\": the one there is is check"
        )));
    }
    let mut parsed = Parsed::default();
    scan(rest.to_vec(), SANDBOX_FLAGS, &mut parsed, |arg| {
        Err(refused(format!(
            "unknown option '{arg}' for dsh sandbox check"
        )))
    })?;
    Ok(Command::SandboxCheck {
        patches: parsed.flags.patches,
    })
}

/// `completions bash|zsh|fish`.
pub fn completions(args: &[String]) -> Result<Command, Stop> {
    match args {
        [shell] => Shell::parse(shell)
            .map(Command::Completions)
            .ok_or_else(|| {
                refused(format!(
                    "dsh completions takes bash, zsh or fish, not \"{shell}\""
                ))
            }),
        _ => Err(refused(
            "dsh completions takes one shell: bash, zsh or fish",
        )),
    }
}

/// `man`, and nothing after it.
pub fn man(args: &[String]) -> Result<Command, Stop> {
    match args {
        [] => Ok(Command::Man),
        _ => Err(refused(
            "`dsh man` takes nothing more: it prints the man page (a task that starts with the \
             word man goes after --: dsh -- man ...)",
        )),
    }
}

/// `workflow list`, or `workflow NAME [--args JSON]` and a run's flags: `None` for the list,
/// else the name and the arguments left for the run's flags (`--args` read into `parsed`).
pub fn workflow(
    args: &[String],
    parsed: &mut Parsed,
) -> Result<Option<(String, Vec<String>)>, Stop> {
    let Some((name, rest)) = args
        .split_first()
        .filter(|(name, _)| !name.starts_with('-'))
    else {
        return Err(refused(
            "`dsh workflow` needs a saved workflow's name (`dsh workflow list` lists them)",
        ));
    };
    if name == "list" {
        return match rest {
            [] => Ok(None),
            _ => Err(refused("`dsh workflow list` takes no options")),
        };
    }
    let rest = scan(rest.to_vec(), WORKFLOW_FLAGS, parsed, keep)?;
    Ok(Some((name.clone(), rest)))
}

/// `trust [FOLDER]` or `untrust [FOLDER]`.
pub fn trust(untrust: bool, args: &[String]) -> Result<Command, Stop> {
    crate::trust_cmd::parse(untrust, args)
        .map(Command::Trust)
        .map_err(refused)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;

    fn words(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    fn message(stop: Stop) -> String {
        match stop {
            Stop::Refused { message, .. } => message,
            other => panic!("not a refusal: {other:?}"),
        }
    }

    #[test]
    fn rewind_arguments_are_read_or_refused_with_the_usage() {
        let rewound = |args: &[&str]| match rewind(&words(args)) {
            Ok(Command::Rewind(args)) => Ok(args),
            Ok(other) => panic!("{other:?}"),
            Err(stop) => Err(message(stop)),
        };
        assert_eq!(rewound(&["s-1"]).unwrap().action, None);
        let back = rewound(&["s-1", "--to", "2", "--files", "--yes"]).unwrap();
        assert_eq!(
            back.action,
            Some(RewindRequest {
                to_turn: Some(2),
                before_call: None,
                files: true,
                conversation: false,
                force: false,
                accepted_outside: Vec::new(),
                apply: true,
            })
        );
        let undo = rewound(&["--undo", "s-1"]).unwrap().action.unwrap();
        assert_eq!(
            (undo.to_turn, undo.files, undo.conversation),
            (None, true, true)
        );
        for (bad, says) in [
            (&["--to", "2"][..], "needs a session id"),
            (&["s-1", "--to", "zero"], "takes a turn number"),
            (&["s-1", "--to", "0"], "takes a turn number"),
            (
                &["s-1", "--files", "--conversation", "--to", "1"],
                "exclude each other",
            ),
            (&["s-1", "--undo", "--to", "1"], "exclude each other"),
            (
                &["s-1", "--before-call", "c1", "--to", "1"],
                "exclude each other",
            ),
            (
                &["s-1", "--before-call", "c1", "--conversation"],
                "files back only",
            ),
            (&["s-1", "--before-call"], "needs a call id"),
            (&["s-1", "--yes"], "say what to rewind to"),
            (&["s-1", "--soon"], "unknown option --soon"),
            (&["s-1", "s-2"], "unexpected \"s-2\""),
        ] {
            let error = rewound(bad).unwrap_err();
            assert!(error.contains(says), "{bad:?}: {error}");
        }
    }

    #[test]
    fn mcp_subcommands_are_read_and_mistakes_named() {
        let read = |args: &[&str]| match mcp(&words(args)) {
            Ok(Command::Mcp(command)) => Ok(command),
            Ok(other) => panic!("{other:?}"),
            Err(stop) => Err(message(stop)),
        };
        assert_eq!(
            read(&["login", "docs", "--timeout", "90s", "--no-browser"]),
            Ok(McpCommand::Login {
                server: "docs".into(),
                wait: Duration::from_secs(90),
                no_browser: true
            })
        );
        assert_eq!(
            read(&["login", "docs"]),
            Ok(McpCommand::Login {
                server: "docs".into(),
                wait: LOGIN_WAIT,
                no_browser: false
            })
        );
        assert_eq!(
            read(&["logout", "docs"]),
            Ok(McpCommand::Logout {
                server: "docs".into()
            })
        );
        assert_eq!(
            read(&["list", "--json"]),
            Ok(McpCommand::List { json: true })
        );
        for (bad, says) in [
            (&["login"][..], "needs a server name"),
            (&["login", "a", "--wat"], "unknown option --wat"),
            (&["login", "a", "--timeout"], "--timeout needs a duration"),
            (&["list", "--json", "--json"], "takes only --json"),
            (&["frob"], "unknown subcommand \"frob\""),
            (&[], "needs a subcommand"),
        ] {
            let error = read(bad).unwrap_err();
            assert!(error.contains(says), "{bad:?}: {error}");
        }
    }

    #[test]
    fn login_takes_only_a_model_and_sandbox_only_patches() {
        let key_of = |args: &[&str]| match key(false, &words(args)) {
            Ok(Command::Key(key)) => Ok(key.model),
            Ok(other) => panic!("{other:?}"),
            Err(stop) => Err(message(stop)),
        };
        assert_eq!(key_of(&[]), Ok(None));
        assert_eq!(key_of(&["--model", "m"]), Ok(Some("m".into())));
        for bad in [
            &["--model"][..],
            &["--model", "-m"],
            &["--model=m"],
            &["--model", "a", "--model", "b"],
            &["m"],
        ] {
            assert!(
                key_of(bad)
                    .unwrap_err()
                    .starts_with("`dsh login` takes only --model"),
                "{bad:?}"
            );
        }
        let Ok(Command::SandboxCheck { patches }) =
            sandbox(&words(&["check", "--patch", "a.toml", "--patch=b.yml"]))
        else {
            panic!("a sandbox check")
        };
        assert_eq!(patches, [Path::new("a.toml"), Path::new("b.yml")]);
        assert_eq!(
            message(sandbox(&words(&["check", "x"])).unwrap_err()),
            "unknown option 'x' for dsh sandbox check"
        );
    }
}
