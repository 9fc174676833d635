//! Where recorded times come from: the system clock, or one fixed instant (`--at`).

use chrono::{DateTime, Utc};

/// The time source of an invocation.
///
/// SPEC §4: `--at TIME` replaces `now` everywhere — slot choice and every recorded time
/// (`started_at`, `checked_at`, `finished_at`, …) — so a replay is coherent. Without it,
/// each recorded time is the moment it is written, as upstream records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The current time, read at each use.
    #[default]
    System,
    /// Always this instant.
    Fixed(DateTime<Utc>),
}

impl Clock {
    /// A clock stopped at `instant`.
    pub fn at(instant: DateTime<Utc>) -> Clock {
        Clock::Fixed(instant)
    }

    /// The time now, by this clock.
    pub fn now(self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Fixed(instant) => instant,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_fixed_clock_never_moves() {
        let instant = Utc.with_ymd_and_hms(2026, 7, 22, 13, 47, 0).unwrap();
        let clock = Clock::at(instant);
        assert_eq!((clock.now(), clock.now()), (instant, instant));
    }
}
