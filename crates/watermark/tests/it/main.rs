//! Integration tests of the watermark model: upstream's coverage cases, the store transition,
//! and property tests (plain and as a state machine).

mod cases;
mod machine;
mod properties;
mod support;
mod transition;
