//! Which server a model reference goes to: `--model <provider>/<model>`, or a bare model name
//! for the built-in DeepSeek route; and what is known about the model there.

use std::collections::BTreeMap;

use dsh_protocol::Prices;
use serde::Deserialize;

use super::environment::{Environment, SetupError};
use super::files::{ProviderKind, SystemRole, parsed};
use super::layer::quote_key;
use super::resolver::Resolver;
use super::sourced::{Source, Sourced};
use super::trust_look::Guard;
use crate::{Credentials, EnvSource};

/// The model used when none is named.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// The context window assumed for a model nobody declared (the reference's DeepSeek default).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
/// The context window assumed for an undeclared model of a route that is not DeepSeek.
pub const OTHER_WINDOW_DEFAULT: u64 = 262_144;

/// A resolved model reference.
#[derive(Debug, Clone)]
pub struct Route {
    /// The route's name (`deepseek`, or a `[providers.<name>]`).
    pub provider: String,
    pub kind: Sourced<ProviderKind>,
    /// The model's name as the server knows it.
    pub model: String,
    pub base_url: Sourced<String>,
    /// The route's key.
    pub api_key: ApiKey,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// 1,000,000 for DeepSeek and 262,144 for other routes unless declared.
    pub context_window: Sourced<u64>,
    /// `None` leaves the server's default.
    pub max_output_tokens: Sourced<Option<u32>>,
    pub image_input: Sourced<bool>,
    /// Whether the effort is sent (OpenAI-compatible routes; thinking for Anthropic).
    pub reasoning_effort: Sourced<bool>,
    pub system_role: Sourced<SystemRole>,
    /// US dollars per million tokens, for `costUsd`: DeepSeek's published prices for its own
    /// models unless declared.
    pub prices: Sourced<Option<Prices>>,
}

/// A route's key: looked up at resolution, required only when the run connects, so that
/// `--dump-config` can say it is missing instead of failing.
#[derive(Clone)]
pub enum ApiKey {
    /// The route declares no key variable: its server needs none.
    NotNeeded,
    Found {
        /// The variable that holds it.
        env: String,
        value: String,
        from: EnvSource,
    },
    /// What to tell the user.
    Missing { env: String, message: String },
}

/// How a model's keys can widen ([`crate::trust_look::Widens`]), in `[models]` and in a
/// route's `models`: none does, what a run spends is bounded by the prices (whose own rule
/// sets aside any rate below yours or dsh's table, [`crate::trust_rules`]) and the limits.
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither("models.*.image_input", MODEL_FACT),
    Guard::neither("models.*.context_window", MODEL_FACT),
    Guard::neither("models.*.max_output_tokens", MODEL_FACT),
    Guard::neither("models.*.reasoning_effort", MODEL_FACT),
    Guard::neither("models.*.prices", PRICES),
    Guard::neither("providers.*.models.*.image_input", MODEL_FACT),
    Guard::neither("providers.*.models.*.context_window", MODEL_FACT),
    Guard::neither("providers.*.models.*.max_output_tokens", MODEL_FACT),
    Guard::neither("providers.*.models.*.reasoning_effort", MODEL_FACT),
    Guard::neither("providers.*.models.*.prices", PRICES),
];
const MODEL_FACT: &str = "what the model is; what a run spends is bounded by prices and limits";
const PRICES: &str = "the prices' own rule sets aside any rate below yours or dsh's table";

/// One model route.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire format; `deepseek` when the route is named `deepseek` and gives none.
    #[serde(deserialize_with = "parsed")]
    pub kind: Option<ProviderKind>,
    /// The API root (`/chat/completions` is appended).
    pub base_url: Option<String>,
    /// The name of the variable holding the key (never the key); none for a server that
    /// needs none.
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// What is known about the route's models.
    pub models: BTreeMap<String, ModelConfig>,
}

/// What dsh should assume about one model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Whether it accepts images (for `read_image`).
    pub image_input: Option<bool>,
    /// Its context window in tokens, which compaction keeps the history inside.
    pub context_window: Option<u64>,
    /// The most output tokens to ask for in one answer.
    pub max_output_tokens: Option<u32>,
    /// Whether `reasoning_effort` is sent (OpenAI-compatible routes; default false).
    pub reasoning_effort: Option<bool>,
    /// `system` (default) or `developer`: the role the system prompt is sent with.
    #[serde(deserialize_with = "parsed")]
    pub system_role: Option<SystemRole>,
    /// US dollars per million tokens, for `costUsd` in the stream.
    pub prices: Option<Prices>,
}

