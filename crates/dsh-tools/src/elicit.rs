//! A question an MCP server puts to the user (MCP elicitation, form mode): a message and a form
//! of flat fields read from the server's requested schema. Front ends show the form with each
//! field's default filled in (SEP-1034) and check what the user typed with [`Form::check`]
//! before it goes back; the MCP client checks it again.

use serde_json::{Map, Value};

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server that asks.
    pub server: String,
    /// What it says to the user.
    pub message: String,
    pub form: Form,
    /// The schema as the server sent it, for a front end that forwards the question (an
    /// editor over ACP) rather than showing the form itself.
    pub schema: Value,
}

/// The fields to fill, in the schema's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Form {
    pub fields: Vec<FormField>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property's name, the key of the answer.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// The schema's default, of the field's kind.
    pub default: Option<Value>,
}

impl FormField {
    /// The title, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        /// `email`, `uri`, `date` or `date-time`, as the schema says.
        format: Option<String>,
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of the options.
    Choice {
        options: Vec<ChoiceOption>,
    },
    /// Any of the options.
    Choices {
        options: Vec<ChoiceOption>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceOption {
    /// The value sent back.
    pub value: String,
    /// What the user sees.
    pub title: String,
}

/// How the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The form, filled in.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user closed the question without answering.
    Cancel,
}

impl Form {
    /// The form a requested schema describes: an object of flat properties (strings, numbers,
    /// booleans, single- and multi-select enums, as MCP allows). Anything else is refused
    /// with the reason, for the server.
    pub fn from_schema(schema: &Value) -> Result<Form, SchemaError> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SchemaError::NotAnObject);
        }
        let count = schema
            .get("properties")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        if count > MAX_FIELDS {
            return Err(SchemaError::TooManyFields(count));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut fields = Vec::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, property) in properties.into_iter().flatten() {
            let kind = field_kind(property).ok_or_else(|| SchemaError::Unshowable(name.clone()))?;
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
            let default = property
                .get("default")
                .cloned()
                .filter(|d| fits(&kind, d).is_ok());
            fields.push(FormField {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
                kind,
                default,
            });
        }
        Ok(Form { fields })
    }

    /// What the user gave, with each field left out filled from its default (SEP-1034), checked
    /// against the form: the answer to send, or what is wrong, naming the field. A field given
    /// as `null` is one the user emptied: it is left out, default and all.
    pub fn check(&self, given: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        let mut answer = Map::new();
        for field in &self.fields {
            let value = match given.get(&field.name) {
                Some(Value::Null) => None,
                Some(value) => Some(value),
                None => field.default.as_ref(),
            };
            match value {
                Some(value) => {
                    fits(&field.kind, value).map_err(|why| format!("{}: {why}", field.label()))?;
                    answer.insert(field.name.clone(), value.clone());
                }
                None if field.required => {
                    return Err(format!("{}: needs an answer", field.label()));
                }
                None => {}
            }
        }
        if let Some(extra) = given
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(format!("\"{extra}\" is not a field of this form"));
        }
        Ok(answer)
    }
}

fn field_kind(property: &Value) -> Option<FieldKind> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    match property.get("type").and_then(Value::as_str)? {
        "string" => {
            if ["enum", "oneOf", "anyOf"]
                .iter()
                .any(|k| property.get(k).is_some())
            {
                // A choice it cannot list (too many options, odd values) is no field at all.
                return options_of(property).map(|options| FieldKind::Choice { options });
            }
            Some(FieldKind::Text {
                format: property
                    .get("format")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                min_length: count("minLength"),
                max_length: count("maxLength"),
            })
        }
        kind @ ("number" | "integer") => Some(FieldKind::Number {
            integer: kind == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        }),
        "boolean" => Some(FieldKind::Boolean),
        "array" => Some(FieldKind::Choices {
            options: options_of(property.get("items")?)?,
            min_items: count("minItems"),
            max_items: count("maxItems"),
        }),
        _ => None,
    }
}

/// The most fields a form shows, and options a choice offers: a server's question is shown
/// whole or not at all.
const MAX_FIELDS: usize = 50;
const MAX_OPTIONS: usize = 200;

/// An enum's options: `enum` (with `enumNames` as titles, the older form) or `oneOf`/`anyOf`
/// of `{const, title}`; none past [`MAX_OPTIONS`].
fn options_of(schema: &Value) -> Option<Vec<ChoiceOption>> {
    let options = listed_options(schema)?;
    (options.len() <= MAX_OPTIONS).then_some(options)
}

fn listed_options(schema: &Value) -> Option<Vec<ChoiceOption>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let value = v.as_str()?.to_owned();
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_owned);
                Some(ChoiceOption { value, title })
            })
            .collect();
    }
    let listed = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    listed
        .iter()
        .map(|option| {
            let value = option.get("const")?.as_str()?.to_owned();
            let title = option
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| value.clone(), str::to_owned);
            Some(ChoiceOption { value, title })
        })
        .collect()
}

