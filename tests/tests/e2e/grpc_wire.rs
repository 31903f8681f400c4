//! gRPC exactly as other languages' stock clients put it on the wire: the
//! `:authority` they send over a Unix socket. grpc-java sends the socket's
//! path, Python grpcio (gRPC core ≥ 1.57) its %-encoding, grpc-go and
//! grpc-js `localhost`. Stock h2 resets the first two with PROTOCOL_ERROR;
//! agentd carries a patched h2 (third_party/h2/PATCH.md), and these tests
//! fail if the patch is dropped or silently unused.
//!
//! The client here is hand-written HTTP/2 (RFC 9113) with literal HPACK
//! fields (RFC 7541), because no Rust client lets a request carry an
//! authority that is not a valid URI authority.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use agentd_e2e::Env;
use agentd_shared::proto as pb;
use prost::Message;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1).
fn hpack_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header field as a literal without indexing, new name, no Huffman
/// coding (RFC 7541 §6.2.2).
fn hpack_literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    hpack_int(out, 0x00, 7, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 0x00, 7, value.len());
    out.extend_from_slice(value.as_bytes());
}

/// What the server did with one unary call.
enum Outcome {
    /// The response message's bytes (gRPC framing removed).
    Answered(Vec<u8>),
    Reset(u32),
    GoAway(u32),
}

/// Calls `GetStatus` on stream 1 with the given `:authority`.
fn get_status_with_authority(socket: &std::path::Path, authority: &str) -> Outcome {
    let mut conn = UnixStream::connect(socket).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut headers = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/agentd.v1.AgentService/GetStatus"),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        hpack_literal(&mut headers, name, value);
    }
    let request = pb::GetStatusRequest::default().encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&(request.len() as u32).to_be_bytes());
    body.extend_from_slice(&request);

    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(frame(HEADERS, END_HEADERS, 1, &headers));
    out.extend(frame(DATA, END_STREAM, 1, &body));
    conn.write_all(&out).expect("send the request");

    let mut answer = Vec::new();
    loop {
        let mut head = [0u8; 9];
        conn.read_exact(&mut head)
            .expect("the server answers or resets");
        let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        conn.read_exact(&mut payload).expect("frame payload");
        match kind {
            SETTINGS if flags & ACK == 0 => {
                conn.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap();
            }
            RST_STREAM if stream == 1 => {
                return Outcome::Reset(u32::from_be_bytes(payload[..4].try_into().unwrap()));
            }
            GOAWAY => {
                return Outcome::GoAway(u32::from_be_bytes(payload[4..8].try_into().unwrap()));
            }
            DATA if stream == 1 => {
                answer.extend_from_slice(&payload);
                if flags & END_STREAM != 0 {
                    break;
                }
            }
            // Trailers end the call.
            HEADERS if stream == 1 && flags & END_STREAM != 0 => break,
            _ => {}
        }
    }
    assert!(answer.len() >= 5, "no gRPC message in the answer");
    let len = u32::from_be_bytes(answer[1..5].try_into().unwrap()) as usize;
    Outcome::Answered(answer[5..5 + len].to_vec())
}

fn assert_served(env: &Env, authority: &str, who: &str) {
    match get_status_with_authority(&env.socket(), authority) {
        Outcome::Answered(bytes) => {
            let status = pb::DaemonStatus::decode(bytes.as_slice()).expect("a DaemonStatus");
            assert_eq!(status.version, agentd_shared::VERSION, "{who}");
        }
        Outcome::Reset(code) => panic!(
            "{who}'s request (:authority {authority:?}) was reset with error code {code} \
             (PROTOCOL_ERROR is 1: is the h2 patch in third_party/h2 still applied?)"
        ),
        Outcome::GoAway(code) => {
            panic!("{who}'s request (:authority {authority:?}) ended the connection: GOAWAY {code}")
        }
    }
}

#[test]
fn the_socket_path_as_authority_is_served_as_grpc_java_sends_it() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let path = env.socket().display().to_string();
    assert_served(&env, &path, "grpc-java");
}

#[test]
fn a_percent_encoded_socket_path_as_authority_is_served_as_python_grpcio_sends_it() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let encoded = env.socket().display().to_string().replace('/', "%2F");
    assert_served(&env, &encoded, "grpcio");
    // And the ordinary authorities keep working on the same daemon.
    assert_served(&env, "localhost", "grpc-go");
    assert_served(&env, "localhost:50051", "a TCP-minded client");
}