/// What the files declare of routes and models (`[providers]`, `[models]`): what a model
/// reference is resolved against.
#[derive(Clone, Copy)]
pub(super) struct Declared<'a> {
    pub(super) providers: &'a BTreeMap<String, ProviderConfig>,
    pub(super) models: &'a BTreeMap<String, ModelConfig>,
}

impl Route {
    /// The route of `model_ref` under the files' `[providers]` and `[models]`: its provider and
    /// model, the provider's kind and address, its key, and what is known of the model.
    pub(super) fn resolve(
        r: &mut Resolver<'_>,
        files: Declared<'_>,
        model_ref: &Sourced<String>,
        env: &Environment,
        credentials: &Credentials,
    ) -> Result<Route, SetupError> {
        let chosen = model_ref.source.clone();
        let (provider, model) = split_reference(files, &model_ref.value, &chosen)?;
        let declared = files.providers.get(provider);
        let route_key = format!("providers.{}", quote_key(provider));
        let kind = provider_kind(r, declared, provider, &route_key)?;
        r.record(
            "route.provider",
            &Sourced::new(provider.to_owned(), chosen.clone()),
        );
        r.record("route.kind", &kind);
        r.record("route.model", &Sourced::new(model.to_owned(), chosen));
        let base_url = base_url(r, env, declared, provider, &route_key)?;
        r.record("route.base_url", &base_url);
        let api_key = ApiKey::resolve(declared, provider, credentials);
        r.record_text("route.api_key", api_key.shown(), api_key.source());

        // What is known about the model: the route's table, then the top-level `[models]`.
        let table = declared.and_then(|p| p.models.get(model));
        let top = files.models.get(model);
        let table_key = format!("{route_key}.models.{}", quote_key(model));
        let top_key = format!("models.{}", quote_key(model));
        let tables = [(table_key, table), (top_key, top)];
        let ModelFacts {
            context_window,
            max_output_tokens,
            image_input,
            reasoning_effort,
            system_role,
            prices,
        } = ModelFacts::resolve(r, &tables, kind.value, model);
        let headers = declared
            .map(|p| {
                p.headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Route {
            provider: provider.to_owned(),
            kind,
            model: model.to_owned(),
            base_url,
            api_key,
            headers,
            context_window,
            max_output_tokens,
            image_input,
            reasoning_effort,
            system_role,
            prices,
        })
    }

    /// The variable the route reads its key from (`DEEPSEEK_API_KEY`); `None` when its server
    /// needs no key.
    pub fn key_variable(&self) -> Option<&str> {
        match &self.api_key {
            ApiKey::NotNeeded => None,
            ApiKey::Found { env, .. } | ApiKey::Missing { env, .. } => Some(env),
        }
    }
}

/// `model_ref` as a provider and a model: `<provider>/<model>` for a declared provider (or
/// `deepseek`), else a model of the built-in DeepSeek route. `chosen` is where it was named,
/// for an error about the name itself.
fn split_reference<'a>(
    files: Declared<'_>,
    model_ref: &'a str,
    chosen: &Source,
) -> Result<(&'a str, &'a str), SetupError> {
    let fail = |message: String| Err(SetupError::config(message));
    let named_in = match chosen {
        Source::Default => String::new(),
        source => format!(" (set by {source})"),
    };
    if model_ref.trim().is_empty() {
        return fail(format!(
            "the model is empty{named_in}: give a model, such as {DEFAULT_MODEL} or \
             <provider>/<model>"
        ));
    }
    let (provider, model) = match model_ref.split_once('/') {
        Some((provider, model))
            if files.providers.contains_key(provider) || provider == "deepseek" =>
        {
            (provider, model)
        }
        Some((provider, _)) => {
            let mut known: Vec<&str> = files.providers.keys().map(String::as_str).collect();
            if !known.contains(&"deepseek") {
                known.insert(0, "deepseek");
            }
            return fail(format!(
                "unknown provider \"{provider}\" in model \"{model_ref}\"{named_in}: \
                 declare [providers.{provider}] in a config file (see docs/providers.md), or \
                 use one of: {}",
                known.join(", ")
            ));
        }
        None => ("deepseek", model_ref),
    };
    if model.trim().is_empty() {
        return fail(format!(
            "model \"{model_ref}\"{named_in} names no model after the provider"
        ));
    }
    Ok((provider, model))
}