/// Why a requested schema cannot be shown as a form, as the server is told.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("the requested schema is not an object")]
    NotAnObject,
    #[error("it has {0} fields, more than the {MAX_FIELDS} a form shows")]
    TooManyFields(usize),
    /// The property's name: its kind is none a form has.
    #[error("property \"{0}\" is not a kind of field dsh can show")]
    Unshowable(String),
}

/// Why a value is no answer to a field, said after the field's label.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum Unfit {
    #[error("needs text")]
    Text,
    #[error("is not a valid {0}")]
    Format(String),
    #[error("needs at least {0} characters")]
    TooShort(u64),
    #[error("takes at most {0} characters")]
    TooLong(u64),
    #[error("needs a number")]
    Number,
    #[error("needs a whole number")]
    Whole,
    #[error("must be at least {0}")]
    Below(f64),
    #[error("must be at most {0}")]
    Above(f64),
    #[error("needs yes or no")]
    YesOrNo,
    #[error("needs one of the options")]
    Option,
    #[error("\"{0}\" is not one of the options")]
    NotAnOption(String),
    #[error("needs a list of options")]
    Options,
    #[error("needs at least {0} choices")]
    TooFew(u64),
    #[error("takes at most {0} choices")]
    TooMany(u64),
}

/// Whether `value` is an answer `kind` takes; else why not.
fn fits(kind: &FieldKind, value: &Value) -> Result<(), Unfit> {
    match kind {
        FieldKind::Text {
            format,
            min_length,
            max_length,
        } => {
            let text = value.as_str().ok_or(Unfit::Text)?;
            if let Some(format) = format {
                formatted(format, text)?;
            }
            let length = text.chars().count() as u64;
            if min_length.is_some_and(|min| length < min) {
                return Err(Unfit::TooShort(min_length.unwrap_or(0)));
            }
            if max_length.is_some_and(|max| length > max) {
                return Err(Unfit::TooLong(max_length.unwrap_or(0)));
            }
            Ok(())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let number = value.as_f64().ok_or(Unfit::Number)?;
            if *integer && !(value.is_i64() || value.is_u64()) {
                return Err(Unfit::Whole);
            }
            if minimum.is_some_and(|min| number < min) {
                return Err(Unfit::Below(minimum.unwrap_or(0.0)));
            }
            if maximum.is_some_and(|max| number > max) {
                return Err(Unfit::Above(maximum.unwrap_or(0.0)));
            }
            Ok(())
        }
        FieldKind::Boolean => value.as_bool().map(|_| ()).ok_or(Unfit::YesOrNo),
        FieldKind::Choice { options } => {
            let chosen = value.as_str().ok_or(Unfit::Option)?;
            if options.iter().any(|o| o.value == chosen) {
                Ok(())
            } else {
                Err(Unfit::NotAnOption(chosen.to_owned()))
            }
        }
        FieldKind::Choices {
            options,
            min_items,
            max_items,
        } => {
            let chosen = value.as_array().ok_or(Unfit::Options)?;
            for item in chosen {
                let item = item.as_str().ok_or(Unfit::Options)?;
                if !options.iter().any(|o| o.value == item) {
                    return Err(Unfit::NotAnOption(item.to_owned()));
                }
            }
            let count = chosen.len() as u64;
            if min_items.is_some_and(|min| count < min) {
                return Err(Unfit::TooFew(min_items.unwrap_or(0)));
            }
            if max_items.is_some_and(|max| count > max) {
                return Err(Unfit::TooMany(max_items.unwrap_or(0)));
            }
            Ok(())
        }
    }
}

/// Whether `text` is in the string `format` the schema names (MCP allows four); an unknown
/// format is not checked.
fn formatted(format: &str, text: &str) -> Result<(), Unfit> {
    let digits = |part: &str, n: usize| part.len() == n && part.bytes().all(|b| b.is_ascii_digit());
    let date = |text: &str| {
        let parts: Vec<&str> = text.split('-').collect();
        matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
    };
    let ok = match format {
        "email" => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(' ')
        }),
        "uri" => text.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        "date" => date(text),
        "date-time" => text.split_once(['T', 't']).is_some_and(|(day, time)| {
            date(day) && time.len() >= 8 && time.as_bytes().get(2) == Some(&b':')
        }),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(Unfit::Format(format.to_owned()))
    }
}

