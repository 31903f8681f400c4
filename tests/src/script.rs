//! Building `scripted:` model scripts in tests.

use serde_json::{Value, json};

pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

pub fn tool(name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "name": name, "input": input})
}

pub fn turn(content: Vec<Value>) -> Value {
    json!({"content": content})
}

pub fn delayed(delay_ms: u64, content: Vec<Value>) -> Value {
    json!({"delay_ms": delay_ms, "content": content})
}

pub fn script(turns: Vec<Value>) -> Value {
    json!({"turns": turns})
}

/// A model running each command as one Bash call, then saying "done".
pub fn bash_each(commands: &[String]) -> Value {
    let mut turns: Vec<Value> = commands
        .iter()
        .map(|c| turn(vec![tool("Bash", json!({"command": c}))]))
        .collect();
    turns.push(turn(vec![text("done")]));
    script(turns)
}
