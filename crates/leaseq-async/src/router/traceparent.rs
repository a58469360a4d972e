//! The trace block of an envelope: where it sits in the stored bytes, and the W3C
//! `traceparent` it holds.
//!
//! After the kind, an envelope may hold a trace block: [`TRACE_MARK`] (a byte that never
//! starts JSON text, so an envelope without a block reads as before), a length byte N,
//! then N bytes, a W3C Trace Context `traceparent` such as
//! `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01` (55 ASCII bytes).

/// The byte that opens a trace block after the kind: a control character, which JSON text
/// never starts with (it may start with whitespace, `{`, `[`, `"`, a digit, `-`, `t`, `f`
/// or `n`).
pub(crate) const TRACE_MARK: u8 = 0x01;

/// The length of a `traceparent` of version `00`.
pub(crate) const TRACEPARENT_LEN: usize = 55;

/// The bytes after an envelope's kind split into its trace block (`None` without one) and
/// its args; `None` if a trace block is opened and runs past the end (no envelope).
pub(crate) fn split_trace(after_kind: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    match after_kind.split_first() {
        Some((&TRACE_MARK, block)) => {
            let (&len, rest) = block.split_first()?;
            let len = usize::from(len);
            Some((Some(rest.get(..len)?), rest.get(len..)?))
        }
        _ => Some((None, after_kind)),
    }
}

/// Whether `s` is a W3C `traceparent` this crate carries: `VV-<32 hex>-<16 hex>-<2 hex>`,
/// lowercase, the version not `ff`, the trace id and parent id not all zeros (the
/// specification's invalid values), 55 bytes long (the form of version `00`; a later
/// version's extra fields are not kept).
pub(crate) fn is_traceparent(s: &str) -> bool {
    let b = s.as_bytes();
    let hex =
        |r: std::ops::Range<usize>| b[r].iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let nonzero = |r: std::ops::Range<usize>| b[r].iter().any(|&c| c != b'0');
    b.len() == TRACEPARENT_LEN
        && (b[2], b[35], b[52]) == (b'-', b'-', b'-')
        && hex(0..2)
        && &b[0..2] != b"ff"
        && hex(3..35)
        && nonzero(3..35)
        && hex(36..52)
        && nonzero(36..52)
        && hex(53..55)
}

/// The `traceparent` in a trace block, if it holds a valid one (else the block is ignored).
pub(crate) fn traceparent_in(block: &[u8]) -> Option<&str> {
    std::str::from_utf8(block)
        .ok()
        .filter(|s| is_traceparent(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::{kind_of, Envelope, EnvelopeError, JobKind};

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Email {
        to: String,
    }

    impl JobKind for Email {
        const KIND: &'static str = "email";
    }

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_w3c_example_is_a_traceparent_and_its_invalid_variants_are_not() {
        assert!(is_traceparent(GOOD));
        assert!(is_traceparent(&GOOD.replace("-01", "-00")));
        for bad in [
            "",
            "00",
            // Upper case, a version ff, zero ids, a missing dash, one byte short or long.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ] {
            assert!(!is_traceparent(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_block_is_split_from_the_args_and_a_truncated_one_is_no_envelope() {
        assert_eq!(split_trace(b"{}"), Some((None, &b"{}"[..])));
        assert_eq!(split_trace(b""), Some((None, &b""[..])));
        assert_eq!(
            split_trace(b"\x01\x03abc[1]"),
            Some((Some(&b"abc"[..]), &b"[1]"[..]))
        );
        assert_eq!(
            split_trace(b"\x01\x00{}"),
            Some((Some(&b""[..]), &b"{}"[..]))
        );
        for cut in [&b"\x01"[..], b"\x01\x05abc"] {
            assert_eq!(split_trace(cut), None, "{cut:?}");
        }
        assert_eq!(traceparent_in(GOOD.as_bytes()), Some(GOOD));
        assert_eq!(traceparent_in(b"abc"), None);
        assert_eq!(traceparent_in(b"\xff\xfe"), None);
    }

    #[test]
    fn a_trace_block_sits_between_the_kind_and_the_args() {
        let e = Envelope::new(&Email { to: "a@b".into() })
            .unwrap()
            .with_traceparent(GOOD)
            .unwrap();
        let mut expected = b"\x05email\x01\x37".to_vec();
        expected.extend_from_slice(GOOD.as_bytes());
        expected.extend_from_slice(b"{\"to\":\"a@b\"}");
        assert_eq!(e.as_bytes(), &expected[..]);
        // The kind stays first: the same for tools (and SQL) that read it from the bytes.
        assert_eq!(kind_of(e.as_bytes()), Some("email"));
        assert_eq!(e.args(), Some(&b"{\"to\":\"a@b\"}"[..]));
        assert_eq!(e.traceparent(), Some(GOOD));
        assert_eq!(e.decode::<Email>().unwrap(), Email { to: "a@b".into() });
        // Read back from the stored bytes, and a new traceparent in place of the old.
        let back = Envelope::from_bytes(e.as_bytes().to_vec());
        assert_eq!(back, e);
        let other = GOOD.replace("-01", "-00");
        let moved = back.with_traceparent(&other).unwrap();
        assert_eq!(moved.as_bytes().len(), expected.len());
        assert_eq!(
            (moved.traceparent(), moved.args()),
            (Some(&other[..]), e.args())
        );
    }

    #[test]
    fn old_envelopes_have_no_traceparent() {
        let old = Envelope::from_bytes(&b"\x05email{\"to\":\"a@b\"}"[..]);
        assert_eq!(old.traceparent(), None);
        assert_eq!(old.decode::<Email>().unwrap(), Email { to: "a@b".into() });
        assert!(!format!("{old:?}").contains("traceparent"));
    }

    #[test]
    fn an_empty_or_garbage_trace_block_is_ignored_and_a_cut_one_is_no_envelope() {
        for ignored in [
            &b"\x05email\x01\x00{\"to\":\"x\"}"[..],
            b"\x05email\x01\x03abc{\"to\":\"x\"}",
        ] {
            let e = Envelope::from_bytes(ignored);
            assert_eq!(
                (e.kind(), e.traceparent()),
                (Some("email"), None),
                "{ignored:?}"
            );
            assert_eq!(e.decode::<Email>().unwrap(), Email { to: "x".into() });
        }
        for cut in [&b"\x05email\x01"[..], b"\x05email\x01\x37abc"] {
            let e = Envelope::from_bytes(cut);
            assert_eq!(
                (e.kind(), e.args(), e.traceparent()),
                (Some("email"), None, None)
            );
            assert_eq!(
                e.decode::<Email>().unwrap_err().to_string(),
                "bad args for job kind `email`: a trace block runs past the end of the envelope"
            );
            assert!(matches!(
                e.with_traceparent(GOOD),
                Err(EnvelopeError::NotAnEnvelope)
            ));
        }
    }

    #[test]
    fn a_bad_traceparent_is_refused() {
        let e = Envelope::from_parts("email", b"{}").unwrap();
        for bad in ["", "00-x", &GOOD.to_uppercase(), &GOOD.replace("-01", "-1")] {
            assert_eq!(
                e.clone().with_traceparent(bad),
                Err(EnvelopeError::Traceparent { value: bad.into() })
            );
        }
        assert_eq!(
            Envelope::from_bytes(&b""[..]).with_traceparent(GOOD),
            Err(EnvelopeError::NotAnEnvelope)
        );
    }
}
