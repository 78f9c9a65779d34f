//! `dsh man`: the description of the command line as a man page, in roff.

use std::fmt::Write as _;

use super::commands::{COMMANDS, ENVIRONMENT, EXAMPLES, EXIT_STATUS, INTRO, SUMMARY, TASK};
use super::flag::Flag;
use super::help::{option_words, run_options_note};
use super::run_flags::RUN_FLAGS;

/// `text` as roff takes it: backslashes and hyphens escaped, and no line read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    // A line starting with `.` or `'` would be read as a request.
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// One option as a tagged paragraph.
fn option(out: &mut String, opt: &Flag) {
    let _ = writeln!(
        out,
        ".TP\n\\fB{}\\fR\n{}",
        roff(option_words(opt).trim()),
        roff(opt.about)
    );
}

/// The man page, in roff (`man -l` reads it): every command with its own options, then the
/// options of a run.
pub fn man_page() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let mut out = format!(
        ".TH DSH 1 \"\" \"dsh {version}\" \"User Commands\"\n.SH NAME\ndsh \\- {SUMMARY}\n\
         .SH SYNOPSIS\n"
    );
    for cmd in COMMANDS {
        let _ = writeln!(out, ".br\n\\fB{}\\fR", roff(cmd.usage));
    }
    let _ = write!(
        out,
        ".SH DESCRIPTION\n{}\n.PP\n{}\n.SH COMMANDS\n",
        roff(INTRO),
        roff(TASK)
    );
    for cmd in COMMANDS.iter().filter(|c| !c.about.is_empty()) {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", roff(cmd.usage), roff(cmd.about));
        if let Some(note) = run_options_note(cmd.run_options).filter(|_| !cmd.word.is_empty()) {
            let _ = writeln!(out, "{}", roff(note));
        }
        if !cmd.flags.is_empty() {
            out.push_str(".RS\n");
            for opt in cmd.flags {
                option(&mut out, opt);
            }
            out.push_str(".RE\n");
        }
    }
    out.push_str(".SH OPTIONS\n");
    for opt in RUN_FLAGS {
        option(&mut out, opt);
    }
    out.push_str(".SH ENVIRONMENT\n");
    for (name, about) in ENVIRONMENT {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", roff(name), roff(about));
    }
    out.push_str(".SH EXAMPLES\n");
    for example in EXAMPLES {
        let _ = writeln!(out, ".PP\n.nf\n{}\n.fi", roff(example));
    }
    let _ = write!(
        out,
        ".SH EXIT STATUS\n{}\n.SH SEE ALSO\nThe documents in the docs/ folder of dsh's \
         repository: cli.md, config.md, tui.md, web.md.\n",
        roff(EXIT_STATUS)
    );
    out
}
