//! `agentd.v1.ListAgentsResponse`, written by hand instead of generated
//! (`build.rs` maps the message here) so that the daemon can answer with
//! agents it encoded earlier: a listing of a thousand agents converted and
//! encoded every record each time, most of the daemon's work for it. The
//! bytes on the wire are the generated type's; a test holds this type to
//! the proto's definition of the message.

use prost::bytes::{Buf, BufMut, Bytes};
use prost::encoding::{self, DecodeContext, WireType};
use prost::{DecodeError, Message};

use crate::proto::Agent;

/// The `agents` field's number in the proto.
const AGENTS: u32 = 1;

/// A listing of agents. Decoded, every agent is in `agents`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListAgentsResponse {
    pub agents: Vec<Agent>,
    /// Agents already encoded (each an `Agent` message's bytes), sent after
    /// `agents`.
    encoded: Vec<Bytes>,
}

impl ListAgentsResponse {
    /// A listing of agents encoded ahead, in this order.
    pub fn from_encoded(encoded: Vec<Bytes>) -> ListAgentsResponse {
        ListAgentsResponse {
            agents: Vec::new(),
            encoded,
        }
    }
}

impl Message for ListAgentsResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encoding::message::encode_repeated(AGENTS, &self.agents, buf);
        for agent in &self.encoded {
            encoding::encode_key(AGENTS, WireType::LengthDelimited, buf);
            encoding::encode_varint(agent.len() as u64, buf);
            buf.put_slice(agent);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            AGENTS => encoding::message::merge_repeated(wire_type, &mut self.agents, buf, ctx),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        encoding::message::encoded_len_repeated(AGENTS, &self.agents)
            + self
                .encoded
                .iter()
                .map(|a| {
                    encoding::key_len(AGENTS)
                        + encoding::encoded_len_varint(a.len() as u64)
                        + a.len()
                })
                .sum::<usize>()
    }

    fn clear(&mut self) {
        self.agents.clear();
        self.encoded.clear();
    }
}

#[cfg(test)]
mod tests {
    use prost_types::field_descriptor_proto::{Label, Type};

    use super::*;
    use crate::proto::FILE_DESCRIPTOR_SET;

    fn agent(n: u32) -> Agent {
        Agent {
            id: format!("id-{n}"),
            name: "x".repeat(n as usize * 50),
            turns: n,
            ..Default::default()
        }
    }

    #[test]
    fn this_type_is_the_message_the_proto_defines() {
        let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        let message = set
            .file
            .iter()
            .flat_map(|f| &f.message_type)
            .find(|m| m.name() == "ListAgentsResponse")
            .expect("the proto defines ListAgentsResponse");
        let fields: Vec<_> = message
            .field
            .iter()
            .map(|f| (f.name(), f.number(), f.label(), f.r#type(), f.type_name()))
            .collect();
        assert_eq!(
            fields,
            [(
                "agents",
                AGENTS as i32,
                Label::Repeated,
                Type::Message,
                ".agentd.v1.Agent"
            )],
            "a change to the message needs the same change here"
        );
    }

    #[test]
    fn encoded_ahead_or_not_the_bytes_are_the_same_and_decode_back() {
        // Sizes on both sides of the one-byte length varint.
        let agents: Vec<Agent> = (0..6).map(agent).collect();
        let plain = ListAgentsResponse {
            agents: agents.clone(),
            encoded: Vec::new(),
        };
        let ahead = ListAgentsResponse::from_encoded(
            agents
                .iter()
                .map(|a| Bytes::from(a.encode_to_vec()))
                .collect(),
        );
        let bytes = plain.encode_to_vec();
        assert_eq!(ahead.encode_to_vec(), bytes);
        assert_eq!(ahead.encoded_len(), bytes.len());
        let decoded = ListAgentsResponse::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded.agents, agents);
        assert_eq!(ListAgentsResponse::decode(&[][..]).unwrap().agents, []);
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let mut bytes = ListAgentsResponse {
            agents: vec![agent(1)],
            encoded: Vec::new(),
        }
        .encode_to_vec();
        // Field 7, a varint: from a newer daemon.
        encoding::encode_key(7, WireType::Varint, &mut bytes);
        encoding::encode_varint(42, &mut bytes);
        let decoded = ListAgentsResponse::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded.agents, [agent(1)]);
    }
}
