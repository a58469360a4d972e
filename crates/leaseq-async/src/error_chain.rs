//! [`ErrorChain`]: an error with its causes, in words, for logs, operator tools and what
//! keeps errors as text. The stores' errors say what failed at their own level and hand the
//! cause (the database's, the system's) to `source()`; this prints them all.

use std::error::Error;
use std::fmt;

/// An error and every cause under it ([`Error::source`]), `: ` between them:
/// "cannot connect to PostgreSQL: authentication failed for user \"x\": db error: FATAL:
/// role \"x\" does not exist". A cause whose words are already shown (an error that prints
/// its source in its own message too) is not repeated.
///
/// ```
/// use std::error::Error;
/// use std::fmt;
///
/// use leaseq_async::ErrorChain;
///
/// #[derive(Debug)]
/// struct OpenFailed(std::io::Error);
///
/// impl fmt::Display for OpenFailed {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         f.write_str("cannot open the queue file")
///     }
/// }
///
/// impl Error for OpenFailed {
///     fn source(&self) -> Option<&(dyn Error + 'static)> {
///         Some(&self.0)
///     }
/// }
///
/// let e = OpenFailed(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"));
/// assert_eq!(e.to_string(), "cannot open the queue file");
/// assert_eq!(ErrorChain(&e).to_string(), "cannot open the queue file: no such file");
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a dyn Error);

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let words = c.to_string();
            if !words.is_empty() && !shown.contains(&words) {
                shown.push_str(": ");
                shown.push_str(&words);
            }
            cause = c.source();
        }
        f.write_str(&shown)
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorChain({self})")
    }
}
