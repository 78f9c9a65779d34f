//! `--output-schema FILE`: the final answer must be JSON valid against a JSON Schema. An
//! answer that is not is sent back to the model with what failed, a bounded number of times.

use std::path::Path;

use serde_json::Value;

use crate::SetupError;

/// How many times an invalid final answer is sent back before the turn fails.
pub const OUTPUT_RETRIES: u32 = 2;

/// A compiled schema for the final answer.
pub struct OutputSchema {
    schemas: boon::Schemas,
    root: boon::SchemaIndex,
    /// Where it came from, as the model is told: the file's path, or what asked for it.
    shown: String,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("shown", &self.shown)
            .finish()
    }
}

impl OutputSchema {
    /// Reads and compiles the schema at `path`; a file that is not a JSON Schema is refused
    /// before anything is sent.
    pub fn load(path: &Path) -> Result<OutputSchema, SetupError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| {
            SetupError::new(
                "OUTPUT_SCHEMA_FILE",
                format!("--output-schema {shown} cannot be read: {e}"),
            )
        })?;
        let schema: Value = serde_json::from_str(&text).map_err(|e| {
            SetupError::new(
                "OUTPUT_SCHEMA_FILE",
                format!("--output-schema {shown} is not JSON: {e}"),
            )
        })?;
        let (schemas, root) = compile(schema).map_err(|e| {
            SetupError::new(
                "OUTPUT_SCHEMA_FILE",
                format!("--output-schema {shown} is not a valid JSON Schema: {e}"),
            )
        })?;
        Ok(OutputSchema {
            schemas,
            root,
            shown: path.display().to_string(),
        })
    }

    /// A schema given as a value (a Ralph round's report, a workflow agent's), `shown` as what
    /// asks for it; `None` when it does not compile as a JSON Schema.
    pub(crate) fn of(schema: &Value, shown: &str) -> Option<OutputSchema> {
        let (schemas, root) = compile(schema.clone()).ok()?;
        Some(OutputSchema {
            schemas,
            root,
            shown: shown.to_owned(),
        })
    }

    /// The answer's JSON, when it is valid; else what is wrong with it, for the model. A
    /// single fenced block (```json ... ```) is read as its content.
    pub fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfenced(answer.trim());
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        let problems = self.problems(&value);
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "the answer does not match the schema: {}",
                problems.join("; ")
            ))
        }
    }

    /// What is wrong with `value` against the schema (the first ten things), nothing when it
    /// is valid: also what a host tool's arguments are checked with.
    pub(crate) fn problems(&self, value: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        if let Err(error) = self.schemas.validate(value, self.root) {
            problems_in(&error, &mut problems);
        }
        problems.truncate(10);
        problems
    }

    /// What the model is told after an invalid answer.
    pub fn correction(&self, problem: &str) -> String {
        format!(
            "Your final answer must be only JSON that validates against the JSON Schema the run \
             was given ({}), and it was not: {problem}. Answer again with the corrected JSON \
             alone, no other text.",
            self.shown
        )
    }
}

/// Where the schema is kept while it is compiled: a name no `$ref` can reach out of.
const SCHEMA_URL: &str = "urn:dsh:output-schema";

/// Compiles `schema` as the draft its `$schema` names (2020-12 when none). A `$ref` to another
/// document is refused, not fetched or read: the schema is the run's, and a workflow's may be
/// the model's own writing, which must not make dsh open a local file or a URL.
fn compile(schema: Value) -> Result<(boon::Schemas, boon::SchemaIndex), String> {
    struct NoDocuments;
    impl boon::UrlLoader for NoDocuments {
        fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
            Err(format!("{url} is another document, and only the schema itself is read").into())
        }
    }
    let mut compiler = boon::Compiler::new();
    compiler.use_loader(Box::new(NoDocuments));
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource(SCHEMA_URL, schema)
        .and_then(|()| compiler.compile(SCHEMA_URL, &mut schemas))
        .map(|root| (schemas, root))
        .map_err(|e| format!("{e:#}"))
}