/// Reads what a person typed into a field as the value the field takes: text as it is, a
/// number parsed, `y`/`yes`/`true` and `n`/`no`/`false`, an option by its value or title, and
/// a list of options separated by commas. `None` for an empty entry.
pub fn typed_value(field: &FormField, typed: &str) -> Result<Option<Value>, String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return Ok(None);
    }
    let option = |options: &[ChoiceOption], word: &str| {
        options
            .iter()
            .find(|o| o.value == word || o.title.eq_ignore_ascii_case(word))
            .map(|o| Value::String(o.value.clone()))
            .ok_or_else(|| format!("\"{word}\" is not one of the options"))
    };
    let value = match &field.kind {
        FieldKind::Text { .. } => Value::String(typed.to_owned()),
        FieldKind::Number { integer: true, .. } => typed
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "needs a whole number".to_owned())?,
        FieldKind::Number { .. } => typed
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or("needs a number")?,
        FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer yes or no".into()),
        },
        FieldKind::Choice { options } => option(options, typed)?,
        FieldKind::Choices { options, .. } => Value::Array(
            typed
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(|w| option(options, w))
                .collect::<Result<_, _>>()?,
        ),
    };
    fits(&field.kind, &value).map_err(|why| format!("{}: {why}", field.label()))?;
    Ok(Some(value))
}

/// A value as a person types it: the inverse of [`typed_value`], for a prefilled field.
pub fn shown_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Array(items) => items.iter().map(shown_value).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The schema the MCP conformance suite's SEP-1034 scenario asks with.
    fn defaults_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            },
            "required": []
        })
    }

    #[test]
    fn defaults_fill_what_the_user_left_out() {
        let form = Form::from_schema(&defaults_schema()).unwrap();
        assert_eq!(form.fields.len(), 5);
        let answer = form.check(&Map::new()).unwrap();
        assert_eq!(
            Value::Object(answer),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        let mut given = Map::new();
        given.insert("age".into(), json!(41));
        given.insert("name".into(), Value::Null);
        let answer = form.check(&given).unwrap();
        assert_eq!(answer["age"], 41);
        assert!(
            answer.get("name").is_none(),
            "an emptied field is left out: {answer:?}"
        );
    }

    #[test]
    fn a_form_too_big_to_show_is_refused() {
        let properties: Map<String, Value> = (0..51)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let big = Form::from_schema(&schema).unwrap_err();
        assert_eq!(big, SchemaError::TooManyFields(51));
        assert_eq!(
            big.to_string(),
            "it has 51 fields, more than the 50 a form shows"
        );
        let many: Vec<String> = (0..201).map(|i| format!("o{i}")).collect();
        let schema =
            json!({"type": "object", "properties": {"pick": {"type": "string", "enum": many}}});
        assert_eq!(
            Form::from_schema(&schema).unwrap_err(),
            SchemaError::Unshowable("pick".into())
        );
    }

    #[test]
    fn wrong_answers_name_the_field() {
        let schema = json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "title": "Email", "format": "email", "maxLength": 6},
                "size": {"type": "integer", "minimum": 1, "maximum": 3},
                "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 1}
            },
            "required": ["email"]
        });
        let form = Form::from_schema(&schema).unwrap();
        let check = |given: Value| form.check(given.as_object().unwrap());
        assert_eq!(check(json!({})).unwrap_err(), "Email: needs an answer");
        assert_eq!(
            check(json!({"email": "a@long.example"})).unwrap_err(),
            "Email: takes at most 6 characters"
        );
        assert_eq!(
            check(json!({"email": "a@b.c", "size": 1.5})).unwrap_err(),
            "size: needs a whole number"
        );
        assert_eq!(
            check(json!({"email": "a@b.c", "colour": "blue"})).unwrap_err(),
            "colour: \"blue\" is not one of the options"
        );
        assert_eq!(
            check(json!({"email": "a@b.c", "tags": ["a", "b"]})).unwrap_err(),
            "tags: takes at most 1 choices"
        );
        assert_eq!(
            check(json!({"email": "ab.c"})).unwrap_err(),
            "Email: is not a valid email"
        );
        assert_eq!(
            check(json!({"email": "a@b.c", "other": 1})).unwrap_err(),
            "\"other\" is not a field of this form"
        );
        let colour = &form.fields[2];
        assert_eq!(typed_value(colour, "green").unwrap(), Some(json!("g")));
        assert_eq!(typed_value(&form.fields[1], " 2 ").unwrap(), Some(json!(2)));
        assert!(
            typed_value(&form.fields[1], "9")
                .unwrap_err()
                .contains("at most 3")
        );
        assert_eq!(shown_value(&json!(["a", "b"])), "a, b");
    }

    #[test]
    fn a_schema_dsh_cannot_show_is_refused_with_the_reason() {
        let nested = json!({"type": "object", "properties": {"n": {"type": "object"}}});
        let nested = Form::from_schema(&nested).unwrap_err();
        assert_eq!(nested, SchemaError::Unshowable("n".into()));
        assert_eq!(
            nested.to_string(),
            "property \"n\" is not a kind of field dsh can show"
        );
        assert_eq!(
            Form::from_schema(&json!({"type": "string"})),
            Err(SchemaError::NotAnObject)
        );
    }
}
