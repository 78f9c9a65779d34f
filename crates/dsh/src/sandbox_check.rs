//! `dsh sandbox check`: which backend would confine commands here, why each other one cannot,
//! and what to do about it.

use std::fmt::Write as _;

use dsh_core::Config;
use dsh_sandbox::{Enforcement, Sandbox};

/// Prints the report to stdout; the status is 0 when some backend can confine commands.
pub fn run(patches: &[std::path::PathBuf]) -> u8 {
    match report(patches) {
        Ok((text, usable)) => {
            use std::io::Write as _;
            let _ = std::io::stdout().write_all(text.as_bytes());
            if usable { 0 } else { 1 }
        }
        Err(message) => {
            crate::surface::Surface::new(false).fail(&message, &message, None);
            1
        }
    }
}

fn report(patches: &[std::path::PathBuf]) -> Result<(String, bool), String> {
    let (home, cwd) = crate::place::home_and_cwd()?;
    let files = Config::load(&home, &cwd, patches).map_err(|e| e.to_string())?;
    let settings = crate::run::sandbox_settings(&files).map_err(|e| e.0)?;
    let sandbox = Sandbox::new(settings.clone());

    let mut out = String::new();
    let _ = writeln!(
        out,
        "backends tried: {} (sandbox.backend = \"{}\")",
        sandbox
            .probes()
            .iter()
            .map(|p| p.backend.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match settings.backend {
            dsh_sandbox::BackendChoice::Auto => "auto",
            dsh_sandbox::BackendChoice::Bubblewrap => "bubblewrap",
            dsh_sandbox::BackendChoice::Landlock => "landlock",
        }
    );
    let _ = writeln!(
        out,
        "network for commands: {} (sandbox.network)",
        if settings.network { "on" } else { "off" }
    );
    out.push('\n');
    for probe in sandbox.probes() {
        match &probe.result {
            Ok(enforcement) => {
                let _ = writeln!(
                    out,
                    "  {:<11} usable, {} confinement",
                    probe.backend.as_str(),
                    enforcement.as_str()
                );
            }
            Err(reason) => {
                let _ = writeln!(out, "  {:<11} not usable: {reason}", probe.backend.as_str());
            }
        }
        if let Some(remedy) = &probe.remedy {
            let _ = writeln!(out, "  {:<11} what to do: {remedy}", "");
        }
    }
    out.push('\n');
    let usable = match sandbox.chosen() {
        Some((backend, Enforcement::Full)) => {
            let _ = writeln!(
                out,
                "Commands in read-only and workspace-write mode run under {backend}."
            );
            true
        }
        Some((backend, Enforcement::Partial)) => {
            let _ = writeln!(
                out,
                "Commands in read-only and workspace-write mode run under {backend}, partially \
                 enforced (see above)."
            );
            true
        }
        None => {
            out.push_str(
                "No backend can confine commands here: in read-only and workspace-write mode \
                 every command is refused with SANDBOX_UNAVAILABLE (file tools still work, \
                 fenced in process). Fix one of the above, or, only where the machine itself is \
                 disposable (a throwaway container or VM), run with --permission-mode \
                 danger-full-access.\n",
            );
            false
        }
    };
    Ok((out, usable))
}
