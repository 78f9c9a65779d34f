//! Argument schemas: the JSON Schema a tool advertises, and the validation that turns a model's
//! arguments into [`Arguments`] or into the reference's `invalid arguments: ...` error.
//!
//! The root object is open, as in the reference: properties a tool does not declare are accepted
//! and ignored. `null` is a value, not an omission, so `"limit": null` is a type error, except
//! where a tool's commands each use some of its parameters ([`Parameters::unused_null_omitted`]).

use serde_json::{Map, Value, json};

use crate::ToolError;

/// The JSON type of a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    String,
    Number,
    Integer,
    Boolean,
    /// An array whose items have the given type.
    Array(Box<ParamType>),
    Object,
    /// An object with declared properties (an array's items, for example).
    Shape(Box<Shape>),
}

/// The declared properties of a nested object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub params: Vec<Param>,
    /// `Some(false)`: other properties are refused; `Some(true)`: accepted, and said so in the
    /// schema; `None`: accepted, the schema silent.
    pub additional: Option<bool>,
}

impl ParamType {
    fn name(&self) -> &str {
        match self {
            ParamType::String => "string",
            ParamType::Number => "number",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Array(_) => "array",
            ParamType::Object | ParamType::Shape(_) => "object",
        }
    }

    fn schema(&self) -> Map<String, Value> {
        let mut node = Map::new();
        node.insert("type".into(), Value::from(self.name()));
        match self {
            ParamType::Array(items) => {
                node.insert("items".into(), Value::Object(items.schema()));
            }
            ParamType::Shape(shape) => {
                if let Some(additional) = shape.additional {
                    node.insert("additionalProperties".into(), Value::Bool(additional));
                }
                // An open object with no declared properties says only that.
                if !shape.params.is_empty() {
                    properties_schema(&shape.params, &mut node);
                }
            }
            _ => {}
        }
        node
    }

    /// The violation of `value` at `path`, if any.
    fn check(&self, value: &Value, path: &str, out: &mut Vec<String>) {
        let ok = match self {
            ParamType::String => value.is_string(),
            ParamType::Number => value.is_number(),
            ParamType::Integer => value.as_f64().is_some_and(|n| n.fract() == 0.0),
            ParamType::Boolean => value.is_boolean(),
            ParamType::Object => value.is_object(),
            ParamType::Shape(shape) => match value {
                Value::Object(map) => {
                    check_object(
                        &shape.params,
                        shape.additional == Some(false),
                        map,
                        path,
                        out,
                    );
                    true
                }
                _ => false,
            },
            ParamType::Array(items) => match value {
                Value::Array(values) => {
                    for (i, item) in values.iter().enumerate() {
                        items.check(item, &format!("{path}[{i}]"), out);
                    }
                    true
                }
                _ => false,
            },
        };
        if !ok {
            let article = if matches!(
                self,
                ParamType::Integer | ParamType::Array(_) | ParamType::Object | ParamType::Shape(_)
            ) {
                "an"
            } else {
                "a"
            };
            out.push(format!("\"{path}\" must be {article} {}", self.name()));
        }
    }
}

/// One declared argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub ty: ParamType,
    pub description: String,
    pub required: bool,
    /// The allowed values of a string parameter.
    pub one_of: Option<Vec<&'static str>>,
}

impl Param {
    pub fn required(name: &'static str, ty: ParamType, description: impl Into<String>) -> Self {
        Param {
            name,
            ty,
            description: description.into(),
            required: true,
            one_of: None,
        }
    }

    pub fn optional(name: &'static str, ty: ParamType, description: impl Into<String>) -> Self {
        Param {
            name,
            ty,
            description: description.into(),
            required: false,
            one_of: None,
        }
    }

    /// Restricts a string parameter to the given values.
    pub fn one_of(mut self, values: &[&'static str]) -> Self {
        self.one_of = Some(values.to_vec());
        self
    }
}

/// The arguments of a tool, in declaration order.
#[derive(Debug, Clone)]
pub struct Parameters {
    params: Vec<Param>,
    schema: Value,
    /// The parameter that picks a command, and the optional parameters each command uses: a
    /// `null` given for one the chosen command does not use counts as left out.
    commands: Option<CommandParams>,
}

/// The selector parameter's name, and for each of its values the parameters that value uses.
type CommandParams = (
    &'static str,
    &'static [(&'static str, &'static [&'static str])],
);

