//! `dsh blame FILE[:LINE] [--json]`: for each line of a file of this directory (or the one
//! asked), the session, turn and call that last wrote it, and the user's message that turn
//! answered ([`dsh_core::blame_file`]).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use dsh_core::{BlameLine, SetupError};

use crate::surface::Surface;

pub fn run(file: &Path, line: Option<usize>, json: bool) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, json),
    };
    let lines = match dsh_core::blame_file(&home, &cwd, file, line) {
        Ok(lines) => lines,
        Err(error) => {
            let hint = match &error {
                dsh_core::BlameError::Unreadable { .. } => {
                    Some("give the file's path from this directory, the one its sessions ran in")
                }
                dsh_core::BlameError::NoLine { .. } => Some("leave :LINE out to see every line"),
                dsh_core::BlameError::Outside { .. } => None,
                dsh_core::BlameError::NotPlain { .. } | dsh_core::BlameError::TooLarge { .. } => {
                    Some("blame a text file the sessions wrote, with dsh blame FILE:LINE")
                }
            };
            let mut error = SetupError::new(error.code(), error.to_string());
            error.hint = hint.map(str::to_owned);
            return fail(&error, json);
        }
    };
    let mut out = String::new();
    if json {
        for line in &lines {
            let _ = writeln!(out, "{}", serde_json::to_string(line).unwrap_or_default());
        }
    } else {
        let width = lines.last().map_or(1, |l| l.line.to_string().len());
        for line in &lines {
            let _ = writeln!(out, "{:>width$}  {}  {}", line.line, who(line), line.text);
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// What wrote a line, on one line: the session, turn and call, and the user's message.
fn who(line: &BlameLine) -> String {
    let Some(origin) = &line.origin else {
        return "(not written by dsh)".to_owned();
    };
    let call = match (&origin.tool, &origin.call_id) {
        (Some(tool), Some(id)) => format!("{tool} {id}"),
        _ => "one of its calls".to_owned(),
    };
    let message = origin.message.lines().next().unwrap_or_default();
    let message: String = message.chars().take(40).collect();
    format!(
        "{} turn {} {call} \"{message}\"",
        origin.session, origin.turn
    )
}

fn fail(error: &SetupError, json: bool) -> u8 {
    Surface::new(json).failed(error);
    1
}
