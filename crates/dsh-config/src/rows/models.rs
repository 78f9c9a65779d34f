//! Rows that choose and declare model routes: the default model, the pi-ai provider table,
//! the DeepSeek provider.

use serde_json::Value;

use super::{Fields, Translation};

impl Translation<'_> {
    pub(super) fn default_model(&mut self, fields: &mut Fields) -> Result<(), String> {
        let provider = fields.required_string("provider")?;
        let model = fields.required_string("model")?;
        // The reference's own DeepSeek route is dsh's built-in one, named by the bare model.
        let reference = if provider == "deepseek-official" {
            model
        } else {
            format!("{provider}/{model}")
        };
        self.set(&["model"], reference.into());
        if let Some(effort) = fields.effort("reasoningEffort")? {
            self.set(&["effort"], effort.into());
        }
        Ok(())
    }

    pub(super) fn pi_ai(&mut self, fields: &mut Fields) -> Result<(), String> {
        let Some(providers) = fields.take("providers") else {
            return Ok(());
        };
        let Value::Object(providers) = providers else {
            return Err("providers must be a mapping of routes".into());
        };
        for (route, profile) in providers {
            let Value::Object(profile) = profile else {
                return Err(format!("providers.{route} must be a mapping"));
            };
            let mut profile = Fields {
                kind: "llm-pi-ai",
                map: profile,
            };
            let prefix = |key: &str| format!("providers.{route}.{key}");
            let api = profile.string("api")?.ok_or_else(|| {
                format!(
                    "providers.{route} names no api: dsh has no model catalog, so give api \
                     (openai-completions, openai-responses or anthropic-messages) and baseURL"
                )
            })?;
            if !matches!(
                api.as_str(),
                "openai-completions" | "openai-responses" | "anthropic-messages"
            ) {
                return Err(format!(
                    "{}: api \"{api}\" is not one dsh speaks (openai-completions, \
                     openai-responses, anthropic-messages)",
                    prefix("api")
                ));
            }
            let base_url = profile
                .string("baseURL")?
                .ok_or_else(|| format!("providers.{route} names no baseURL"))?;
            let path = ["providers", route.as_str()];
            self.set(&[path[0], path[1], "kind"], api.into());
            self.set(&[path[0], path[1], "base_url"], base_url.into());
            if let Some(env) = profile.string("apiKeyEnv")? {
                self.set(&[path[0], path[1], "api_key_env"], env.into());
            }
            if let Some(headers) = profile.string_map("headers")? {
                self.set(&[path[0], path[1], "headers"], headers);
            }
            profile.ignore("displayName");
            let window = profile.integer("defaultContextWindow")?;
            let max_tokens = profile.integer("defaultMaxTokens")?;
            let default_image = profile
                .string_list("defaultInput")?
                .map(|input| input.iter().any(|m| m == "image"));
            let compat = profile.take("compat");
            let models = profile.take("models").unwrap_or(Value::Array(Vec::new()));
            profile
                .done()
                .map_err(|e| format!("providers.{route}: {e}"))?;
            let Value::Array(models) = models else {
                return Err(format!("{} must be a list", prefix("models")));
            };
            for model in models {
                let Value::Object(model) = model else {
                    return Err(format!("each of {} must be a mapping", prefix("models")));
                };
                let mut model = Fields {
                    kind: "llm-pi-ai",
                    map: model,
                };
                let id = model.required_string("id")?;
                let key = ["providers", route.as_str(), "models", id.as_str()];
                model.ignore("name");
                if let Some(n) = model.integer("contextWindow")?.or(window) {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "context_window"],
                        n.into(),
                    );
                }
                if let Some(n) = model.integer("maxTokens")?.or(max_tokens) {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "max_output_tokens"],
                        n.into(),
                    );
                }
                let image = model
                    .string_list("input")?
                    .filter(|input| !input.is_empty())
                    .map(|input| input.iter().any(|m| m == "image"))
                    .or(default_image);
                if let Some(image) = image {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "image_input"],
                        image.into(),
                    );
                }
                match model.take("reasoningEfforts") {
                    None => {}
                    Some(Value::Bool(false)) => self.set(
                        &[key[0], key[1], key[2], key[3], "reasoning_effort"],
                        false.into(),
                    ),
                    Some(Value::Object(levels)) => self.set(
                        &[key[0], key[1], key[2], key[3], "reasoning_effort"],
                        (!levels.is_empty()).into(),
                    ),
                    Some(_) => {
                        return Err(format!(
                            "{}: reasoningEfforts must be false or a mapping of levels",
                            prefix(&format!("models.{id}"))
                        ));
                    }
                }
                let model_compat = model.take("compat");
                model
                    .done()
                    .map_err(|e| format!("providers.{route}.models.{id}: {e}"))?;
                for compat in [&compat, &model_compat].into_iter().flatten() {
                    self.compat(compat, &key)
                        .map_err(|e| format!("providers.{route} compat: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// The wire switches dsh has: the developer role and `reasoning_effort`.
    fn compat(&mut self, compat: &Value, model: &[&str; 4]) -> Result<(), String> {
        let Value::Object(map) = compat else {
            return Err("compat must be a mapping".into());
        };
        let mut fields = Fields {
            kind: "llm-pi-ai",
            map: map.clone(),
        };
        let [a, b, c, d] = *model;
        if let Some(developer) = fields.bool("supportsDeveloperRole")? {
            let role = if developer { "developer" } else { "system" };
            self.set(&[a, b, c, d, "system_role"], role.into());
        }
        if let Some(effort) = fields.bool("supportsReasoningEffort")? {
            self.set(&[a, b, c, d, "reasoning_effort"], effort.into());
        }
        // Streaming usage is always asked for; a server that ignores the option is read as
        // reporting no usage.
        fields.ignore("supportsUsageInStreaming");
        fields.done()
    }

    pub(super) fn deepseek(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(env) = fields.string("apiKeyEnv")? {
            self.set(&["providers", "deepseek", "api_key_env"], env.into());
        }
        if let Some(url) = fields.string("baseURL")? {
            self.set(&["providers", "deepseek", "base_url"], url.into());
        }
        if let Some(effort) = fields.effort("reasoningEffort")? {
            self.set(&["effort"], effort.into());
        }
        if fields.string("thinking")?.as_deref() == Some("disabled") {
            self.set(&["effort"], "off".into());
        }
        if let Some(ms) = fields.integer("streamIdleTimeoutMs")? {
            self.set(&["requests", "idle_timeout_ms"], ms.into());
        }
        if let Some(Value::Array(models)) = fields.take("models") {
            for model in models {
                let Value::Object(model) = model else {
                    return Err("each of models must be a mapping".into());
                };
                let mut model = Fields {
                    kind: "llm-deepseek",
                    map: model,
                };
                let id = model.required_string("id")?;
                model.ignore("name");
                model.ignore("description");
                let key = ["providers", "deepseek", "models", id.as_str()];
                if let Some(n) = model.integer("contextWindow")? {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "context_window"],
                        n.into(),
                    );
                }
                if let Some(n) = model.integer("maxTokens")? {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "max_output_tokens"],
                        n.into(),
                    );
                }
                if let Some(input) = model.string_list("inputModalities")? {
                    let image = input.iter().any(|m| m == "image");
                    self.set(
                        &[key[0], key[1], key[2], key[3], "image_input"],
                        image.into(),
                    );
                }
                model.done().map_err(|e| format!("models.{id}: {e}"))?;
            }
        }
        Ok(())
    }
}
