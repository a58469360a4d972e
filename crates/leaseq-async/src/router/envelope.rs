//! The queue item of a router: a job's kind and its encoded args, in the very bytes a
//! durable store keeps.
//!
//! # Format
//!
//! ```text
//! byte 0        L, the kind's length in bytes (1..=255)
//! bytes 1..=L   the kind, UTF-8
//! optionally, a trace block:
//!   byte L+1    0x01 (never the first byte of JSON text)
//!   byte L+2    N, the block's length
//!   N bytes     a W3C traceparent, ASCII (55 bytes: 00-<32 hex>-<16 hex>-<2 hex>)
//! the rest      the args, JSON (serde_json)
//! ```
//!
//! So a tool that reads a queue's rows (the `leaseq` CLI, SQL) tells the kind from the
//! first byte and the kind's own, with [`kind_of`], and reads the args as text
//! ([`args_of`]). A block that does not hold a valid `traceparent` (empty, say) is ignored;
//! one that runs past the end makes the bytes no envelope (no args).

use std::fmt;
use std::sync::Arc;

use crate::router::envelope_error::EnvelopeError;
use crate::router::traceparent::{is_traceparent, split_trace, traceparent_in, TRACE_MARK};
use crate::router::JobKind;

/// The kind of a stored payload (an [`Envelope`]'s bytes), or `None` if the payload is not
/// an envelope: empty, a zero length byte, shorter than its kind, or a kind that is not
/// UTF-8.
///
/// ```
/// use leaseq_async::router::kind_of;
///
/// assert_eq!(kind_of(b"\x05emailtrue"), Some("email"));
/// assert_eq!(kind_of(b"\x09email"), None); // shorter than its kind
/// assert_eq!(kind_of(b""), None);
/// ```
pub fn kind_of(payload: &[u8]) -> Option<&str> {
    let (&len, rest) = payload.split_first()?;
    let kind = rest.get(..usize::from(len)).filter(|k| !k.is_empty())?;
    std::str::from_utf8(kind).ok()
}

/// The args of a stored payload (the JSON after its kind and any trace block), or `None`
/// if the payload is not an envelope (see [`kind_of`], and a trace block cut short).
///
/// ```
/// use leaseq_async::router::args_of;
///
/// assert_eq!(args_of(b"\x05email{}"), Some(&b"{}"[..]));
/// assert_eq!(args_of(b"\x05email\x01\x00{}"), Some(&b"{}"[..])); // an empty trace block
/// assert_eq!(args_of(b"\x05email\x01\x09{}"), None); // a trace block cut short
/// ```
pub fn args_of(payload: &[u8]) -> Option<&[u8]> {
    Some(split_trace(after_kind(payload)?)?.1)
}

/// The W3C `traceparent` a stored payload carries, if it is an envelope with a trace block
/// holding a valid one (anything else in the block is ignored).
pub fn traceparent_of(payload: &[u8]) -> Option<&str> {
    traceparent_in(split_trace(after_kind(payload)?)?.0?)
}

/// The bytes after an envelope's kind, if it is one.
fn after_kind(payload: &[u8]) -> Option<&[u8]> {
    let kind = kind_of(payload)?;
    payload.get(1 + kind.len()..)
}

/// An envelope's bytes: the kind, a trace block if `traceparent` is given, then `args`
/// written by `write_args`. `kind` is 1 to 255 bytes (checked by the callers).
fn encode<E>(
    kind: &str,
    traceparent: Option<&str>,
    args_len: usize,
    write_args: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Arc<[u8]>, E> {
    let block = traceparent.map_or(0, |t| 2 + t.len());
    let mut bytes = Vec::with_capacity(1 + kind.len() + block + args_len);
    bytes.push(kind.len() as u8);
    bytes.extend_from_slice(kind.as_bytes());
    if let Some(t) = traceparent {
        bytes.extend_from_slice(&[TRACE_MARK, t.len() as u8]);
        bytes.extend_from_slice(t.as_bytes());
    }
    write_args(&mut bytes)?;
    Ok(bytes.into())
}

/// One job on a router's queue: its kind and its args, encoded (see the
/// [router module docs](crate::router) for the bytes).
///
/// Cheap to clone (the bytes are shared), so the in-memory store's copy per delivery costs
/// a reference count. Any bytes make an envelope ([`from_bytes`](Self::from_bytes), as a
/// store reads its rows back): a router dead-letters one that is not a job, rather than a
/// store refusing to open.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Envelope {
    bytes: Arc<[u8]>,
}

