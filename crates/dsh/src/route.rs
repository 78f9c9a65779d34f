//! Which server a model reference goes to: `--model <provider>/<model>`, or a bare model name
//! for the built-in DeepSeek route.

use std::sync::Arc;
use std::time::Duration;

use dsh_core::{Config, Credentials, EnvSource, ModelConfig};
use dsh_llm::{
    AnthropicConfig, AnthropicMessages, ChatCompletions, ChatCompletionsConfig, ChatDialect,
    OpenAiResponses, Provider, ResponsesConfig,
};

use crate::run::SetupError;

/// The endpoint of a route, by dialect.
pub(crate) enum Endpoint {
    Chat(ChatCompletionsConfig),
    Anthropic(AnthropicConfig),
    Responses(ResponsesConfig),
}

impl Endpoint {
    /// The client.
    pub fn connect(self) -> Result<Arc<dyn Provider>, SetupError> {
        let fail = |failure: dsh_protocol::Failure| SetupError(failure.message);
        Ok(match self {
            Endpoint::Chat(config) => Arc::new(ChatCompletions::new(config).map_err(fail)?),
            Endpoint::Anthropic(config) => Arc::new(AnthropicMessages::new(config).map_err(fail)?),
            Endpoint::Responses(config) => Arc::new(OpenAiResponses::new(config).map_err(fail)?),
        })
    }
}

/// A resolved model reference.
pub(crate) struct Route {
    pub endpoint: Endpoint,
    /// The model's name as the server knows it.
    pub model: String,
    /// What is known about the model: the route's table, then the top-level `[models]`.
    pub model_config: ModelConfig,
    /// Whether the model takes images when the config does not say.
    pub image_default: bool,
    /// The context window assumed when the config declares none: the reference's defaults,
    /// 1,000,000 for DeepSeek and 262,144 for other routes.
    pub window_default: u64,
}

/// The context window assumed for an undeclared model of a route that is not DeepSeek.
pub(crate) const OTHER_WINDOW_DEFAULT: u64 = 262_144;

