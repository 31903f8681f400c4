//! A shell command as permission rules see it (DESIGN §24): split at its
//! operators (`&&`, `||`, `;`, `|`, `&`, newlines, subshell parentheses)
//! into simple commands, each with the wrappers people put in front
//! (`timeout`, `nice`, `nohup`, `env VAR=…`, `xargs`, `sudo`, leading
//! `VAR=…` assignments) looked through. What this reader cannot take apart
//! safely — command substitution (`$(…)`, backquotes), process substitution,
//! an unclosed quote, a here-document, `eval`/`exec`-style indirection — is
//! `Unparsed`: a rule may then ask, never allow.

/// A command line, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The simple commands, each as its words joined by one space, wrappers
    /// removed.
    Commands(Vec<String>),
    /// It cannot be taken apart safely (why).
    Unparsed(&'static str),
}

/// Splits `line` into its simple commands' words.
fn words_of(line: &str) -> Result<Vec<Vec<String>>, &'static str> {
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, commands: &mut Vec<Vec<String>>| {
        if *in_word {
            if let Some(last) = commands.last_mut() {
                last.push(std::mem::take(word));
            }
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => word.push(x),
                        None => return Err("an unclosed quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x) => word.push(x),
                            None => return Err("an unclosed quote"),
                        },
                        Some('$') if chars.peek() == Some(&'(') => {
                            return Err("command substitution");
                        }
                        Some('`') => return Err("command substitution"),
                        Some(x) => word.push(x),
                        None => return Err("an unclosed quote"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(x) => word.push(x),
                }
            }
            '`' => return Err("command substitution"),
            '$' if chars.peek() == Some(&'(') => return Err("command substitution"),
            '<' | '>' if chars.peek() == Some(&'(') => return Err("process substitution"),
            '<' if chars.peek() == Some(&'<') => return Err("a here-document"),
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut commands),
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut word, &mut in_word, &mut commands);
                // `&&`, `||`, `|&`, `;;`: one operator.
                while matches!(chars.peek(), Some('&' | '|' | ';')) {
                    chars.next();
                }
                if commands.last().is_some_and(|c| !c.is_empty()) {
                    commands.push(Vec::new());
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut commands);
    commands.retain(|c| !c.is_empty());
    Ok(commands)
}

/// Whether `word` is a `NAME=value` assignment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The words of one simple command with its wrappers looked through.
fn unwrapped(mut words: &[String]) -> Result<&[String], &'static str> {
    loop {
        while words.first().is_some_and(|w| is_assignment(w)) {
            words = &words[1..];
        }
        let Some(first) = words.first() else {
            return Ok(words);
        };
        let name = first.rsplit('/').next().unwrap_or(first);
        let rest = &words[1..];
        words = match name {
            "nohup" | "command" | "builtin" | "exec" => rest,
            "nice" | "sudo" | "xargs" | "env" | "timeout" => skip_options(name, rest),
            "eval" => return Err("a command line built by eval"),
            "sh" | "bash" | "zsh" | "dash"
                if rest
                    .iter()
                    .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c')) =>
            {
                return Err("a command line run by a shell (sh -c)");
            }
            _ => return Ok(words),
        };
    }
}

/// `rest` after `name`'s own options (and a `timeout`'s duration).
fn skip_options<'a>(name: &str, mut rest: &'a [String]) -> &'a [String] {
    // Options that take a value as the next word.
    let takes_value: &[&str] = match name {
        "nice" => &["-n"],
        "sudo" => &["-u", "-g", "-C", "-D", "-p", "-r", "-t", "-U", "-h"],
        "xargs" => &["-n", "-P", "-L", "-s", "-I", "-d", "-E", "-a"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "env" => &["-u", "-C", "--unset", "--chdir", "-S"],
        _ => &[],
    };
    while let Some(w) = rest.first() {
        if w == "--" {
            rest = &rest[1..];
            break;
        }
        if name == "env" && is_assignment(w) {
            rest = &rest[1..];
            continue;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let value = takes_value.contains(&w.as_str());
        rest = &rest[if value { 2.min(rest.len()) } else { 1 }..];
    }
    if name == "timeout" && !rest.is_empty() {
        rest = &rest[1..];
    }
    rest
}

/// `line` taken apart into simple commands, wrappers looked through.
pub fn parse(line: &str) -> Parsed {
    let commands = match words_of(line) {
        Ok(c) => c,
        Err(why) => return Parsed::Unparsed(why),
    };
    let mut out = Vec::with_capacity(commands.len());
    for words in &commands {
        match unwrapped(words) {
            Ok([]) => {}
            Ok(w) => out.push(w.join(" ")),
            Err(why) => return Parsed::Unparsed(why),
        }
    }
    if out.is_empty() {
        return Parsed::Unparsed("no command");
    }
    Parsed::Commands(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(line: &str) -> Vec<String> {
        match parse(line) {
            Parsed::Commands(c) => c,
            Parsed::Unparsed(why) => panic!("{line}: {why}"),
        }
    }

    #[test]
    fn compound_commands_are_split_at_every_operator() {
        assert_eq!(
            cmds("npm test && git push || echo 'a; b' ; ls | wc -l & (cd x; make)"),
            [
                "npm test",
                "git push",
                "echo a; b",
                "ls",
                "wc -l",
                "cd x",
                "make"
            ]
        );
        assert_eq!(cmds("a\nb"), ["a", "b"]);
    }

    #[test]
    fn wrappers_and_assignments_are_looked_through() {
        assert_eq!(cmds("timeout 30 npm test"), ["npm test"]);
        assert_eq!(cmds("timeout -s KILL 5m rm -rf x"), ["rm -rf x"]);
        assert_eq!(cmds("nice -n 10 nohup make"), ["make"]);
        assert_eq!(cmds("env FOO=1 BAR=2 npm run build"), ["npm run build"]);
        assert_eq!(cmds("FOO=1 npm run build"), ["npm run build"]);
        assert_eq!(cmds("sudo -u root rm x"), ["rm x"]);
        assert_eq!(cmds("find . | xargs -n 1 rm"), ["find .", "rm"]);
        assert_eq!(cmds("/usr/bin/env rm x"), ["rm x"]);
        assert_eq!(cmds("exec rm x"), ["rm x"]);
    }

    #[test]
    fn what_cannot_be_taken_apart_safely_is_said_so() {
        for line in [
            "echo $(rm -rf ~)",
            "echo `id`",
            "echo \"$(id)\"",
            "diff <(ls a) <(ls b)",
            "cat <<EOF\nx\nEOF",
            "echo 'unclosed",
            "eval rm x",
            "sh -ec 'rm x'",
            "bash -c 'rm -rf /'",
            "",
        ] {
            assert!(matches!(parse(line), Parsed::Unparsed(_)), "{line:?}");
        }
        // A script run by a shell is the script's name.
        assert_eq!(cmds("bash build.sh"), ["bash build.sh"]);
    }
}
