//! Test stores shared by the seam tests (each test file uses what it needs).
#![allow(dead_code)]

pub(crate) mod faulty;
