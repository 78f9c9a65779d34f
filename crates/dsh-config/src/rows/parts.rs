//! Rows that configure the parts dsh has: MCP servers, skills, workspace instructions, the
//! session log and the sandbox.

use std::path::Path;

use serde_json::Value;

use super::{Fields, Translation};

/// The keys of `[mcp.servers.<name>]` an MCP row's `config` sets (all but `enabled`, which is
/// the row's `disabled`).
pub(super) const MCP_SERVER_FIELDS: [&str; 9] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "call_timeout_ms",
    "startup_timeout_ms",
    "fail_on_startup_error",
];

impl Translation<'_> {
    pub(super) fn mcp_row(
        &mut self,
        server: &str,
        config: Option<&Value>,
        disabled: Option<bool>,
    ) -> Result<(), String> {
        if let Some(disabled) = disabled {
            self.set(&["mcp", "servers", server, "enabled"], (!disabled).into());
        }
        let Some(config) = config else {
            return Ok(());
        };
        let Value::Object(map) = config else {
            return Err(self.at("the MCP row's `config` must be a mapping".into()));
        };
        if let Some(named) = map.get("serverName")
            && named.as_str() != Some(server)
        {
            return Err(self.at(format!(
                "the row's serverName {named} differs from the server \"{server}\" it \
                     targets; a server keeps its name (insert a new row for another server)"
            )));
        }
        // The row's config is the server's whole configuration: an earlier file's command,
        // url, env or headers do not survive it (a stdio server can become an HTTP one).
        for field in MCP_SERVER_FIELDS {
            self.replace(&["mcp", "servers", server, field]);
        }
        let mut fields = Fields {
            kind: "mcp-client",
            map: map.clone(),
        };
        let result = (|| {
            fields.ignore("serverName");
            let Some(transport) = fields.string("transport")? else {
                return Err(
                    "needs `transport`: stdio (with command) or streamable-http (with url)".into(),
                );
            };
            let mut put = |field: &str, value: toml::Value| {
                self.set(&["mcp", "servers", server, field], value);
            };
            match transport.as_str() {
                "stdio" => {
                    put("command", fields.required_string("command")?.into());
                    if let Some(args) = fields.string_list("args")? {
                        put("args", args.into());
                    }
                    if let Some(env) = fields.string_map("env")? {
                        put("env", env);
                    }
                    if let Some(cwd) = fields.string("cwd")?.filter(|c| !c.is_empty()) {
                        put("cwd", cwd.into());
                    }
                }
                "streamable-http" => {
                    put("url", fields.required_string("url")?.into());
                    if let Some(headers) = fields.string_map("headers")? {
                        put("headers", headers);
                    }
                }
                other => {
                    return Err(format!(
                        "transport \"{other}\" is not one dsh speaks (stdio or streamable-http)"
                    ));
                }
            }
            if let Some(ms) = fields.integer("toolCallTimeoutMs")? {
                put("call_timeout_ms", ms.into());
            }
            if let Some(fail) = fields.bool("failOnStartupError")? {
                put("fail_on_startup_error", fail.into());
            }
            // dsh restarts a lost server when a call needs it, rather than on a timer.
            fields.ignore("reconnect");
            fields.done()
        })();
        result.map_err(|e| self.at(format!("MCP server {server}: {e}")))
    }

    pub(super) fn skills(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(defaults) = fields.bool("includeDefaultRoots")? {
            self.set(&["skills", "default_roots"], defaults.into());
        }
        if let Some(dirs) = fields.string_list("customSkillDirs")? {
            self.set(&["skills", "dirs"], dirs.into());
        }
        fields.ignore("providerName");
        for watch in [
            "watch",
            "watchUsePolling",
            "watchStabilityThresholdMs",
            "watchPollIntervalMs",
            "watchMaxProjects",
            "watchFollowSymlinks",
        ] {
            if fields.take(watch).is_some() {
                self.note(format!(
                    "row skill-filesystem: {watch} has no effect; dsh reads skills once per run"
                ));
            }
        }
        Ok(())
    }

    pub(super) fn instructions(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(max) = fields.integer_signed("maxBytes")? {
            // No budget is no instructions; `instructions.enabled` stays the row's `disabled`.
            self.set(&["instructions", "max_bytes"], max.max(0).into());
        }
        if let Some(markers) = fields.string_list("projectRootMarkers")? {
            self.set(&["instructions", "root_markers"], markers.into());
        }
        for (name, ours) in [
            ("instructionFileCandidates", crate::project::CANDIDATES),
            (
                "localInstructionFileCandidates",
                crate::project::LOCAL_CANDIDATES,
            ),
        ] {
            if let Some(list) = fields.string_list(name)?
                && list != ours
            {
                return Err(format!(
                    "{name} {list:?} differs from the files dsh reads ({ours:?})"
                ));
            }
        }
        Ok(())
    }

    pub(super) fn persistence(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(root) = fields.string("root")? {
            let ours = self.context.home.join("sessions");
            if Path::new(&root) != ours {
                return Err(format!(
                    "root \"{root}\": dsh keeps sessions in $DSH_HOME/sessions ({}); set DSH_HOME \
                     to move them",
                    ours.display()
                ));
            }
        }
        if let Some(compression) = fields.string("compression")? {
            self.set(&["sessions", "compression"], compression.into());
        }
        for ignored in [
            "packChunks",
            "preparedSessionCacheSize",
            "writeBatchMaxDelayMs",
        ] {
            if fields.take(ignored).is_some() {
                self.note(format!(
                    "row session-persistence-jsonl: {ignored} has no effect; dsh writes one \
                     record per line as it happens"
                ));
            }
        }
        Ok(())
    }

    pub(super) fn sandbox_policy(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(mode) = fields.string("mode")? {
            self.set(&["sandbox", "mode"], mode.into());
        }
        if let Some(root) = fields.string("workspaceRoot")?
            && Path::new(&root) != self.context.cwd
        {
            return Err(format!(
                "workspaceRoot \"{root}\": dsh's workspace is the working directory ({}); run \
                 dsh there, and grant other folders with --add-dir",
                self.context.cwd.display()
            ));
        }
        Ok(())
    }
}