/// The route of `model_ref`.
pub(crate) fn resolve(
    model_ref: &str,
    files: &Config,
    credentials: &Credentials,
) -> Result<Route, SetupError> {
    let fail = |message: String| Err(SetupError(message));
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
                "unknown provider \"{provider}\" in model \"{model_ref}\": declare \
                 [providers.{provider}] in a config file (see docs/providers.md), or use one of: {}",
                known.join(", ")
            ));
        }
        None => ("deepseek", model_ref),
    };
    if model.trim().is_empty() {
        return fail(format!(
            "model \"{model_ref}\" names no model after the provider"
        ));
    }
    let declared = files.providers.get(provider);
    let table = declared.and_then(|p| p.models.get(model));
    let top = files.models.get(model);
    let pick = |f: fn(&ModelConfig) -> Option<_>| table.and_then(f).or_else(|| top.and_then(f));
    let model_config = ModelConfig {
        image_input: table
            .and_then(|m| m.image_input)
            .or_else(|| top.and_then(|m| m.image_input)),
        context_window: table
            .and_then(|m| m.context_window)
            .or_else(|| top.and_then(|m| m.context_window)),
        max_output_tokens: table
            .and_then(|m| m.max_output_tokens)
            .or_else(|| top.and_then(|m| m.max_output_tokens)),
        reasoning_effort: pick(|m| m.reasoning_effort),
        system_role: table
            .and_then(|m| m.system_role.clone())
            .or_else(|| top.and_then(|m| m.system_role.clone())),
        prices: table
            .and_then(|m| m.prices)
            .or_else(|| top.and_then(|m| m.prices)),
    };
    let kind = declared.map_or("deepseek", |p| {
        if p.kind.is_empty() && provider == "deepseek" {
            "deepseek"
        } else {
            p.kind.as_str()
        }
    });
    let dialect = match kind {
        "deepseek" | "anthropic-messages" | "openai-responses" => ChatDialect::DeepSeek,
        "openai-completions" => ChatDialect::OpenAi {
            reasoning_effort: model_config.reasoning_effort.unwrap_or(false),
            developer_role: match model_config.system_role.as_deref() {
                None | Some("system") => false,
                Some("developer") => true,
                Some(other) => {
                    return fail(format!(
                        "model \"{model_ref}\": system_role must be system or developer, got \
                         \"{other}\""
                    ));
                }
            },
        },
        "" => {
            return fail(format!(
                "provider \"{provider}\" needs a kind: deepseek, openai-completions, openai-responses or anthropic-messages"
            ));
        }
        other => {
            return fail(format!(
                "provider \"{provider}\": unknown kind \"{other}\"; use deepseek, \
                 openai-completions, openai-responses or anthropic-messages"
            ));
        }
    };
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (base_url, base_url_source) = if provider == "deepseek" {
        match env("DEEPSEEK_BASE_URL") {
            Some(url) => (url, "DEEPSEEK_BASE_URL".to_owned()),
            None => (
                declared
                    .and_then(|p| p.base_url.clone())
                    .unwrap_or_else(|| dsh_llm::deepseek::DEFAULT_BASE_URL.to_owned()),
                "providers.deepseek.base_url".to_owned(),
            ),
        }
    } else {
        match declared.and_then(|p| p.base_url.clone()) {
            Some(url) => (url, format!("providers.{provider}.base_url")),
            None => {
                return fail(format!(
                    "provider \"{provider}\" needs base_url (the API root, for example \
                     http://127.0.0.1:8000/v1)"
                ));
            }
        }
    };
    let key_env = declared
        .and_then(|p| p.api_key_env.clone())
        .or_else(|| (provider == "deepseek").then(|| "DEEPSEEK_API_KEY".to_owned()));
    let api_key = match &key_env {
        None => None,
        Some(name) => match credentials.get(name) {
            Some((value, _)) if !value.is_empty() => Some(value),
            Some((_, EnvSource::Launch)) => {
                return fail(format!(
                    "no API key for provider \"{provider}\": {name} is exported empty, which \
                     also hides any .env file; set it, or unset it to use a .env file"
                ));
            }
            _ => {
                return fail(format!(
                    "no API key for provider \"{provider}\": set {name} in the environment"
                ));
            }
        },
    };
    let image_default = kind == "deepseek" && dsh_llm::deepseek::takes_images(model);
    let headers: Vec<(String, String)> = declared
        .map(|p| {
            p.headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let api_key_env = key_env.unwrap_or_else(|| format!("providers.{provider}.api_key_env"));
    // How long the server may stay silent: `requests.idle_timeout_ms`, else 300 s.
    let idle_timeout = files
        .requests
        .idle_timeout_ms
        .map_or(Duration::from_secs(300), |ms| {
            Duration::from_millis(ms.max(1))
        });
    let endpoint = if kind == "openai-responses" {
        Endpoint::Responses(ResponsesConfig {
            name: provider.to_owned(),
            base_url,
            api_key,
            api_key_env,
            base_url_source,
            idle_timeout,
            headers,
            reasoning_effort: model_config.reasoning_effort.unwrap_or(false),
        })
    } else if kind == "anthropic-messages" {
        Endpoint::Anthropic(AnthropicConfig {
            name: provider.to_owned(),
            base_url,
            api_key,
            api_key_env,
            base_url_source,
            idle_timeout,
            headers,
            thinking: model_config.reasoning_effort.unwrap_or(false),
        })
    } else {
        Endpoint::Chat(ChatCompletionsConfig {
            name: provider.to_owned(),
            base_url,
            api_key,
            api_key_env,
            base_url_source,
            idle_timeout,
            headers,
            dialect,
        })
    };
    Ok(Route {
        endpoint,
        model: model.to_owned(),
        model_config,
        image_default,
        window_default: if kind == "deepseek" {
            dsh_core::compaction::DEFAULT_CONTEXT_WINDOW
        } else {
            OTHER_WINDOW_DEFAULT
        },
    })
}
