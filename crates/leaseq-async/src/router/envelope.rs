//! The queue item of a router: a job's kind and its encoded args, in the very bytes a
//! durable store keeps.
//!
//! # Format
//!
//! ```text
//! byte 0        L, the kind's length in bytes (1..=255)
//! bytes 1..=L   the kind, UTF-8
//! bytes L+1..   the args, JSON (serde_json)
//! ```
//!
//! So a tool that reads a queue's rows (the `leaseq` CLI, SQL) tells the kind from the
//! first byte and the kind's own, with [`kind_of`], and reads the args as text.

use std::fmt;
use std::sync::Arc;

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

/// The args bytes of an envelope's payload (after its kind), if it is one.
fn args_of(payload: &[u8]) -> Option<&[u8]> {
    let kind = kind_of(payload)?;
    payload.get(1 + kind.len()..)
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
    /// A kind's name must be 1 to 255 bytes: a longer or empty one does not compile.
    pub fn new<J: JobKind>(job: &J) -> Result<Self, EnvelopeError> {
        const {
            assert!(
                !J::KIND.is_empty() && J::KIND.len() <= 255,
                "a JobKind's KIND must be 1 to 255 bytes long"
            )
        };
        let mut bytes = Vec::with_capacity(1 + J::KIND.len() + 64);
        bytes.push(J::KIND.len() as u8);
        bytes.extend_from_slice(J::KIND.as_bytes());
        serde_json::to_writer(&mut bytes, job).map_err(|e| EnvelopeError::Args {
            kind: J::KIND,
            error: e.to_string(),
        })?;
        Ok(Envelope {
            bytes: bytes.into(),
        })
    }

    /// An envelope of `kind` with `args` as they are (JSON text that `kind`'s handler can
    /// decode): for tools that push jobs they have no type for. Refuses a kind that is
    /// empty or longer than 255 bytes.
    pub fn from_parts(kind: &str, args: &[u8]) -> Result<Self, EnvelopeError> {
        let len = u8::try_from(kind.len())
            .ok()
            .filter(|&len| len > 0)
            .ok_or(EnvelopeError::KindLength { len: kind.len() })?;
        let mut bytes = Vec::with_capacity(1 + kind.len() + args.len());
        bytes.push(len);
        bytes.extend_from_slice(kind.as_bytes());
        bytes.extend_from_slice(args);
        Ok(Envelope {
            bytes: bytes.into(),
        })
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

    /// The args, encoded (JSON), or `None` if these bytes are not an envelope.
    pub fn args(&self) -> Option<&[u8]> {
        args_of(&self.bytes)
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
        let args = self.args().unwrap_or_default();
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

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind(), self.args()) {
            (Some(kind), Some(args)) => f
                .debug_struct("Envelope")
                .field("kind", &kind)
                .field("args", &String::from_utf8_lossy(args))
                .finish(),
            _ => f
                .debug_struct("Envelope")
                .field("not_an_envelope", &self.bytes.len())
                .finish(),
        }
    }
}

/// Why a job could not be put in, or taken out of, an [`Envelope`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// A kind name given at run time was empty or longer than 255 bytes.
    KindLength {
        /// Its length in bytes.
        len: usize,
    },
    /// The args did not encode, or did not decode as the kind's.
    Args {
        /// The job kind.
        kind: &'static str,
        /// The JSON error.
        error: String,
    },
    /// The envelope holds another kind (or is no envelope: `found` is `None`).
    WrongKind {
        /// The kind asked for.
        expected: &'static str,
        /// The kind it holds.
        found: Option<String>,
    },
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::KindLength { len } => {
                write!(f, "a job kind must be 1 to 255 bytes long, not {len}")
            }
            EnvelopeError::Args { kind, error } => {
                write!(f, "bad args for job kind `{kind}`: {error}")
            }
            EnvelopeError::WrongKind {
                expected,
                found: Some(found),
            } => write!(f, "expected a job of kind `{expected}`, found `{found}`"),
            EnvelopeError::WrongKind {
                expected,
                found: None,
            } => write!(
                f,
                "expected a job of kind `{expected}`, found bytes that are not a job envelope"
            ),
        }
    }
}

impl std::error::Error for EnvelopeError {}

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
