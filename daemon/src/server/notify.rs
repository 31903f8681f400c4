//! Telling the service manager (or agentctl's autostart) how the daemon
//! is doing: `READY=1`, and `RELOADING=1` … `READY=1` around a reload, as
//! datagrams to `$NOTIFY_SOCKET` (sd_notify(3)). The variable is taken out
//! of the environment at start, so that no tool process inherits it, and
//! kept here for the notifications that come later.

use std::ffi::OsString;
use std::os::unix::net::UnixDatagram;

/// Where notifications go; nowhere when the daemon was not asked for them.
#[derive(Debug, Default)]
pub struct Notifier {
    target: Option<OsString>,
}

impl Notifier {
    /// Takes `NOTIFY_SOCKET` out of the environment. Call from main before
    /// any thread exists.
    pub fn take() -> Notifier {
        let target = std::env::var_os("NOTIFY_SOCKET").filter(|v| !v.is_empty());
        // SAFETY: single-threaded at this point (see above).
        #[allow(unsafe_code)]
        unsafe {
            std::env::remove_var("NOTIFY_SOCKET")
        };
        Notifier { target }
    }

    fn send(&self, message: &str) {
        let Some(target) = &self.target else {
            return;
        };
        let sent = UnixDatagram::unbound().and_then(|socket| {
            let bytes = target.as_encoded_bytes();
            if let Some(name) = bytes.strip_prefix(b"@") {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                socket.send_to_addr(message.as_bytes(), &addr)
            } else {
                socket.send_to(message.as_bytes(), target)
            }
        });
        if let Err(e) = sent {
            tracing::warn!(error = %e, "cannot notify the service manager");
        }
    }

    pub fn ready(&self) {
        self.send("READY=1\n");
    }

    /// A reload begins (`READY` ends it); systemd wants the monotonic time.
    pub fn reloading(&self) {
        match sd_notify::NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&format!("RELOADING=1\n{now}\n")),
            Err(_) => self.send("RELOADING=1\n"),
        }
    }
}