/// The wire format of `provider`: its table's `kind`, which only the built-in `deepseek` may
/// leave out.
fn provider_kind(
    r: &Resolver<'_>,
    declared: Option<&ProviderConfig>,
    provider: &str,
    route_key: &str,
) -> Result<Sourced<ProviderKind>, SetupError> {
    match declared.and_then(|p| p.kind) {
        Some(kind) => Ok(Sourced::new(
            kind,
            Source::File(r.layers().source_of(&format!("{route_key}.kind"))),
        )),
        None if provider == "deepseek" => Ok(Sourced::new(ProviderKind::DeepSeek, Source::Default)),
        None => {
            let declared_in = r.layers().source_of(route_key);
            Err(SetupError::config(format!(
                "provider \"{provider}\" (declared in {}) needs a kind: set \
                 {route_key}.kind to deepseek, openai-completions, openai-responses or \
                 anthropic-messages",
                declared_in.display()
            )))
        }
    }
}

/// Where `provider`'s API is: `DEEPSEEK_BASE_URL` over the files for DeepSeek, its table's
/// `base_url`, or DeepSeek's own address; every other provider must give one.
fn base_url(
    r: &mut Resolver<'_>,
    env: &Environment,
    declared: Option<&ProviderConfig>,
    provider: &str,
    route_key: &str,
) -> Result<Sourced<String>, SetupError> {
    if provider == "deepseek"
        && let Some(url) = env.get("DEEPSEEK_BASE_URL")
    {
        return Ok(Sourced::new(
            url.to_owned(),
            Source::Env("DEEPSEEK_BASE_URL"),
        ));
    }
    let key = format!("{route_key}.base_url");
    match r.file(&key, declared.and_then(|p| p.base_url.clone())) {
        Some(url) => Ok(url),
        None if provider == "deepseek" => Ok(Sourced::new(
            dsh_llm::deepseek::DEFAULT_BASE_URL.to_owned(),
            Source::Default,
        )),
        None => Err(SetupError::config(format!(
            "provider \"{provider}\" needs base_url (the API root, for example \
             http://127.0.0.1:8000/v1)"
        ))),
    }
}

/// Never the key itself.
impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}, from {})", self.shown(), self.source())
    }
}

impl ApiKey {
    /// `provider`'s key: from the variable its table names (`DEEPSEEK_API_KEY` for the
    /// built-in route), looked up in the environment and the `.env` files; when it is not
    /// there, what to tell the user (an empty export hides the files; a key held elsewhere or a
    /// saved key not read is named).
    fn resolve(
        declared: Option<&ProviderConfig>,
        provider: &str,
        credentials: &Credentials,
    ) -> ApiKey {
        let key_env = declared
            .and_then(|p| p.api_key_env.clone())
            .or_else(|| (provider == "deepseek").then(|| "DEEPSEEK_API_KEY".to_owned()));
        let Some(name) = key_env else {
            return ApiKey::NotNeeded;
        };
        match credentials.get(&name) {
            Some((value, from)) if !value.is_empty() => ApiKey::Found {
                env: name,
                value,
                from,
            },
            Some((_, EnvSource::Launch)) => ApiKey::Missing {
                message: format!(
                    "no API key for provider \"{provider}\": {name} is exported empty, which \
                     also hides any .env file; set it, or unset it to use a .env file"
                ),
                env: name,
            },
            _ => ApiKey::Missing {
                message: match credentials.unread_saved_key(&name) {
                    _ if let Some(held) = credentials.held_key(&name) => format!(
                        "no API key for provider \"{provider}\": set {name} in the \
                         environment, or save your own with `dsh login`; {held}"
                    ),
                    Some(why) => format!(
                        "no API key for provider \"{provider}\": set {name} in the \
                         environment or a .env file; {why}"
                    ),
                    None => format!(
                        "no API key for provider \"{provider}\": set {name} in the environment"
                    ),
                },
                env: name,
            },
        }
    }

