//! `--dump-config`: every setting a run would use, each with where it came from (`default`, a
//! config file, a variable or a flag), as core resolves them for the run itself. Secrets are
//! hidden by core (`dsh_core::config::SettingRow`).

use std::fmt::Write as _;
use std::io::Write as _;

use crate::cli::RunArgs;
use crate::surface::Surface;

pub fn run(args: &RunArgs) -> u8 {
    match render(args) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(message) => {
            Surface::new(false).fail(&message, &message, None);
            1
        }
    }
}

fn render(args: &RunArgs) -> Result<String, String> {
    let settings = crate::place::settings(&args.flags).map_err(|e| e.message)?;
    let mut out = String::from(
        "# dsh settings: each value with its source: default, a file (lowest first), the \
         environment, or a flag\n",
    );
    let files = settings.files();
    for layer in files.layers() {
        let mut state = match (&layer.table, layer.rows) {
            (Some(_), true) => "read: reference rows",
            (Some(_), false) => "read",
            (None, _) => "absent",
        }
        .to_owned();
        // The workspace's own config: what was set aside for want of trust, listed below.
        if layer.path == files.project_file() && layer.table.is_some() {
            state.push_str(&match files.set_aside().len() {
                _ if files.trust().is_trusted() => "; trusted".to_owned(),
                0 => "; not trusted, nothing set aside".to_owned(),
                n => format!("; not trusted: {n} set aside, see set_aside.* below"),
            });
        }
        let _ = writeln!(out, "#   {} ({state})", layer.path.display());
        for note in &layer.notes {
            let _ = writeln!(out, "#     note: {note}");
        }
    }
    let rows = dsh_core::setting_rows(&settings).map_err(|e| e.message)?;
    // Sources line up, except after the few long values (lists), which would push them all far
    // to the right.
    let width = rows
        .iter()
        .map(|row| row.key.len() + row.value.len() + 3)
        .filter(|&len| len <= 64)
        .max()
        .unwrap_or(0);
    for row in &rows {
        let assignment = format!("{} = {}", row.key, row.value);
        let _ = writeln!(out, "{assignment:<width$}  # {}", row.source);
    }
    Ok(out)
}