/// The failures at the leaves of `error`'s tree (what the value must change), each as
/// `at /pointer: what is wrong`.
fn problems_in(error: &boon::ValidationError, out: &mut Vec<String>) {
    if error.causes.is_empty() {
        let at = error.instance_location.to_string();
        let at = if at.is_empty() { "/".to_owned() } else { at };
        out.push(format!("at {at}: {}", error.kind));
    }
    for cause in &error.causes {
        problems_in(cause, out);
    }
}

fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The fence's info string (`json`) ends at the first line break.
    body.split_once('\n').map_or(body, |(_, body)| body).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> (tempfile::TempDir, OutputSchema) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(
            &path,
            r#"{"type":"object","required":["ok","count"],"properties":{"ok":{"type":"boolean"},"count":{"type":"integer","minimum":0}}}"#,
        )
        .unwrap();
        let schema = OutputSchema::load(&path).unwrap();
        (dir, schema)
    }

    #[test]
    fn valid_answers_are_parsed_and_invalid_ones_explained() {
        let (_dir, schema) = schema();
        assert_eq!(
            schema.check(" {\"ok\": true, \"count\": 2} ").unwrap(),
            serde_json::json!({"ok": true, "count": 2})
        );
        assert!(
            schema
                .check("```json\n{\"ok\": false, \"count\": 0}\n```")
                .is_ok()
        );
        let problem = schema
            .check("{\"ok\": \"yes\", \"count\": -1}")
            .unwrap_err();
        assert!(
            problem.contains("at /ok") && problem.contains("at /count"),
            "{problem}"
        );
        assert!(
            schema
                .check("sure!")
                .unwrap_err()
                .starts_with("the answer is not JSON")
        );
    }

    #[test]
    fn problems_name_where_and_what_in_any_draft() {
        let schema = serde_json::json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/definitions/item"}}
            },
            "definitions": {"item": {"type": "string", "pattern": "^\\d+$"}}
        });
        let schema = OutputSchema::of(&schema, "test").unwrap();
        assert!(schema.check(r#"{"items": ["12", "3"]}"#).is_ok());
        let problem = schema.check(r#"{"items": ["12", "x", 4]}"#).unwrap_err();
        assert_eq!(
            problem,
            "the answer does not match the schema: at /items/1: 'x' does not match pattern \
             '^[0-9]+$'; at /items/2: want string, but got number"
        );
    }

    /// A schema (a workflow's may be the model's own writing) cannot make dsh read a local
    /// file or fetch a URL through `$ref`: the secret's text never reaches the model.
    #[test]
    fn a_ref_to_another_document_is_refused_and_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.json");
        std::fs::write(&secret, r#"{"const": "the secret 7f3a"}"#).unwrap();
        let url = format!("file://{}", secret.display());
        for reference in [url.as_str(), "secret.json", "http://127.0.0.1:9/s.json"] {
            let schema = serde_json::json!({"$ref": reference});
            assert!(OutputSchema::of(&schema, "test").is_none(), "{reference}");
            let path = dir.path().join("schema.json");
            std::fs::write(&path, schema.to_string()).unwrap();
            let error = OutputSchema::load(&path).unwrap_err().message;
            assert!(error.contains("is not a valid JSON Schema"), "{error}");
            if reference.contains("://") {
                assert!(error.contains("only the schema itself is read"), "{error}");
            }
            assert!(!error.contains("7f3a"), "{error}");
        }
    }

    #[test]
    fn a_bad_schema_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, r#"{"type": 12}"#).unwrap();
        let error = OutputSchema::load(&path).unwrap_err().message;
        assert!(error.contains("is not a valid JSON Schema"), "{error}");
        let error = OutputSchema::load(&dir.path().join("missing.json"))
            .unwrap_err()
            .message;
        assert!(error.contains("cannot be read"), "{error}");
    }
}
