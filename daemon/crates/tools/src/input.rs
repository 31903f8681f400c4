//! Reading the fields of a tool's JSON input, with errors a model can act
//! on (what was missing, what type was sent instead).

use serde_json::Value;

use super::context::ToolOutput;

/// The JSON type of `value`, for error messages.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The required string field `field`, which must not be empty.
pub(super) fn required_str<'a>(input: &'a Value, field: &str) -> Result<&'a str, ToolOutput> {
    let value = required_string(input, field)?;
    if value.is_empty() {
        return Err(ToolOutput::error(format!(
            "`{field}` is required and must not be empty."
        )));
    }
    Ok(value)
}

/// The required string field `field`, which may be empty.
pub(super) fn required_string<'a>(input: &'a Value, field: &str) -> Result<&'a str, ToolOutput> {
    match input.get(field) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(ToolOutput::error(format!(
            "`{field}` is required but was not given."
        ))),
        Some(other) => Err(ToolOutput::error(format!(
            "`{field}` is required and must be a string, not {}.",
            type_name(other)
        ))),
    }
}

/// The optional string field `field`; an empty string counts as absent.
pub(super) fn optional_str<'a>(
    input: &'a Value,
    field: &str,
) -> Result<Option<&'a str>, ToolOutput> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolOutput::error(format!(
            "`{field}` must be a string, not {}.",
            type_name(other)
        ))),
    }
}

/// The optional non-negative integer field `field`. Whole floats and numeric
/// strings are accepted too, as models sometimes send them.
pub(super) fn optional_u64(input: &Value, field: &str) -> Result<Option<u64>, ToolOutput> {
    let invalid = |v: &Value| {
        ToolOutput::error(format!(
            "`{field}` must be a non-negative integer, got {v}."
        ))
    };
    match input.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                return Ok(Some(u));
            }
            match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                    Ok(Some(f as u64))
                }
                _ => Err(invalid(v)),
            }
        }
        Some(v @ Value::String(s)) => s.trim().parse().map(Some).map_err(|_| invalid(v)),
        Some(v) => Err(invalid(v)),
    }
}

/// The optional boolean field `field`; the strings "true" and "false" are
/// accepted too.
pub(super) fn optional_bool(input: &Value, field: &str) -> Result<Option<bool>, ToolOutput> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(other) => Err(ToolOutput::error(format!(
            "`{field}` must be a boolean (true or false), got {other}."
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_fields() {
        let input = json!({"s": "x", "e": "", "n": 5, "f": 3.0, "ns": "7", "neg": -1, "b": true, "bs": "false"});
        assert_eq!(required_str(&input, "s").unwrap(), "x");
        let err = required_str(&input, "missing").unwrap_err();
        assert!(err.is_error && err.content.contains("`missing` is required"));
        let err = required_str(&input, "e").unwrap_err();
        assert!(err.content.contains("`e` is required"), "{}", err.content);
        let err = required_str(&input, "n").unwrap_err();
        assert!(err.content.contains("`n` is required") && err.content.contains("number"));
        assert_eq!(required_string(&input, "e").unwrap(), "");
        assert_eq!(optional_str(&input, "e").unwrap(), None);
        assert!(optional_str(&input, "n").is_err());
        assert_eq!(optional_u64(&input, "n").unwrap(), Some(5));
        assert_eq!(optional_u64(&input, "f").unwrap(), Some(3));
        assert_eq!(optional_u64(&input, "ns").unwrap(), Some(7));
        assert_eq!(optional_u64(&input, "missing").unwrap(), None);
        assert!(optional_u64(&input, "neg").is_err());
        assert!(optional_u64(&input, "s").is_err());
        assert_eq!(optional_bool(&input, "b").unwrap(), Some(true));
        assert_eq!(optional_bool(&input, "bs").unwrap(), Some(false));
        assert!(optional_bool(&input, "n").is_err());
        // Input that is not an object at all.
        assert!(required_str(&json!("text"), "s").is_err());
    }
}
