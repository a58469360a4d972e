//! The job router's wire format (feature `router`): an envelope's stored bytes begin with
//! its kind, so that a tool reading raw bytes can name it ([`kind_of`]).

mod envelope;

pub use envelope::kind_of;
