//! A proxy request's head: read up to the blank line (bounded), the target
//! taken from it, and for a plain HTTP request the head rewritten for the
//! origin server (origin-form, no proxy headers, `Connection: close`).

use tokio::io::{AsyncRead, AsyncReadExt as _};

use crate::domain::NetTarget;

/// The most bytes a request head may take.
pub const MAX_HEAD: usize = 64 * 1024;

/// What a tool asked its proxy for.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// `CONNECT host:port`: a tunnel (HTTPS, or anything over TLS).
    Tunnel { target: NetTarget },
    /// A plain HTTP request in absolute form: `head` is what goes to the
    /// origin server, `body_start` the bytes read past the head.
    Forward {
        target: NetTarget,
        method: String,
        head: Vec<u8>,
    },
}

impl Request {
    pub fn target(&self) -> &NetTarget {
        match self {
            Request::Tunnel { target } | Request::Forward { target, .. } => target,
        }
    }

    pub fn method(&self) -> &str {
        match self {
            Request::Tunnel { .. } => "CONNECT",
            Request::Forward { method, .. } => method,
        }
    }
}

/// Why a head was not a request the proxy serves; `status` is the HTTP
/// status it is answered with.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub why: String,
}

fn bad(why: impl Into<String>) -> Refusal {
    Refusal {
        status: 400,
        why: why.into(),
    }
}

/// Reads a head from `from`; returns the request and the bytes read past
/// its end (the start of a body, or of the TLS handshake).
pub async fn read<R: AsyncRead + Unpin>(from: &mut R) -> Result<(Request, Vec<u8>), Refusal> {
    let mut buf = Vec::with_capacity(4096);
    let end = loop {
        if let Some(at) = find_end(&buf) {
            break at;
        }
        if buf.len() >= MAX_HEAD {
            return Err(Refusal {
                status: 431,
                why: format!("the request head is longer than {MAX_HEAD} bytes"),
            });
        }
        let mut chunk = [0u8; 4096];
        let n = from
            .read(&mut chunk)
            .await
            .map_err(|e| bad(format!("reading the request: {e}")))?;
        if n == 0 {
            return Err(bad("the connection closed before the request's end"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let rest = buf.split_off(end);
    Ok((parse(&buf)?, rest))
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a whole head (ending with the blank line).
pub fn parse(head: &[u8]) -> Result<Request, Refusal> {
    let text = std::str::from_utf8(head).map_err(|_| bad("the request head is not text"))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not METHOD TARGET VERSION"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad("only HTTP/1.x is proxied"));
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad("the method is not an HTTP method"));
    }
    if method == "CONNECT" {
        let target = NetTarget::parse(uri, 443).map_err(bad)?;
        return Ok(Request::Tunnel { target });
    }
    let Some(rest) = uri.strip_prefix("http://") else {
        return Err(bad(if uri.starts_with("https://") {
            "an https:// URL goes through CONNECT (the tool sent it as plain HTTP)"
        } else {
            "this is agentd's network proxy: send it absolute http:// URLs or CONNECT"
        }));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err(bad("credentials in the URL are not proxied"));
    }
    let target = NetTarget::parse(authority, 80).map_err(bad)?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let mut out = format!("{method} {path} {version}\r\n");
    let mut host = false;
    for line in lines.take_while(|l| !l.is_empty()) {
        let name = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match name.as_str() {
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive" => continue,
            "host" => host = true,
            _ => {}
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !host {
        out.push_str(&format!("Host: {authority}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request::Forward {
        target,
        method: method.to_string(),
        head: out.into_bytes(),
    })
}

/// The response the proxy gives a refused or failed request.
pub fn answer(status: u16, why: &str) -> Vec<u8> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "Error",
    };
    let body = format!("agentd: {why}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_names_a_host_and_port() {
        let r = parse(b"CONNECT Example.org:8443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Request::Tunnel {
                target: NetTarget::new("example.org", 8443).unwrap()
            }
        );
        assert_eq!(r.method(), "CONNECT");
    }

    #[test]
    fn a_plain_request_goes_to_its_origin_in_origin_form_without_proxy_headers() {
        let r = parse(
            b"GET http://h.test:8080/a?b=1 HTTP/1.1\r\nHost: h.test:8080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        let Request::Forward { target, head, .. } = r else {
            panic!("not forwarded")
        };
        assert_eq!(target.to_string(), "h.test:8080");
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: h.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Request::Forward { head, .. } = parse(b"GET http://h.test HTTP/1.0\r\n\r\n").unwrap()
        else {
            panic!()
        };
        assert!(
            String::from_utf8(head)
                .unwrap()
                .starts_with("GET / HTTP/1.0\r\nHost: h.test\r\n")
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused_with_why() {
        for (head, says) in [
            (&b"GET / HTTP/1.1\r\n\r\n"[..], "absolute http://"),
            (b"GET https://x/ HTTP/1.1\r\n\r\n", "CONNECT"),
            (b"GET http://u:p@x/ HTTP/1.1\r\n\r\n", "credentials"),
            (b"CONNECT a b:1 HTTP/1.1\r\n\r\n", "METHOD TARGET VERSION"),
            (b"CONNECT x:99999 HTTP/1.1\r\n\r\n", "port"),
            (b"CONNECT \x1b[2J:443 HTTP/1.1\r\n\r\n", "host name"),
            (b"get http://x/ HTTP/1.1\r\n\r\n", "method"),
            (b"GET http://x/ SPDY/3\r\n\r\n", "HTTP/1.x"),
        ] {
            let e = parse(head).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(
                e.why.contains(says),
                "{:?}: {}",
                String::from_utf8_lossy(head),
                e.why
            );
        }
    }

    #[tokio::test]
    async fn the_head_is_read_to_its_end_and_what_follows_is_kept() {
        let mut input: &[u8] = b"CONNECT h:443 HTTP/1.1\r\n\r\n\x16\x03\x01";
        let (r, rest) = read(&mut input).await.unwrap();
        assert_eq!(r.target().port(), 443);
        assert_eq!(rest, b"\x16\x03\x01");
        let huge = vec![b'a'; MAX_HEAD + 10];
        let mut input: &[u8] = &huge;
        assert_eq!(read(&mut input).await.unwrap_err().status, 431);
        let mut cut: &[u8] = b"CONNECT h:443 HTTP/1.1\r\n";
        assert!(read(&mut cut).await.unwrap_err().why.contains("closed"));
    }
}
