//! How a durable store turns items into bytes and back.

use std::fmt;

/// A codec error: what went wrong, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "codec error: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

/// Turns items into bytes for a durable store (a file, a database) and back. A store
/// encodes on the pushing thread before the queue's lock is taken, and decodes when it reads
/// items back (at open, or on receive for a store that keeps no copy in memory).
pub trait Codec<T>: Send + Sync + 'static {
    /// The item's bytes.
    fn encode(&self, item: &T) -> Result<Vec<u8>, CodecError>;
    /// The item back from its bytes.
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError>;
}

/// Items that are bytes already (`Vec<u8>`), stored as they are.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesCodec;

impl Codec<Vec<u8>> for BytesCodec {
    fn encode(&self, item: &Vec<u8>) -> Result<Vec<u8>, CodecError> {
        Ok(item.clone())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(bytes.to_vec())
    }
}

/// Any `serde` item in [postcard](https://docs.rs/postcard)'s compact binary format
/// (feature `serde`).
///
/// Not for a job router's queue: its `Envelope`s take `EnvelopeCodec` (feature `router`),
/// which stores the kind first, where operators' filters read it. `Envelope` has no `serde`
/// form, so `.codec(PostcardCodec)` on a router's queue fails to compile with "the trait
/// `Serialize` is not implemented for `Envelope`".
#[cfg(feature = "serde")]
#[derive(Clone, Copy, Debug, Default)]
pub struct PostcardCodec;

#[cfg(feature = "serde")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec<T> for PostcardCodec {
    fn encode(&self, item: &T) -> Result<Vec<u8>, CodecError> {
        postcard::to_allocvec(item).map_err(|e| CodecError(e.to_string()))
    }
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        postcard::from_bytes(bytes).map_err(|e| CodecError(e.to_string()))
    }
}
