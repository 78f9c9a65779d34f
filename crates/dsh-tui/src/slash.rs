//! Slash commands, and the user's saved prompts ([`dsh_core::saved_prompts`]): `NAME.md` in
//! `$DSH_HOME/prompts/` or the project's `.dsh/prompts/` is `/NAME`.

use std::path::PathBuf;

use dsh_core::SavedPrompt;

/// The built-in commands, with what `/help` says of each.
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "/model",
        "show the model, or switch: /model NAME (the session goes on)",
    ),
    (
        "/compact",
        "summarise the conversation so far to free context: /compact [FOCUS] says what to keep",
    ),
    (
        "/permissions",
        "show the permission mode, or switch between turns: /permissions MODE (read-only, \
         workspace-write, danger-full-access, plan, auto)",
    ),
    (
        "/plan",
        "enter plan mode: explore and submit a plan, nothing is changed (/permissions MODE \
         leaves it)",
    ),
    ("/new", "start a new session"),
    (
        "/resume",
        "pick a session of this folder to go back to (/resume ID opens one)",
    ),
    (
        "/rewind",
        "go back to the start of a turn: files, conversation or both (/rewind N for turn N)",
    ),
    ("/diff", "the workspace's uncommitted changes (git diff)"),
    (
        "/copy",
        "put the last answer on the clipboard (OSC 52: works over SSH and in tmux)",
    ),
    (
        "/export",
        "write the session as a readable document: /export [FILE.md|FILE.html]",
    ),
    (
        "/blame",
        "the session, turn and call that wrote a line: /blame FILE:LINE (or each line of FILE)",
    ),
    ("/status", "session, model, sandbox, tokens and cost"),
    (
        "/edit",
        "write the message in your editor ($VISUAL or $EDITOR; Ctrl-G too)",
    ),
    (
        "/rename",
        "give this session a title, which lists show (/rename alone takes it away)",
    ),
    ("/skills", "the skills the model can load"),
    ("/prompts", "your saved prompts"),
    ("/help", "keys and commands"),
    ("/quit", "leave (the session stays on disk)"),
];

/// A command line typed in the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Model(Option<String>),
    Permissions(Option<String>),
    /// `/compact [FOCUS]`: what the summary should keep.
    Compact(Option<String>),
    New,
    Resume(Option<String>),
    /// `/rewind [TURN]`: back to the start of a turn.
    Rewind(Option<String>),
    Diff,
    /// `/copy`: the last answer on the clipboard.
    Copy,
    /// `/export [FILE]`: the session as markdown or HTML (by the file's extension).
    Export(Option<String>),
    /// `/blame FILE[:LINE]`: what wrote a file's lines, or the one asked.
    Blame(Option<String>),
    Status,
    /// `/edit`: the message written in `$EDITOR` (as Ctrl-G).
    Edit,
    /// `/rename [TITLE]`: the session's title (none takes it away).
    Rename(String),
    Skills,
    Prompts,
    Help,
    Quit,
    /// A saved prompt, expanded: the text to send.
    Prompt(String),
    Unknown(String),
}

/// Where saved prompts are kept: the user's home for dsh and the project. The UI reads them
/// again whenever a command line is started or entered, so a prompt saved while it runs is a
/// command at once.
#[derive(Debug, Clone)]
pub struct PromptDirs {
    pub home: PathBuf,
    pub cwd: PathBuf,
}

impl PromptDirs {
    pub fn load(&self) -> Vec<SavedPrompt> {
        dsh_core::saved_prompts(&self.home, &self.cwd)
    }
}