impl Parameters {
    pub fn new(params: Vec<Param>) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from("object"));
        properties_schema(&params, &mut schema);
        Parameters {
            params,
            schema: Value::Object(schema),
            commands: None,
        }
    }

    /// Declares that `selector` picks a command and which optional parameters each command
    /// uses: models fill every parameter of such a tool, often with `null` for those the
    /// command ignores, and that `null` is taken as left out. A `null` for a parameter the
    /// command uses, or for a required one, is still a type error.
    pub fn unused_null_omitted(
        mut self,
        selector: &'static str,
        uses: &'static [(&'static str, &'static [&'static str])],
    ) -> Self {
        self.commands = Some((selector, uses));
        self
    }

    /// Drops the `null` values of parameters the chosen command does not use.
    fn drop_unused_nulls(&self, map: &mut Map<String, Value>) {
        let Some((selector, uses)) = self.commands else {
            return;
        };
        let Some(used) = (map.get(selector).and_then(Value::as_str))
            .and_then(|command| uses.iter().find(|(name, _)| *name == command))
            .map(|(_, used)| *used)
        else {
            return;
        };
        map.retain(|key, value| {
            !value.is_null()
                || used.contains(&key.as_str())
                || !(self.params.iter()).any(|p| p.name == key && !p.required)
        });
    }

    /// A schema written by someone else (an MCP server's tool): sent to the model as given,
    /// and only checked to be an object here; whoever declared it checks the rest.
    pub fn declared(schema: Value) -> Self {
        Parameters {
            params: Vec::new(),
            schema,
            commands: None,
        }
    }

    /// The JSON Schema sent to the model.
    pub fn json_schema(&self) -> &Value {
        &self.schema
    }

    /// Validates a model's arguments: missing required properties first, then each declared
    /// property in order, all violations joined as the reference does. The root is open.
    pub fn validate(&self, value: Value) -> Result<Arguments, ToolError> {
        let Value::Object(mut map) = value else {
            return Err(invalid(vec!["\"arguments\" must be an object".to_owned()]));
        };
        self.drop_unused_nulls(&mut map);
        let mut violations = Vec::new();
        check_object(&self.params, false, &map, "", &mut violations);
        if violations.is_empty() {
            Ok(Arguments(map))
        } else {
            Err(invalid(violations))
        }
    }
}

/// `properties` and `required` of an object's schema.
fn properties_schema(params: &[Param], node: &mut Map<String, Value>) {
    let mut properties = Map::new();
    for param in params {
        let mut child = param.ty.schema();
        child.insert(
            "description".into(),
            Value::from(param.description.as_str()),
        );
        if let Some(values) = &param.one_of {
            child.insert("enum".into(), json!(values));
        }
        properties.insert(param.name.into(), Value::Object(child));
    }
    node.insert("properties".into(), Value::Object(properties));
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    if !required.is_empty() {
        node.insert("required".into(), json!(required));
    }
}

/// The violations of an object at `path` (empty for the root), in the reference's order: the
/// missing required properties, then each declared property's, then (when `closed`) the
/// undeclared properties in the order they were given.
fn check_object(
    params: &[Param],
    closed: bool,
    map: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let at = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    for param in params.iter().filter(|p| p.required) {
        if !map.contains_key(param.name) {
            out.push(format!("missing required property \"{}\"", at(param.name)));
        }
    }
    for param in params {
        let Some(value) = map.get(param.name) else {
            continue;
        };
        let before = out.len();
        param.ty.check(value, &at(param.name), out);
        if out.len() == before
            && let (Some(allowed), Some(text)) = (&param.one_of, value.as_str())
            && !allowed.contains(&text)
        {
            out.push(format!(
                "\"{}\" must be one of {}",
                at(param.name),
                json!(allowed)
            ));
        }
    }
    if closed {
        for key in map.keys() {
            if !params.iter().any(|p| p.name == key) {
                out.push(format!(
                    "\"{}\" is not a declared property (additionalProperties: false)",
                    at(key)
                ));
            }
        }
    }
}

fn invalid(violations: Vec<String>) -> ToolError {
    ToolError::coded(
        "ToolArgsError",
        "INVALID_ARGS",
        format!("invalid arguments: {}", violations.join("; ")),
    )
}

/// Validated arguments. Accessors return `None` for an absent property; types are already
/// checked, so a present property has its declared type.
#[derive(Debug, Clone, Default)]
pub struct Arguments(Map<String, Value>);

