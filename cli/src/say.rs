//! `say!` and `say_err!`: `println!` and `eprintln!` for a line that may
//! quote anyone's text — a server's or a tool's name, a path, a note or an
//! error the daemon passes on. The formatted line is printed made visible
//! (`agentd_shared::visible::text`), so no part of it can instruct the
//! terminal. agentctl's own colours are never formatted through these.

/// `println!`, the line made visible.
macro_rules! say {
    () => {
        println!()
    };
    ($($arg:tt)*) => {
        println!("{}", agentd_shared::visible::text(&format!($($arg)*)))
    };
}

/// `eprintln!`, the line made visible.
macro_rules! say_err {
    () => {
        eprintln!()
    };
    ($($arg:tt)*) => {
        eprintln!("{}", agentd_shared::visible::text(&format!($($arg)*)))
    };
}
