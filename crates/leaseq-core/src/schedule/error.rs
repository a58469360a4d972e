//! Why a schedule could not be made.

use core::fmt;

/// A schedule that cannot work, refused when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The name is empty: a schedule's name is half of each tick's unique key.
    EmptyName,
    /// The name is longer than [`Schedule::MAX_NAME_LEN`](super::Schedule::MAX_NAME_LEN)
    /// bytes: with the tick's time it would not fit in a
    /// [`UniqueKey`](crate::UniqueKey).
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// An [`Interval`](super::Interval) of zero: it would tick forever at one instant.
    ZeroInterval,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::EmptyName => f.write_str("a schedule needs a non-empty name"),
            ScheduleError::NameTooLong { len } => write!(
                f,
                "schedule name of {len} bytes is longer than the {} allowed; use a shorter name",
                super::Schedule::<()>::MAX_NAME_LEN
            ),
            ScheduleError::ZeroInterval => f.write_str("a schedule interval must be above zero"),
        }
    }
}

impl core::error::Error for ScheduleError {}
