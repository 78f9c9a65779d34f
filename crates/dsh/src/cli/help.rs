//! `--help` and `dsh <command> --help`, drawn from the description of the command line.

use std::fmt::Write as _;

use super::commands::{
    COMMANDS, ENVIRONMENT, EXAMPLES, EXIT_STATUS, Form, INTRO, RunOptions, SUMMARY, TASK, forms,
};
use super::flag::Flag;
use super::run_flags::RUN_FLAGS;

/// Where an option's description starts in `--help`.
const ABOUT_COLUMN: usize = 26;
/// How wide `--help` is.
const WIDTH: usize = 92;

/// Where the usage lines' descriptions start in `--help`.
const USAGE_COLUMN: usize = 45;

/// `--help`.
pub fn help() -> String {
    let mut out = format!("dsh: {SUMMARY}.\n\n{}\n\nUsage:\n", wrap(INTRO, WIDTH, ""));
    for cmd in COMMANDS {
        usage_line(&mut out, cmd);
    }
    let task = format!("{TASK} `dsh <command> --help` shows a command's own options.");
    let _ = write!(out, "\n{}\n\nOptions:\n", wrap(&task, WIDTH, ""));
    options(&mut out, RUN_FLAGS);
    out.push_str("\nEnvironment:\n");
    for (name, about) in ENVIRONMENT {
        let about = wrap(about, WIDTH, &" ".repeat(ABOUT_COLUMN));
        let _ = writeln!(out, "  {name:<23} {}", about.trim_start());
    }
    out.push_str("\nExamples:\n");
    for example in EXAMPLES {
        let _ = writeln!(out, "  {example}");
    }
    let _ = writeln!(
        out,
        "\n{}",
        wrap(&format!("Exit status: {EXIT_STATUS}"), WIDTH, "")
    );
    out
}

/// A usage line, its description beside it or, for a long one, under it.
fn usage_line(out: &mut String, cmd: &Form) {
    let head = format!("  {}", cmd.usage);
    if cmd.about.is_empty() {
        let _ = writeln!(out, "{head}");
    } else if head.len() < USAGE_COLUMN {
        let _ = writeln!(out, "{head:<USAGE_COLUMN$}({})", cmd.about);
    } else {
        let _ = writeln!(out, "{head}\n{:USAGE_COLUMN$}({})", "", cmd.about);
    }
}

fn options(out: &mut String, options: &[Flag]) {
    for opt in options {
        let head = format!("  {}", option_words(opt));
        let indent = " ".repeat(ABOUT_COLUMN);
        let about = wrap(opt.about, WIDTH, &indent);
        if head.len() + 2 <= ABOUT_COLUMN {
            let _ = writeln!(out, "{head:<ABOUT_COLUMN$}{}", about.trim_start());
        } else {
            let _ = writeln!(out, "{head}\n{about}");
        }
    }
}

/// What a run's options are to a command that takes them, in its help.
pub fn run_options_note(run_options: RunOptions) -> Option<&'static str> {
    match run_options {
        RunOptions::None => None,
        RunOptions::All => Some("It also takes every option of a run (dsh --help)."),
        RunOptions::Defaults => Some(
            "It also takes a run's options (dsh --help) as the defaults of every session it \
             serves; those about one run (--json, -o, --timeout, --input-format, \
             --output-schema, --session-id, --continue, --fork, --dump-config) are refused.",
        ),
    }
}

/// `dsh <word> --help`: the command's forms, what each does, and its options; `None` for a
/// word that is not a command.
pub fn command_help(word: &str) -> Option<String> {
    let forms: Vec<&Form> = forms(word).collect();
    let first = forms.first()?;
    let mut out = format!("dsh {word}: {}.\n\nUsage:\n", first.about);
    for cmd in &forms {
        if forms.len() == 1 {
            let _ = writeln!(out, "  {}", cmd.usage);
        } else {
            usage_line(&mut out, cmd);
        }
    }
    let mut own: Vec<&Flag> = Vec::new();
    for opt in forms.iter().flat_map(|cmd| cmd.flags) {
        if !own
            .iter()
            .any(|o| o.long == opt.long && o.about == opt.about)
        {
            own.push(opt);
        }
    }
    out.push_str("\nOptions:\n");
    for opt in own {
        options(&mut out, std::slice::from_ref(opt));
    }
    let _ = writeln!(out, "  -h, --help              Print this help");
    if let Some(note) = forms
        .iter()
        .find_map(|cmd| run_options_note(cmd.run_options))
    {
        let _ = writeln!(out, "\n{}", wrap(note, WIDTH, ""));
    }
    Some(out)
}

/// `-o, --output-last-message <file>` / `      --json`.
pub fn option_words(opt: &Flag) -> String {
    let short = opt.short.map_or("    ".to_owned(), |s| format!("-{s}, "));
    match opt.value {
        Some(value) => format!("{short}{} {value}", opt.long),
        None => format!("{short}{}", opt.long),
    }
}

/// `text` filled to `width` columns, each line after `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            lines.push(format!("{indent}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(format!("{indent}{line}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::super::commands::COMMAND_WORDS;
    use super::*;

    #[test]
    fn every_command_word_has_its_help_and_every_help_fits_its_width() {
        let mut helps = vec![help()];
        for word in COMMAND_WORDS {
            helps.push(command_help(word).unwrap_or_else(|| panic!("no help for {word}")));
        }
        for cmd in COMMANDS.iter().filter(|c| !c.word.is_empty()) {
            assert!(
                COMMAND_WORDS.contains(&cmd.word),
                "{} is not completed",
                cmd.word
            );
        }
        for line in helps.iter().flat_map(|h| h.lines()) {
            assert!(line.chars().count() <= WIDTH + 12, "too wide: {line}");
        }
    }
}