impl Arguments {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    pub fn number(&self, name: &str) -> Option<f64> {
        self.0.get(name).and_then(Value::as_f64)
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        self.0.get(name).and_then(Value::as_bool)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// The arguments as they were parsed (where the model's text repeats a key, the last
    /// value).
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The arguments as the model sent them.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    /// A number that must be a whole number of at least 1 (`2.0` counts as 2).
    pub fn positive_integer(&self, name: &str) -> Result<Option<u64>, ToolError> {
        match self.number(name) {
            None => Ok(None),
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => Ok(Some(n as u64)),
            Some(_) => Err(ToolError::plain(format!(
                "{name} must be a positive integer"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn params() -> Parameters {
        Parameters::new(vec![
            Param::required("file_path", ParamType::String, "Path."),
            Param::optional("offset", ParamType::Number, "First line."),
            Param::optional("mode", ParamType::String, "Mode.").one_of(&["a", "b"]),
            Param::optional(
                "range",
                ParamType::Array(Box::new(ParamType::Integer)),
                "Range.",
            ),
            Param::required("content", ParamType::String, "Text."),
        ])
    }

    fn error(args: Value) -> String {
        params().validate(args).unwrap_err().message
    }

    #[test]
    fn schema_has_the_reference_shape() {
        assert_eq!(
            params().json_schema(),
            &json!({"type":"object","properties":{
                "file_path":{"type":"string","description":"Path."},
                "offset":{"type":"number","description":"First line."},
                "mode":{"type":"string","description":"Mode.","enum":["a","b"]},
                "range":{"type":"array","items":{"type":"integer"},"description":"Range."},
                "content":{"type":"string","description":"Text."}},
                "required":["file_path","content"]})
        );
    }

    #[test]
    fn reports_missing_properties_before_type_errors() {
        assert_eq!(
            error(json!({"offset":"3"})),
            "invalid arguments: missing required property \"file_path\"; missing required property \"content\"; \"offset\" must be a number"
        );
    }

    #[test]
    fn null_is_a_value_not_an_omission() {
        assert_eq!(
            error(json!({"file_path":"a","content":"x","offset":null})),
            "invalid arguments: \"offset\" must be a number"
        );
    }

    #[test]
    fn checks_enums_array_items_and_the_root() {
        assert_eq!(
            error(json!({"file_path":"a","content":"x","mode":"c"})),
            "invalid arguments: \"mode\" must be one of [\"a\",\"b\"]"
        );
        assert_eq!(
            error(json!({"file_path":"a","content":"x","range":[1,"2"]})),
            "invalid arguments: \"range[1]\" must be an integer"
        );
        assert_eq!(
            error(json!("raw")),
            "invalid arguments: \"arguments\" must be an object"
        );
    }

    #[test]
    fn nested_objects_are_checked_with_their_paths() {
        let item = Shape {
            params: vec![
                Param::required("content", ParamType::String, "What."),
                Param::required("status", ParamType::String, "State.").one_of(&["a", "b"]),
            ],
            additional: Some(false),
        };
        let params = Parameters::new(vec![Param::required(
            "todos",
            ParamType::Array(Box::new(ParamType::Shape(Box::new(item)))),
            "List.",
        )]);
        assert_eq!(
            params.json_schema()["properties"]["todos"]["items"],
            json!({"type":"object","additionalProperties":false,"properties":{
                "content":{"type":"string","description":"What."},
                "status":{"type":"string","description":"State.","enum":["a","b"]}},
                "required":["content","status"]})
        );
        assert_eq!(
            params
                .validate(
                    json!({"todos":[{"content":"x","status":"c"},{"status":"a","priority":1}]})
                )
                .unwrap_err()
                .message,
            "invalid arguments: \"todos[0].status\" must be one of [\"a\",\"b\"]; missing required \
             property \"todos[1].content\"; \"todos[1].priority\" is not a declared property \
             (additionalProperties: false)"
        );
    }

    #[test]
    fn extra_properties_are_accepted() {
        let args = params()
            .validate(json!({"file_path":"a","content":"","foo":1}))
            .unwrap();
        assert_eq!(args.str("file_path"), Some("a"));
    }

    #[test]
    fn positive_integers_accept_integral_floats_only() {
        let args = |v: Value| {
            params()
                .validate(json!({"file_path":"a","content":"","offset":v}))
                .unwrap()
        };
        assert_eq!(
            args(json!(2.0)).positive_integer("offset").unwrap(),
            Some(2)
        );
        for bad in [json!(0), json!(-1), json!(1.5)] {
            assert_eq!(
                args(bad).positive_integer("offset").unwrap_err().message,
                "offset must be a positive integer"
            );
        }
    }
}
