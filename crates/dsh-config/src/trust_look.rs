//! What the trust gate's rules look at (the workspace's table beside yours) and what they find
//! (a key set aside, and why): shared by the gate ([`crate::trust`]) and its rules
//! ([`crate::trust_rules`]). A leaf: it names only the values the files hold.

use std::path::PathBuf;

use crate::files::PermissionMode;

/// Why a value of the workspace's config needs trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `projects`: which folders you trust is yours to say.
    Trust,
    /// A destination: a key, a header, a sign-in (and the conversation) would go there.
    Destination,
    /// The name of the variable a key is read from.
    KeyVariable,
    /// A program started outside the sandbox.
    Program,
    /// More for commands: a wider mode, the network, higher limits, another confinement.
    Sandbox,
    /// Fewer of your secrets kept back (redaction off, fewer names scrubbed, stored sign-ins).
    Secrets,
    /// Who allows the calls Auto review lets run unconfined.
    Reviewer,
    /// A tool your own allow list leaves out.
    Tools,
    /// An MCP server you turned off.
    Server,
    /// The project's hooks: its commands, run unasked.
    Hooks,
    /// A key of the project's `.env`: whose account the requests go to.
    Account,
    /// Lower prices than yours or dsh's, or a higher spending limit.
    Cost,
    /// A limit above yours (or dsh's default): more time, memory, disk or attempts.
    Limit,
    /// Less for Auto review to judge a call by.
    ReviewerInput,
    /// The project's saved workflows: its scripts, run as yours when you name one.
    Workflows,
    /// The project's saved prompts: its text, sent as your own message when you name one.
    Prompts,
}

impl Reason {
    /// Why it needs trust, as a clause.
    pub fn says(self) -> &'static str {
        match self {
            Reason::Trust => "only your own $DSH_HOME/config.toml says which folders you trust",
            Reason::Destination => "it decides where a credential is sent",
            Reason::KeyVariable => "it names the variable a key is read from",
            Reason::Program => "it runs a program outside the sandbox",
            Reason::Sandbox => "it widens what commands may do",
            Reason::Secrets => "it lets more of your secrets through",
            Reason::Reviewer => "it decides who allows the calls Auto review runs unconfined",
            Reason::Tools => "it offers tools your own config leaves out",
            Reason::Server => "it turns on an MCP server you turned off",
            Reason::Hooks => {
                "it runs the project's commands on your machine, unasked, when a run starts and \
                 around its messages and tool calls"
            }
            Reason::Account => {
                "a key there decides whose account your requests and conversation go to"
            }
            Reason::Cost => {
                "it lowers the prices a run's cost is counted at, or lets a run spend more than \
                 your config allows"
            }
            Reason::Workflows => {
                "its scripts would run as your saved workflows of the same names, steering \
                 agents with your tools and mode; yours in $DSH_HOME/workflows are used"
            }
            Reason::Prompts => {
                "its text would be sent as your own message for /NAME; yours in \
                 $DSH_HOME/prompts are used"
            }
            Reason::Limit => "it raises a limit above yours (or dsh's default)",
            Reason::ReviewerInput => {
                "it hides from Auto review what it judges a call by (the task, the messages \
                 that led to the call)"
            }
        }
    }
}

/// How a key's value can weaken a guard, declared where the key is (each section's `GUARDS`),
/// so that the trust rule ([`crate::trust_rules`]) sets aside an untrusted workspace's value on
/// the weak side of yours (or the default) and lets a stricter one apply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Widens {
    /// A limit: a higher number widens. The default (`None`: no limit, so any number narrows).
    Higher(Option<u64>),
    /// A lower number widens (what a guard reads, say). The default.
    Lower(u64),
    /// A switch: this value weakens a guard where yours (or the default) is the other.
    Switch { weak: bool, default: bool },
    /// Neither way widens anything, for this reason.
    Neither(&'static str),
}

/// One key of a section and how it can widen (`*` stands for any name of a table of names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Guard {
    pub(crate) key: &'static str,
    pub(crate) widens: Widens,
    pub(crate) reason: Reason,
}

impl Guard {
    /// A limit whose higher values widen, with its default.
    pub(crate) const fn higher(key: &'static str, default: u64, reason: Reason) -> Guard {
        Guard {
            key,
            widens: Widens::Higher(Some(default)),
            reason,
        }
    }

