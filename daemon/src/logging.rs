//! The daemon's log: plain text on stderr (never colour codes), filtered
//! by `RUST_LOG` (default info). Under journald (`JOURNAL_STREAM` set, as
//! systemd sets it for a service's stderr) each line starts with its
//! syslog priority, `<3>` for an error down to `<7>` for debug, which the
//! journal reads as the entry's priority (`journalctl -p err` works) and
//! removes; the journal adds its own timestamps.

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{DefaultFields, Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// syslog(3) priority of a level.
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// The default line format, after a `<N>` priority prefix.
struct WithPriority(Format<Full, ()>);

impl<S, N> FormatEvent<S, N> for WithPriority
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        let format = Format::default().without_time().with_ansi(false);
        builder
            .fmt_fields(DefaultFields::new())
            .event_format(WithPriority(format))
            .init();
    } else {
        builder.init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_syslog_priorities() {
        assert_eq!(priority(&Level::ERROR), 3);
        assert_eq!(priority(&Level::WARN), 4);
        assert_eq!(priority(&Level::INFO), 6);
        assert_eq!(priority(&Level::DEBUG), 7);
    }
}
