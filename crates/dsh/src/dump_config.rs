//! `--dump-config`: the settings a run would use, each with the layer it came from: the config
//! files (lowest first), then the environment, then the flags. Keys are never shown: the config
//! holds only the names of the variables that carry them.

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::Config;

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
    let (home, cwd) = crate::place::home_and_cwd()?;
    let layers = Config::layers(&home, &cwd, &args.patches).map_err(|e| e.to_string())?;
    // The merge is checked as a run would check it.
    Config::load(&home, &cwd, &args.patches).map_err(|e| e.to_string())?;
    let mut out =
        String::from("# dsh settings: files lowest first, then the environment, then flags\n");
    for layer in &layers {
        let state = match (&layer.table, layer.rows) {
            (Some(_), true) => "read: reference rows",
            (Some(_), false) => "read",
            (None, _) => "absent",
        };
        let _ = writeln!(out, "#   {} ({state})", layer.path.display());
        for note in &layer.notes {
            let _ = writeln!(out, "#     note: {note}");
        }
    }
    let mut rows: Vec<(String, String, String)> = Config::provenance(&layers)
        .into_iter()
        .map(|(key, value, path)| (key, value, path.display().to_string()))
        .collect();
    let mut set = |key: &str, value: String, source: &str| {
        rows.retain(|(k, _, _)| k != key);
        rows.push((key.to_owned(), value, source.to_owned()));
    };
    if let Some(mode) = std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        set(
            "sandbox.mode",
            format!("{:?}", mode.trim()),
            "DSH_PERMISSION_MODE",
        );
    }
    if let Some(mode) = args.permission_mode {
        set(
            "sandbox.mode",
            format!("{:?}", mode.as_str()),
            "--permission-mode",
        );
    }
    if let Some(policy) = args.approval_policy {
        set(
            "approval.policy",
            format!("{:?}", policy.as_str()),
            "--approval-policy",
        );
    }
    if let Some(model) = &args.model {
        set("model", format!("{model:?}"), "--model");
    }
    if let Some(effort) = args.effort {
        set("effort", format!("{:?}", effort.as_str()), "--effort");
    }
    if let Some(steps) = args.max_steps {
        set("max_steps", steps.to_string(), "--max-steps");
    }
    if !args.add_dirs.is_empty() {
        let dirs: Vec<String> = args
            .add_dirs
            .iter()
            .map(|d| format!("{:?}", d.display().to_string()))
            .collect();
        set(
            "sandbox.add_dirs",
            format!("[{}]", dirs.join(", ")),
            "--add-dir",
        );
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let width = rows
        .iter()
        .map(|(k, v, _)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0);
    for (key, value, source) in rows {
        let assignment = format!("{key} = {value}");
        let _ = writeln!(out, "{assignment:<width$}  # {source}");
    }
    out.push_str("# anything not listed has its default (docs/config.md)\n");
    Ok(out)
}
