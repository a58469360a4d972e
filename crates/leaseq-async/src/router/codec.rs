//! How a durable store keeps an [`Envelope`]: its bytes as they are.

use crate::codec::{Codec, CodecError};
use crate::router::Envelope;

/// The [`Codec`] of a router's queue on a durable store (SQLite, Postgres): an envelope's
/// bytes stored as they are (its kind first, see [`Envelope`]), read back as they are.
/// Decoding never fails: a row that is not an envelope opens as one without a kind, and
/// the router dead-letters it when it comes up (a queue with a foreign row still opens).
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvelopeCodec;

impl Codec<Envelope> for EnvelopeCodec {
    fn encode(&self, item: &Envelope) -> Result<Vec<u8>, CodecError> {
        Ok(item.as_bytes().to_vec())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Envelope, CodecError> {
        Ok(Envelope::from_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_bytes_are_the_envelopes() {
        let e = Envelope::from_parts("resize", b"[640,480]").unwrap();
        let stored = EnvelopeCodec.encode(&e).unwrap();
        assert_eq!(stored, b"\x06resize[640,480]");
        assert_eq!(EnvelopeCodec.decode(&stored).unwrap(), e);
        let foreign = EnvelopeCodec.decode(b"").unwrap();
        assert_eq!(foreign.kind(), None);
    }
}
