//! `[auto_review]`: who reviews the calls of a run in `--permission-mode auto`, with what
//! instructions, how long a review may take and what the reviewer reads.

use std::time::Duration;

use serde::Deserialize;

use crate::Credentials;
use crate::environment::{Environment, SetupError};
use crate::files::at_least_one;
use crate::resolver::Resolver;
use crate::route::{Declared, Route};
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// Auto review (`--permission-mode auto`): who reviews calls, with what instructions, how long
/// it may take and what it sees.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoReviewConfig {
    /// The reviewer's model, as `--model` takes it (default: the session's model).
    pub model: Option<String>,
    /// The reviewer's instructions, replacing dsh's own.
    pub prompt: Option<String>,
    /// How long one review may take, in milliseconds (default 60000).
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_ms: Option<u64>,
    /// Whether the reviewer reads the turn's task (default true).
    pub task: Option<bool>,
    /// How many of the latest messages before the call the reviewer reads (default 6; 0:
    /// none).
    pub transcript_messages: Option<u32>,
}

/// How long one review may take unless `auto_review.timeout_ms` says otherwise.
pub const DEFAULT_REVIEW_TIMEOUT: Duration = Duration::from_secs(60);
/// How many of the latest messages the reviewer reads unless
/// `auto_review.transcript_messages` says otherwise.
pub const DEFAULT_REVIEW_MESSAGES: u32 = 6;

/// How each key can weaken the review ([`crate::trust_look::Widens`]); `model` and `prompt`
/// are set aside whenever they differ from yours ([`crate::trust_rules`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher(
        "auto_review.timeout_ms",
        DEFAULT_REVIEW_TIMEOUT.as_secs() * 1000,
        Reason::Limit,
    ),
    Guard::switch("auto_review.task", false, true, Reason::ReviewerInput),
    Guard::lower(
        "auto_review.transcript_messages",
        DEFAULT_REVIEW_MESSAGES as u64,
        Reason::ReviewerInput,
    ),
];

/// How Auto review reviews a run's calls.
#[derive(Debug, Clone)]
pub struct AutoReviewSettings {
    /// The reviewer's own route when `auto_review.model` names one; `None`: the session's
    /// model, over the session's connection.
    pub route: Option<Route>,
    /// Instructions replacing dsh's own.
    pub prompt: Option<String>,
    pub timeout: Duration,
    /// Whether the reviewer reads the turn's task.
    pub task: bool,
    /// How many of the latest messages before the call the reviewer reads.
    pub transcript_messages: u32,
}

/// Resolves `[auto_review]`. A reviewer model is resolved as `--model` is, so a name the
/// config cannot route fails here, before any work, in every mode: a config that names a
/// reviewer should not wait for its first Auto run to learn the name is wrong.
pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &AutoReviewConfig,
    declared: Declared<'_>,
    env: &Environment,
    credentials: &Credentials,
) -> Result<AutoReviewSettings, SetupError> {
    let model = r.file_setting("auto_review.model", config.model.clone().map(Some), None);
    r.none_means(&model, "the session's model");
    let route = match model.value {
        None => None,
        Some(name) => {
            // Resolved on the side: its rows would repeat the session route's `route.*`
            // keys with another route's values.
            let mut side = Resolver::new(r.layers());
            let named = Sourced::new(name, model.source.clone());
            Some(
                Route::resolve(&mut side, declared, &named, env, credentials).map_err(|e| {
                    SetupError::new(e.code.clone(), format!("auto_review.model: {}", e.message))
                })?,
            )
        }
    };
    let prompt = r.file_setting("auto_review.prompt", config.prompt.clone().map(Some), None);
    r.none_means(&prompt, "dsh's own reviewer instructions");
    let timeout = r.millis(
        "auto_review.timeout_ms",
        config.timeout_ms,
        DEFAULT_REVIEW_TIMEOUT,
    );
    let task = r.file_setting("auto_review.task", config.task, true);
    let transcript_messages = r.file_setting(
        "auto_review.transcript_messages",
        config.transcript_messages,
        DEFAULT_REVIEW_MESSAGES,
    );
    Ok(AutoReviewSettings {
        route,
        prompt: prompt.value,
        timeout: timeout.value,
        task: task.value,
        transcript_messages: transcript_messages.value,
    })
}