impl Envelope {
    /// The envelope of `job`: its [`KIND`](JobKind::KIND) and its args as JSON. Fails only
    /// if `job`'s `Serialize` does (a map with keys that are not strings, say).
    ///
    /// With the feature `opentelemetry`, it also carries the W3C `traceparent` of the
    /// current `tracing` span's OpenTelemetry context, when that context is valid (a span
    /// of a subscriber with a `tracing-opentelemetry` layer): the router makes it the
    /// parent of the handler's span. Without the feature, or outside such a span, it
    /// carries none ([`with_traceparent`](Self::with_traceparent) sets one).
    ///
    /// A kind's name must be 1 to 255 bytes: a longer or empty one does not compile.
    pub fn new<J: JobKind>(job: &J) -> Result<Self, EnvelopeError> {
        const {
            assert!(
                !J::KIND.is_empty() && J::KIND.len() <= 255,
                "a JobKind's KIND must be 1 to 255 bytes long"
            )
        };
        #[cfg(feature = "opentelemetry")]
        let traceparent = crate::router::trace::current_traceparent();
        #[cfg(not(feature = "opentelemetry"))]
        let traceparent: Option<String> = None;
        let bytes = encode(J::KIND, traceparent.as_deref(), 64, |bytes| {
            serde_json::to_writer(bytes, job).map_err(|e| EnvelopeError::Args {
                kind: J::KIND,
                error: e.to_string(),
            })
        })?;
        Ok(Envelope { bytes })
    }

    /// An envelope of `kind` with `args` as they are (JSON text that `kind`'s handler can
    /// decode): for tools that push jobs they have no type for. Refuses a kind that is
    /// empty or longer than 255 bytes.
    pub fn from_parts(kind: &str, args: &[u8]) -> Result<Self, EnvelopeError> {
        if kind.is_empty() || kind.len() > 255 {
            return Err(EnvelopeError::KindLength { len: kind.len() });
        }
        let bytes = encode(kind, None, args.len(), |bytes| {
            bytes.extend_from_slice(args);
            Ok::<_, EnvelopeError>(())
        })?;
        Ok(Envelope { bytes })
    }

    /// This envelope carrying `traceparent` (a W3C Trace Context `traceparent`, such as
    /// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`) in place of any it
    /// carried: for producers that have the context but not OpenTelemetry in this process
    /// (another language's, a proxy's). Refuses a `traceparent` that is not one
    /// ([`EnvelopeError::Traceparent`]) and bytes that are not an envelope
    /// ([`EnvelopeError::NotAnEnvelope`]).
    ///
    /// ```
    /// use leaseq_async::router::Envelope;
    ///
    /// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let e = Envelope::from_parts("email", b"{}").unwrap().with_traceparent(tp).unwrap();
    /// assert_eq!((e.kind(), e.args(), e.traceparent()), (Some("email"), Some(&b"{}"[..]), Some(tp)));
    /// assert!(Envelope::from_parts("email", b"{}").unwrap().with_traceparent("00-x").is_err());
    /// ```
    pub fn with_traceparent(self, traceparent: &str) -> Result<Self, EnvelopeError> {
        if !is_traceparent(traceparent) {
            return Err(EnvelopeError::Traceparent {
                value: traceparent.chars().take(64).collect(),
            });
        }
        let (Some(kind), Some(args)) = (self.kind(), self.args()) else {
            return Err(EnvelopeError::NotAnEnvelope);
        };
        let bytes = encode(kind, Some(traceparent), args.len(), |bytes| {
            bytes.extend_from_slice(args);
            Ok::<_, EnvelopeError>(())
        })?;
        Ok(Envelope { bytes })
    }

    /// The envelope stored as `bytes`, whatever they are (see [`kind`](Self::kind)).
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Self {
        Envelope {
            bytes: bytes.into(),
        }
    }

    /// The job's kind, or `None` if these bytes are not an envelope (see [`kind_of`]).
    pub fn kind(&self) -> Option<&str> {
        kind_of(&self.bytes)
    }

    /// The args, encoded (JSON), or `None` if these bytes are not an envelope (see
    /// [`args_of`]).
    pub fn args(&self) -> Option<&[u8]> {
        args_of(&self.bytes)
    }

    /// The W3C `traceparent` of the span that pushed this job, if it carries a valid one
    /// (see [`new`](Self::new) and [`with_traceparent`](Self::with_traceparent)).
    pub fn traceparent(&self) -> Option<&str> {
        traceparent_of(&self.bytes)
    }