/// What `line` (starting with `/`) asks for. A saved prompt that cannot be read is
/// `Unknown` with the reason.
pub fn parse(line: &str, prompts: &[SavedPrompt]) -> Slash {
    let line = line.trim();
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let arg = (!rest.is_empty()).then(|| rest.to_owned());
    match name {
        "/model" => Slash::Model(arg),
        "/permissions" => Slash::Permissions(arg),
        "/plan" => Slash::Permissions(Some("plan".to_owned())),
        "/compact" => Slash::Compact(arg),
        "/new" | "/clear" => Slash::New,
        "/resume" => Slash::Resume(arg),
        "/rewind" => Slash::Rewind(arg),
        "/diff" => Slash::Diff,
        "/copy" => Slash::Copy,
        "/export" => Slash::Export(arg),
        "/blame" => Slash::Blame(arg),
        "/status" => Slash::Status,
        "/edit" => Slash::Edit,
        "/rename" => Slash::Rename(rest.to_owned()),
        "/skills" => Slash::Skills,
        "/prompts" => Slash::Prompts,
        "/help" | "/?" => Slash::Help,
        "/quit" | "/exit" => Slash::Quit,
        _ => match prompts.iter().find(|p| name[1..] == p.name) {
            Some(prompt) => match prompt.expand(rest) {
                Ok(text) => Slash::Prompt(text),
                Err(e) => Slash::Unknown(e.to_string()),
            },
            None => Slash::Unknown(format!(
                "unknown command {name}: /help lists the commands and your saved prompts"
            )),
        },
    }
}

/// The commands and prompts starting with what is typed, for the hint under the composer.
pub fn completions(typed: &str, prompts: &[SavedPrompt]) -> Vec<String> {
    COMMANDS
        .iter()
        .map(|(c, _)| (*c).to_owned())
        .chain(prompts.iter().map(|p| format!("/{}", p.name)))
        .filter(|c| c.starts_with(typed))
        .collect()
}

/// What Tab makes of a command being typed: the one command or prompt it starts, with a space
/// after it, or the longest start all the matches share; `None` when that adds nothing.
pub fn complete(typed: &str, prompts: &[SavedPrompt]) -> Option<String> {
    let found = completions(typed, prompts);
    match found.as_slice() {
        [] => None,
        [only] => Some(format!("{only} ")),
        [first, rest @ ..] => {
            let mut shared: Vec<char> = first.chars().collect();
            for other in rest {
                let same = shared
                    .iter()
                    .zip(other.chars())
                    .take_while(|(a, b)| **a == *b)
                    .count();
                shared.truncate(same);
            }
            let prefix: String = shared.into_iter().collect();
            (prefix.len() > typed.len()).then_some(prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_saved_prompt_can_take_a_commands_name() {
        for (command, _) in COMMANDS {
            assert!(
                dsh_core::BUILT_IN_COMMANDS.contains(&&command[1..]),
                "{command}"
            );
        }
    }

    #[test]
    fn commands_and_saved_prompts() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::create_dir_all(cwd.path().join(".dsh/prompts")).unwrap();
        std::fs::write(
            home.path().join("prompts/review.md"),
            "Review $ARGUMENTS carefully.\n",
        )
        .unwrap();
        std::fs::write(home.path().join("prompts/tests.md"), "user's tests").unwrap();
        std::fs::write(cwd.path().join(".dsh/prompts/tests.md"), "Run the tests.").unwrap();
        std::fs::write(home.path().join("prompts/quit.md"), "shadowed").unwrap();
        // The project's prompts are offered in a folder the user trusts.
        let real = std::fs::canonicalize(cwd.path()).unwrap();
        let entry = dsh_core::config::trust::quote_path(&real);
        std::fs::write(
            home.path().join("config.toml"),
            format!("[projects.{entry}]\ntrusted = true\n"),
        )
        .unwrap();
        let prompts = dsh_core::saved_prompts(home.path(), cwd.path());
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["tests", "review"],
            "the project's first; built-ins are not shadowed"
        );

        assert_eq!(
            parse("/model  deepseek-chat ", &prompts),
            Slash::Model(Some("deepseek-chat".into()))
        );
        assert_eq!(parse("/quit", &prompts), Slash::Quit);
        assert_eq!(
            parse("/review src/lib.rs", &prompts),
            Slash::Prompt("Review src/lib.rs carefully.".into())
        );
        assert_eq!(
            parse("/tests now", &prompts),
            Slash::Prompt("Run the tests.\n\nnow".into())
        );
        assert!(matches!(parse("/nope", &prompts), Slash::Unknown(m) if m.contains("/help")));
        assert_eq!(
            completions("/re", &prompts),
            ["/resume", "/rewind", "/rename", "/review"]
        );
        assert_eq!(complete("/st", &prompts).as_deref(), Some("/status "));
        assert_eq!(complete("/r", &prompts).as_deref(), Some("/re"));
        assert_eq!(complete("/re", &prompts), None, "nothing more is shared");
        assert_eq!(complete("/zz", &prompts), None);
    }
}
