//! A job envelope's bytes written by hand, as another process (or a bad one) would.

/// An envelope's bytes: the kind's length (one byte), the kind, the arguments.
pub fn envelope(kind: &str, args: &str) -> Vec<u8> {
    [&[kind.len() as u8][..], kind.as_bytes(), args.as_bytes()].concat()
}