    /// The args decoded as `J`'s. An envelope of another kind is refused too.
    pub fn decode<J: JobKind>(&self) -> Result<J, EnvelopeError> {
        match self.kind() {
            Some(kind) if kind == J::KIND => {}
            found => {
                return Err(EnvelopeError::WrongKind {
                    expected: J::KIND,
                    found: found.map(str::to_owned),
                })
            }
        }
        let args = self.args().ok_or(EnvelopeError::Args {
            kind: J::KIND,
            error: "a trace block runs past the end of the envelope".into(),
        })?;
        serde_json::from_slice(args).map_err(|e| EnvelopeError::Args {
            kind: J::KIND,
            error: e.to_string(),
        })
    }

    /// The stored bytes: what [`EnvelopeCodec`](crate::router::EnvelopeCodec) writes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// An envelope names its kind for [`DeadFilter::kind`](crate::DeadFilter::kind), as its
/// stored bytes do (the filter on Postgres reads them in SQL).
impl crate::ItemKind for Envelope {
    fn item_kind(&self) -> Option<&str> {
        self.kind()
    }
}

/// Raw bytes in the envelope format name their kind as an envelope's do (here rather than
/// beside [`ItemKind`](crate::ItemKind), so that the queue layer does not import the router).
impl crate::ItemKind for Vec<u8> {
    fn item_kind(&self) -> Option<&str> {
        kind_of(self)
    }
}

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind(), self.args()) {
            (Some(kind), Some(args)) => {
                let mut d = f.debug_struct("Envelope");
                d.field("kind", &kind);
                if let Some(traceparent) = self.traceparent() {
                    d.field("traceparent", &traceparent);
                }
                d.field("args", &String::from_utf8_lossy(args)).finish()
            }
            _ => f
                .debug_struct("Envelope")
                .field("not_an_envelope", &self.bytes.len())
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Email {
        to: String,
    }

    impl JobKind for Email {
        const KIND: &'static str = "email";
    }

    #[test]
    fn the_bytes_are_the_length_the_kind_then_json_args() {
        let e = Envelope::new(&Email { to: "a@b".into() }).unwrap();
        assert_eq!(e.as_bytes(), b"\x05email{\"to\":\"a@b\"}");
        assert_eq!(
            (e.kind(), e.args()),
            (Some("email"), Some(&b"{\"to\":\"a@b\"}"[..]))
        );
        assert_eq!(e.decode::<Email>().unwrap(), Email { to: "a@b".into() });
        let same = Envelope::from_parts("email", b"{\"to\":\"a@b\"}").unwrap();
        assert_eq!(same, e);
    }

    #[test]
    fn bytes_that_are_not_an_envelope_have_no_kind() {
        for bad in [&b""[..], b"\x00", b"\x00abc", b"\x03ab", b"\x02\xff\xfe{}"] {
            let e = Envelope::from_bytes(bad.to_vec());
            assert_eq!((e.kind(), e.args()), (None, None), "{bad:?}");
            assert!(matches!(
                e.decode::<Email>(),
                Err(EnvelopeError::WrongKind { found: None, .. })
            ));
        }
        // A kind and nothing after it: an envelope with empty args.
        assert_eq!(kind_of(b"\x01x"), Some("x"));
        assert_eq!(args_of(b"\x01x"), Some(&b""[..]));
    }

    #[test]
    fn kinds_of_255_bytes_fit_and_longer_ones_are_refused() {
        let long = "k".repeat(255);
        let e = Envelope::from_parts(&long, b"1").unwrap();
        assert_eq!(e.kind(), Some(long.as_str()));
        assert_eq!(e.as_bytes()[0], 255);
        let longer = "k".repeat(256);
        assert_eq!(
            Envelope::from_parts(&longer, b"1"),
            Err(EnvelopeError::KindLength { len: 256 })
        );
        assert_eq!(
            Envelope::from_parts("", b"1"),
            Err(EnvelopeError::KindLength { len: 0 })
        );
    }

    #[test]
    fn another_kind_or_bad_args_do_not_decode() {
        let other = Envelope::from_parts("sms", b"{\"to\":\"a\"}").unwrap();
        assert_eq!(
            other.decode::<Email>().unwrap_err().to_string(),
            "expected a job of kind `email`, found `sms`"
        );
        let bad = Envelope::from_parts("email", b"{\"to\":7}").unwrap();
        let err = bad.decode::<Email>().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("bad args for job kind `email`: invalid type"),
            "{err}"
        );
    }
}