    /// The row's value: never the key itself.
    fn shown(&self) -> String {
        match self {
            ApiKey::NotNeeded => "\"none (the route declares no api_key_env)\"".to_owned(),
            ApiKey::Found { .. } => "\"[hidden]\"".to_owned(),
            ApiKey::Missing { env, .. } => format!("\"not set: {env}\""),
        }
    }

    fn source(&self) -> String {
        match self {
            ApiKey::NotNeeded => Source::Default.to_string(),
            ApiKey::Found {
                env,
                from: EnvSource::Launch,
                ..
            } => env.clone(),
            ApiKey::Found {
                env,
                from: EnvSource::File(path),
                ..
            } => format!("{env} in {}", path.display()),
            ApiKey::Missing { env, .. } => env.clone(),
        }
    }
}

/// What is known about a route's model, from its tables or dsh's defaults.
struct ModelFacts {
    context_window: Sourced<u64>,
    max_output_tokens: Sourced<Option<u32>>,
    image_input: Sourced<bool>,
    reasoning_effort: Sourced<bool>,
    system_role: Sourced<SystemRole>,
    prices: Sourced<Option<Prices>>,
}

impl ModelFacts {
    /// `tables`: the route's table of the model, then the top-level `[models]` one.
    fn resolve(
        r: &mut Resolver<'_>,
        tables: &[(String, Option<&ModelConfig>); 2],
        kind: ProviderKind,
        model: &str,
    ) -> ModelFacts {
        let is_deepseek = kind == ProviderKind::DeepSeek;
        let context_window = r.setting(
            "route.context_window",
            from_tables(r, tables, "context_window", |m| m.context_window),
            if is_deepseek {
                DEFAULT_CONTEXT_WINDOW
            } else {
                OTHER_WINDOW_DEFAULT
            },
        );
        let max_output_tokens = r.setting(
            "route.max_output_tokens",
            from_tables(r, tables, "max_output_tokens", |m| {
                m.max_output_tokens.map(Some)
            }),
            None,
        );
        if kind == ProviderKind::AnthropicMessages {
            // The Messages API requires a number: dsh sends its own default.
            r.none_means(
                &max_output_tokens,
                &format!(
                    "{}, dsh's default for anthropic-messages",
                    dsh_llm::ANTHROPIC_DEFAULT_MAX_TOKENS
                ),
            );
        } else {
            r.none_means(&max_output_tokens, "the server's default");
        }
        let image_input = r.setting(
            "route.image_input",
            from_tables(r, tables, "image_input", |m| m.image_input),
            is_deepseek && dsh_llm::deepseek::takes_images(model),
        );
        let reasoning_effort = r.setting(
            "route.reasoning_effort",
            from_tables(r, tables, "reasoning_effort", |m| m.reasoning_effort),
            false,
        );
        if is_deepseek {
            r.explain_last("always: the DeepSeek API gets the effort and its thinking switch");
        }
        let system_role = r.setting(
            "route.system_role",
            from_tables(r, tables, "system_role", |m| m.system_role),
            SystemRole::System,
        );
        if kind != ProviderKind::OpenAiCompletions {
            r.explain_last(&format!("not read by {kind} routes"));
        }
        let prices = r.setting(
            "route.prices",
            from_tables(r, tables, "prices", |m| m.prices.map(Some)),
            if is_deepseek {
                dsh_llm::deepseek::prices(model)
            } else {
                None
            },
        );
        r.none_means(&prices, "none declared: no costUsd");
        ModelFacts {
            context_window,
            max_output_tokens,
            image_input,
            reasoning_effort,
            system_role,
            prices,
        }
    }
}

/// A model field as the route's table declares it, then the top-level `[models]` table.
fn from_tables<T>(
    r: &Resolver<'_>,
    tables: &[(String, Option<&ModelConfig>); 2],
    field: &str,
    get: impl Fn(&ModelConfig) -> Option<T>,
) -> [Option<Sourced<T>>; 2] {
    tables
        .each_ref()
        .map(|(key, table)| r.file(&format!("{key}.{field}"), table.and_then(&get)))
}