    /// A number whose lower values widen, with its default.
    pub(crate) const fn lower(key: &'static str, default: u64, reason: Reason) -> Guard {
        Guard {
            key,
            widens: Widens::Lower(default),
            reason,
        }
    }

    /// A switch whose value `weak` weakens a guard, with its default.
    pub(crate) const fn switch(
        key: &'static str,
        weak: bool,
        default: bool,
        reason: Reason,
    ) -> Guard {
        Guard {
            key,
            widens: Widens::Switch { weak, default },
            reason,
        }
    }

    /// A number or a switch neither of whose values widens anything, and why.
    pub(crate) const fn neither(key: &'static str, why: &'static str) -> Guard {
        Guard {
            key,
            widens: Widens::Neither(why),
            reason: Reason::Limit,
        }
    }
}

/// A value of the workspace's config, or one of its other files, that was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The file it is in: `.dsh/config.toml`, `.dsh/hooks.json` or `.env` in the workspace.
    pub file: PathBuf,
    /// The dotted key (`providers.deepseek.base_url`; `mcp.servers.x` for a whole server);
    /// `hooks` for a hooks file; the variable's name for a key of `.env`.
    pub key: String,
    /// The value as TOML writes it, secrets hidden ([`crate::SettingRow`]'s rules).
    pub value: String,
    pub reason: Reason,
}

/// What the rules look at: the workspace's table, the layer below it (yours), and the layers
/// above (whose values win anyway).
pub(crate) struct Look<'a> {
    pub(crate) project: &'a toml::Table,
    pub(crate) below: &'a toml::Table,
    pub(crate) above: &'a [&'a toml::Table],
    /// The keys to set aside, why, and how to show a whole table that goes (`None`: its
    /// value as it is).
    pub(crate) found: Vec<(Vec<String>, Reason, Option<String>)>,
}

/// The value at `path` in `table`.
pub(crate) fn at<'a>(table: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut current = table;
    for key in parents {
        current = current.get(key)?.as_table()?;
    }
    current.get(last)
}

impl Look<'_> {
    /// Sets aside `path` for `reason` when the workspace sets it and no layer above does.
    pub(crate) fn mark(&mut self, path: &[&str], reason: Reason) {
        let path: Vec<String> = path.iter().map(|k| (*k).to_owned()).collect();
        self.mark_shown(path, reason, None);
    }

    pub(crate) fn mark_shown(&mut self, path: Vec<String>, reason: Reason, shown: Option<String>) {
        let overridden = self.above.iter().any(|t| at(t, &path).is_some());
        if at(self.project, &path).is_some() && !overridden {
            self.found.push((path, reason, shown));
        }
    }

    /// The workspace's value at `path`.
    pub(crate) fn project(&self, path: &[&str]) -> Option<&toml::Value> {
        at(self.project, &owned(path))
    }

    /// Your value at `path` (the layer below the workspace's).
    pub(crate) fn below(&self, path: &[&str]) -> Option<&toml::Value> {
        at(self.below, &owned(path))
    }

    /// Sets aside `path` for `why` when `widens` says the workspace's value goes further than
    /// yours.
    pub(crate) fn mark_if(
        &mut self,
        path: &[&str],
        why: Reason,
        widens: impl Fn(&Self, &[&str]) -> bool,
    ) {
        if self.project(path).is_some() && widens(self, path) {
            self.mark(path, why);
        }
    }

    /// Whether the workspace's mode is wider than yours (or the default).
    pub(crate) fn wider_mode(&self, path: &[&str]) -> bool {
        let parse = |v: Option<&toml::Value>| {
            v.and_then(toml::Value::as_str)
                .and_then(|s| s.parse::<PermissionMode>().ok())
        };
        let below = parse(self.below(path)).unwrap_or(PermissionMode::WorkspaceWrite);
        parse(self.project(path)).is_some_and(|mode| mode.is_wider_than(below))
    }
}

/// The names of the table at `path`.
pub(crate) fn table_keys(table: &toml::Table, path: &[&str]) -> Vec<String> {
    at(table, &owned(path))
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

pub(crate) fn owned(path: &[&str]) -> Vec<String> {
    path.iter().map(|k| (*k).to_owned()).collect()
}
