//! The environment a command gets: the inherited one minus anything that looks like a secret
//! or belongs to dsh, plus terminal settings that keep output plain and dsh's own variables.

use std::ffi::{OsStr, OsString};

/// Name fragments (matched anywhere, any case) whose variables are not passed on. The reference
/// scrubs the first four; the rest catch common secrets it lets through.
pub const DEFAULT_SCRUB: [&str; 7] = [
    "KEY",
    "PASSWORD",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "_AUTH",
    "PASSWD",
];

/// Variables never inherited: they make bash run code before the command.
const NEVER_INHERITED: [&str; 2] = ["BASH_ENV", "ENV"];

/// How commands' environments are built.
#[derive(Debug, Clone)]
pub struct ShellEnv {
    /// Upper-case name fragments to scrub.
    pub scrub: Vec<String>,
    /// Whole names to scrub whatever they look like: the variables the run reads its keys from
    /// (a route's `api_key_env` may be `LLM_ACCESS`, which no fragment catches).
    pub scrub_names: Vec<String>,
    /// dsh's variables: `DSH_HOME`, `DSH_SESSION_ID`, `DSH_SESSION_JSONL`.
    pub dsh: Vec<(String, OsString)>,
}

impl ShellEnv {
    pub fn new(dsh: Vec<(String, OsString)>) -> Self {
        ShellEnv {
            scrub: DEFAULT_SCRUB.iter().map(|s| (*s).to_owned()).collect(),
            scrub_names: Vec::new(),
            dsh,
        }
    }

    /// Whether an inherited variable is dropped.
    pub fn scrubs(&self, name: &OsStr) -> bool {
        let upper = name.to_string_lossy().to_uppercase();
        self.scrub_names
            .iter()
            .any(|scrubbed| name == scrubbed.as_str())
            || upper.starts_with("DSH_")
            || NEVER_INHERITED.contains(&upper.as_str())
            || self
                .scrub
                .iter()
                .any(|fragment| upper.contains(fragment.as_str()))
    }

    /// The environment for one command, from `inherited`; `tag` marks its processes.
    pub fn build(
        &self,
        inherited: impl Iterator<Item = (OsString, OsString)>,
        tag: &str,
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> =
            inherited.filter(|(name, _)| !self.scrubs(name)).collect();
        let mut set = |name: &str, value: OsString| {
            env.retain(|(n, _)| n != name);
            env.push((name.into(), value));
        };
        for (name, value) in [
            ("NO_COLOR", "1"),
            ("TERM", "dumb"),
            ("PAGER", "cat"),
            ("GIT_PAGER", "cat"),
            ("DSH_SHELL", "1"),
        ] {
            set(name, value.into());
        }
        for (name, value) in &self.dsh {
            set(name, value.clone());
        }
        // Every process the command starts inherits this, which is how escaped daemons are
        // found and stopped (see `process::sweep`).
        set(super::process::TAG_VARIABLE, tag.into());
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_dsh_variables_are_dropped() {
        let env = ShellEnv::new(vec![("DSH_HOME".into(), "/h".into())]);
        let inherited = [
            "MY_API_KEY",
            "my_token",
            "PGPASSWORD",
            "TOKENIZERS_PARALLELISM",
            "AWS_CREDENTIALS_FILE",
            "MY_AUTH",
            "DSH_CUSTOM",
            "BASH_ENV",
            "PATH",
            "TERM",
        ]
        .map(|n| (OsString::from(n), OsString::from("v")));
        let built = env.build(inherited.into_iter(), "t-1");
        let get = |name: &str| {
            built
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        for gone in [
            "MY_API_KEY",
            "my_token",
            "PGPASSWORD",
            "TOKENIZERS_PARALLELISM",
            "AWS_CREDENTIALS_FILE",
            "MY_AUTH",
            "DSH_CUSTOM",
            "BASH_ENV",
        ] {
            assert_eq!(get(gone), None, "{gone}");
        }
        assert_eq!(get("PATH").as_deref(), Some("v"));
        assert_eq!(get("TERM").as_deref(), Some("dumb"));
        assert_eq!(get("DSH_HOME").as_deref(), Some("/h"));
        assert_eq!(get("DSH_SHELL").as_deref(), Some("1"));
    }
}
