//! The envelope's layout on disk and on the wire: byte 0 is the kind's length `L`
//! (1..=255), bytes `1..=L` the kind in UTF-8, then the job's arguments.

/// The kind of an envelope's stored bytes, or `None` when they are not an envelope (empty,
/// a zero length, shorter than the length says, or a kind that is not UTF-8).
///
/// ```
/// use leaseq_async::router::kind_of;
///
/// assert_eq!(kind_of(b"\x05email{\"to\":17}"), Some("email"));
/// assert_eq!(kind_of(b"\x09email"), None);
/// ```
pub fn kind_of(payload: &[u8]) -> Option<&str> {
    let (&len, rest) = payload.split_first()?;
    let kind = rest.get(..usize::from(len)).filter(|k| !k.is_empty())?;
    std::str::from_utf8(kind).ok()
}

#[cfg(test)]
mod tests {
    use super::kind_of;

    #[test]
    fn the_kind_is_the_length_prefixed_head() {
        assert_eq!(kind_of(b"\x05emailargs"), Some("email"));
        assert_eq!(kind_of(b"\x05email"), Some("email"), "no arguments");
        let long = [&[255u8][..], &[b'k'; 255], b"x"].concat();
        assert_eq!(kind_of(&long).map(str::len), Some(255));
    }

    #[test]
    fn not_an_envelope_is_none() {
        assert_eq!(kind_of(b""), None);
        assert_eq!(kind_of(b"\x00args"), None, "a zero length");
        assert_eq!(kind_of(b"\x06email"), None, "shorter than its length");
        assert_eq!(kind_of(b"\x02\xff\xfe"), None, "not UTF-8");
    }
}
