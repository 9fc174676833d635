//! State machine.
