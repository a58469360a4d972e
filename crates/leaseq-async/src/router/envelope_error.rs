//! [`EnvelopeError`]: why a job could not be put in, or taken out of, an envelope.

use std::fmt;

/// Why a job could not be put in, or taken out of, an [`Envelope`](crate::Envelope).
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
    /// A `traceparent` given to
    /// [`Envelope::with_traceparent`](crate::Envelope::with_traceparent) is not a W3C one.
    Traceparent {
        /// What was given (its first 64 characters).
        value: String,
    },
    /// [`Envelope::with_traceparent`](crate::Envelope::with_traceparent) was given bytes that are not an envelope.
    NotAnEnvelope,
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
            EnvelopeError::Traceparent { value } => {
                write!(f, "not a W3C traceparent: {value:?}")
            }
            EnvelopeError::NotAnEnvelope => {
                write!(
                    f,
                    "bytes that are not a job envelope carry no trace context"
                )
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
