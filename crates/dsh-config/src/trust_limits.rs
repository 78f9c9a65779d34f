//! The trust rule for numbers and switches: each key declares, where it is declared (a
//! section's `GUARDS`, gathered in [`GUARDS`]), which way widens it, and an untrusted
//! workspace's value on that side of yours (or the default) is set aside, while a stricter one
//! applies. One rule for all of them, so a limit added later cannot be left out: the test
//! below walks every key the config file can hold and fails on a number or a switch that does
//! not say.

use super::sections::{
    auto_review, checkpoints, compaction, goals, instructions, jobs, mcp, requests, sandbox,
    secrets, sessions, skills, stored_auth, subagents, tools, web, workflows,
};
use super::trust_look::{Guard, Look, Widens, table_keys};

/// How each key of every section can widen or weaken a guard, as each declares it: what the
/// trust rule reads ([`mark`]).
pub(crate) const GUARDS: &[&[Guard]] = &[
    auto_review::GUARDS,
    checkpoints::GUARDS,
    compaction::GUARDS,
    goals::GUARDS,
    instructions::GUARDS,
    jobs::GUARDS,
    mcp::GUARDS,
    requests::GUARDS,
    sandbox::GUARDS,
    secrets::GUARDS,
    sessions::GUARDS,
    skills::GUARDS,
    stored_auth::GUARDS,
    subagents::GUARDS,
    tools::GUARDS,
    web::GUARDS,
    workflows::GUARDS,
    super::route::GUARDS,
    &[Guard::neither(
        "projects.*.trusted",
        "the whole of `projects` is set aside: only your own config says which folders you trust",
    )],
];

/// Marks every number and switch of the workspace's layer that widens a guard.
pub(crate) fn mark(look: &mut Look<'_>) {
    for guard in GUARDS.iter().copied().flatten() {
        let key: Vec<&str> = guard.key.split('.').collect();
        for path in expand(look.project, &key) {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            look.mark_if(&path, guard.reason, |l, p| {
                widens(guard.widens, l.project(p), l.below(p))
            });
        }
    }
}

/// Whether `theirs` is on the widening side of `mine` (else the default).
fn widens(how: Widens, theirs: Option<&toml::Value>, mine: Option<&toml::Value>) -> bool {
    let int = |v: Option<&toml::Value>| v.and_then(toml::Value::as_integer);
    let default = |d: u64| i64::try_from(d).unwrap_or(i64::MAX);
    match how {
        // No limit of yours and none by default: any number is a limit, so narrower.
        Widens::Higher(none) => match (int(theirs), int(mine).or(none.map(default))) {
            (Some(theirs), Some(mine)) => theirs > mine,
            _ => false,
        },
        Widens::Lower(d) => int(theirs).is_some_and(|t| t < int(mine).unwrap_or(default(d))),
        Widens::Switch { weak, default } => {
            let mine = mine.and_then(toml::Value::as_bool).unwrap_or(default);
            theirs.and_then(toml::Value::as_bool) == Some(weak) && mine != weak
        }
        Widens::Neither(_) => false,
    }
}

/// The paths of `table` that `key` names, each `*` standing for every name there.
fn expand(table: &toml::Table, key: &[&str]) -> Vec<Vec<String>> {
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    for part in key {
        paths = paths
            .into_iter()
            .flat_map(|path| {
                let names = match *part {
                    "*" => {
                        let parent: Vec<&str> = path.iter().map(String::as_str).collect();
                        table_keys(table, &parent)
                    }
                    name => vec![name.to_owned()],
                };
                names.into_iter().map(move |name| {
                    let mut longer = path.clone();
                    longer.push(name);
                    longer
                })
            })
            .collect();
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::Config;

    /// Whether `text` is a config file the schema accepts.
    fn accepts(text: &str) -> Result<(), String> {
        toml::from_str::<Config>(text)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// A TOML file holding `value` at `path`.
    fn file_with(path: &[String], value: &str) -> String {
        match path.split_last() {
            Some((last, [])) => format!("{last} = {value}\n"),
            Some((last, parents)) => {
                let table: Vec<String> = parents.iter().map(|p| format!("{p:?}")).collect();
                format!("[{}]\n{last:?} = {value}\n", table.join("."))
            }
            None => String::new(),
        }
    }

    /// The fields of the table at `path`, as serde names them when it refuses an unknown one.
    fn fields(path: &[String]) -> Option<Vec<String>> {
        let mut probe = path.to_vec();
        probe.push("no_such_key".to_owned());
        let error = accepts(&file_with(&probe, "1")).err()?;
        let (_, expected) = error.split_once("unknown field `no_such_key`, expected ")?;
        let line = expected.lines().next().unwrap_or_default();
        Some(
            line.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect(),
        )
    }

    /// Every number and every switch the config file can hold, as `(key, is a number)`, `*`
    /// standing for a name of a table of names; found by asking the schema itself, so a key
    /// added to any section is found without being listed here.
    fn numbers_and_switches(
        path: &mut Vec<String>,
        shown: &mut Vec<String>,
        found: &mut Vec<(String, bool)>,
    ) {
        let Some(names) = fields(path) else {
            return;
        };
        for name in names {
            path.push(name.clone());
            shown.push(name);
            let key = shown.join(".");
            if accepts(&file_with(path, "1")).is_ok() || accepts(&file_with(path, "1.5")).is_ok() {
                found.push((key, true));
            } else if accepts(&file_with(path, "true")).is_ok() {
                found.push((key, false));
            } else if fields(path).is_some() {
                numbers_and_switches(path, shown, found);
            } else {
                // A table of names: its entries' fields.
                path.push("x".to_owned());
                shown.push("*".to_owned());
                numbers_and_switches(path, shown, found);
                shown.pop();
                path.pop();
            }
            shown.pop();
            path.pop();
        }
    }

    /// The attack this guards against is a limit added later that an untrusted repository's
    /// config can raise because nobody added it to a list: every number and switch of every
    /// section must say which way widens it (or why neither does).
    #[test]
    fn every_number_and_switch_of_the_config_says_which_way_widens_it() {
        let mut found = Vec::new();
        numbers_and_switches(&mut Vec::new(), &mut Vec::new(), &mut found);
        // The walk reaches the sections, a table of names and a table in one.
        for key in [
            "workflows.max_memory_mb",
            "auto_review.task",
            "mcp.servers.*.call_timeout_ms",
            "providers.*.models.*.context_window",
        ] {
            assert!(found.iter().any(|(k, _)| k == key), "{key}: {found:?}");
        }
        let declared: Vec<_> = GUARDS.iter().copied().flatten().collect();
        for (key, number) in &found {
            let guard = declared
                .iter()
                .find(|g| key == g.key || key.starts_with(&format!("{}.", g.key)));
            let Some(guard) = guard else {
                panic!(
                    "{key} does not declare which way widens it: add it to its section's GUARDS"
                );
            };
            let fits = match guard.widens {
                Widens::Higher(_) | Widens::Lower(_) => *number,
                Widens::Switch { .. } => !*number,
                Widens::Neither(_) => true,
            };
            assert!(
                fits,
                "{key}: {:?} does not fit a {}",
                guard.widens,
                if *number { "number" } else { "switch" }
            );
        }
        // And nothing is declared that the file cannot hold.
        for guard in declared {
            assert!(
                found
                    .iter()
                    .any(|(k, _)| *k == guard.key || k.starts_with(&format!("{}.", guard.key))),
                "{} is declared but no such key exists",
                guard.key
            );
        }
    }
}
