//! The report of `dsh sandbox check`.

use std::fmt::Write as _;

use crate::{BackendChoice, Enforcement, Sandbox};

impl Sandbox {
    /// What `dsh sandbox check` prints: which backend confines commands here, why each other
    /// one cannot, and what to do about it; with whether any backend is usable.
    pub fn report(&self) -> (String, bool) {
        let sandbox = self;
        let settings = self.settings();

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
                BackendChoice::Auto => "auto",
                BackendChoice::Bubblewrap => "bubblewrap",
                BackendChoice::Landlock => "landlock",
            }
        );
        let _ = writeln!(
            out,
            "network for commands: {} (sandbox.network)",
            match &settings.allowed_domains {
                Some(list) => format!(
                    "through dsh's proxy to {} (allowlist; bubblewrap and its helper only)",
                    list.entries().join(", ")
                ),
                None if settings.network => "on".into(),
                None => "off".into(),
            }
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
        (out, usable)
    }
}
