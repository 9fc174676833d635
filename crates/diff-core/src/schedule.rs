//! Cron schedules, slots and windows: which fire time a run belongs to and which half-open
//! UTC interval it compares.
//!
//! A check's `frequency` is a 5-field cron expression (`minute hour day-of-month month
//! day-of-week`) or one of the aliases `@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight`, `@hourly`, evaluated in UTC. The **current slot** at `now` is the
//! latest fire time strictly before `now` (PipelineWise uses croniter's `get_prev`: at exactly
//! 13:00:00 an hourly check's slot is 12:00, at 13:00:00.000001 it is 13:00). A slot's
//! [`Window`] is `[slot - window_start, slot - window_end)`.
//!
//! Time is always an argument: nothing here reads the clock.
//!
//! # Compatibility with croniter
//!
//! PipelineWise validates `frequency` with croniter (`croniter.is_valid`) and evaluates it with
//! `get_prev`; datadiff evaluates it with `croner`. Measured against croniter 7.0.0, the two
//! agree on every expression in this module's tests (names `jan`/`MON-FRI`, steps, lists,
//! `?`, `L` and `W` in the day of month, `#` in the day of week, `0/10`, Sunday as 0 or 7,
//! day-of-month OR day-of-week when both are restricted). Where they differ, datadiff is stricter
//! or says so:
//!
//! * 6- and 7-field expressions are rejected ([`ScheduleError::FieldCount`]): croniter reads a
//!   6th field as seconds *after* the day of week, croner and Quartz as seconds *before* the
//!   minute, so one text would mean two schedules.
//! * croner's `+` day-of-week modifier (AND instead of OR) is not cron syntax croniter knows;
//!   it is rejected.
//! * Reversed ranges (`5-1`), which croniter wraps around, are rejected by croner.
//! * `L` in the day of week (croniter's `L5`, croner's `5L`, "last Friday") is rejected:
//!   the two libraries spell it differently.
//! * `W` on days 29-31 (`31W`): croniter moves to the last weekday of shorter months, croner
//!   skips them; rejected.
//! * An empty item in a list (`5,,6`, `5,`, `,5`) is rejected; croner reads it as if the
//!   empty item were not there.
//! * An expression that never fires (`0 0 31 2 *`, `0 0 30 2 *`) is valid for both, and
//!   PipelineWise accepts it; every attempt would then fail with croniter's
//!   `CroniterBadDateError`. datadiff rejects it ([`ScheduleError::NeverFires`]).
//!
//! # Never firing, decided exactly
//!
//! UTC has no daylight-saving shifts, so a 5-field schedule depends only on the Gregorian
//! calendar, which repeats every 400 years (146,097 days, exactly 20,871 weeks: the same dates
//! fall on the same weekdays). A schedule that fires at all therefore fires within any 400
//! consecutive years; [`Schedule::parse`] searches that one cycle, from 2000-01-01, and a
//! schedule without a fire time there never fires. A shorter horizon (a few years) would
//! also reject rare but real schedules — the fifth Friday of February (`0 0 * 2 5#5`) fires
//! 12, 28 or 40 years apart — and a longer one cannot find anything more. The search costs
//! microseconds for a schedule that fires, and a few milliseconds for one that does not
//! (croner walks on to its year-5000 limit before giving up).
//!
//! # The longest gap between fires
//!
//! [`Schedule::longest_gap`] measures the longest time between two consecutive fire times,
//! which a window must span for coverage to be contiguous (a 3-hour window on `0 */6 * * *`
//! leaves 3 hours of every 6 that no run compares). In UTC every firing day fires at the same
//! times of day, so the gap is the longer of the longest gap within a day and the longest gap
//! from one firing day's last fire to the next firing day's first. Days are walked over
//! [`GAP_HORIZON_YEARS`] years from 2000-01-01: two leap-year cycles, so month-end and
//! February 29th gaps are seen, at a few thousand searches (about a millisecond) per schedule.
//! Rarer patterns (the 8-year February 29th gap around 2100) are not looked for: the result
//! feeds a warning.

pub use crate::tick::{CheckTickPlan, TickFacts, TickStep};

use std::fmt;

use chrono::{DateTime, Datelike, SubsecRound, TimeDelta, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::duration::Duration;
use crate::time::postgres_first_instant;

/// A parsed cron schedule, evaluated in UTC. Keeps the text it was parsed from.
#[derive(Clone)]
pub struct Schedule {
    text: String,
    cron: Cron,
}

/// Why a `frequency` is not a schedule, or why a schedule has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// Not a 5-field cron expression or a known alias.
    #[error("'{expression}' is not a crontab expression")]
    Invalid {
        /// The rejected text.
        expression: String,
    },
    /// A 6- or 7-field expression (seconds or years).
    #[error(
        "'{expression}' has {fields} fields: datadiff reads only 5 fields (minute hour day-of-month month day-of-week)"
    )]
    FieldCount {
        /// The rejected text.
        expression: String,
        /// How many fields it has.
        fields: usize,
    },
    /// The schedule has no fire time in the searched direction, or the search left the
    /// representable range of instants.
    #[error("'{expression}' has no fire time near {at}")]
    NoFireTime {
        /// The schedule's text.
        expression: String,
        /// Where the search started, RFC 3339.
        at: String,
    },
    /// A valid expression that matches no date at all (February 31st): it never fires.
    #[error("'{expression}' never fires: no date of the 400-year Gregorian calendar cycle matches it")]
    NeverFires {
        /// The rejected text.
        expression: String,
    },
}

/// The years [`Schedule::longest_gap`] walks, from 2000-01-01.
pub const GAP_HORIZON_YEARS: i32 = 8;

/// Where the searches of [`Schedule::parse`] and [`Schedule::longest_gap`] start: a fixed
/// instant, so that the answers never depend on the clock.
fn reference() -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(946_684_800, 0).unwrap_or_default()
}

/// The longest time between two consecutive fire times (see [`Schedule::longest_gap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The fire time the gap starts at.
    pub from: DateTime<Utc>,
    /// The next fire time.
    pub to: DateTime<Utc>,
}

impl Gap {
    /// `to - from`, in whole seconds.
    pub fn seconds(&self) -> i64 {
        (self.to - self.from).num_seconds()
    }
}

/// The aliases croniter accepts, and the 5-field expression each stands for.
const ALIASES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

impl Schedule {
    /// Parses a `frequency`: 5 fields or an alias (case-insensitive), surrounding whitespace
    /// ignored as croniter ignores it.
    pub fn parse(expression: &str) -> Result<Schedule, ScheduleError> {
        let invalid = || ScheduleError::Invalid { expression: expression.to_owned() };
        let trimmed = expression.trim();
        let five_fields = if trimmed.starts_with('@') {
            ALIASES
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(trimmed))
                .map(|(_, fields)| *fields)
                .ok_or_else(invalid)?
        } else {
            trimmed
        };
        let fields: Vec<&str> = five_fields.split_whitespace().collect();
        match fields.len() {
            5 => {}
            6 | 7 => return Err(ScheduleError::FieldCount { expression: expression.to_owned(), fields: fields.len() }),
            _ => return Err(invalid()),
        }
        for (index, field) in fields.iter().enumerate() {
            // `+` is croner's AND modifier; a leading `/` is croner's sloppy `*/n`, which
            // croniter rejects; `L` in the day of week is spelt differently by the two.
            if field.contains('+') || field.starts_with('/') || field.contains(",/") {
                return Err(invalid());
            }
            if index == 4 && field.to_ascii_uppercase().contains('L') {
                return Err(invalid());
            }
            // croniter takes `W` only as `<day>W`, alone in its field; for days 29-31 it moves
            // to the last day of shorter months and croner skips them, so those are refused.
            if index == 2 && field.to_ascii_uppercase().contains('W') {
                let day = field.trim_end_matches(['W', 'w']);
                let in_every_month = day.len() + 1 == field.len()
                    && day.bytes().all(|b| b.is_ascii_digit())
                    && day.parse::<u8>().is_ok_and(|day| (1..=28).contains(&day));
                if !in_every_month {
                    return Err(invalid());
                }
            }
            // `?` stands alone; `#` takes one weekday, not a range or a step.
            if field.contains('?') && *field != "?" {
                return Err(invalid());
            }
            if index == 4 && field.split(',').any(|item| item.contains('#') && item.contains(['-', '/'])) {
                return Err(invalid());
            }
            if !field.is_ascii() {
                return Err(invalid());
            }
            // croner skips an empty list item (`5,,6` reads as `5,6`); croniter does not.
            if field.split(',').any(str::is_empty) {
                return Err(invalid());
            }
        }
        let parser =
            CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).sloppy_ranges(true).build();
        let cron = parser.parse(&fields.join(" ")).map_err(|_| invalid())?;
        let schedule = Schedule { text: expression.to_owned(), cron };
        // One Gregorian cycle holds every date pattern there is (module docs).
        let start = reference();
        let cycle_end = start.checked_add_signed(TimeDelta::days(146_097)).unwrap_or(start);
        match schedule.cron.find_next_occurrence(&start, true) {
            Ok(fire) if fire < cycle_end => Ok(schedule),
            _ => Err(ScheduleError::NeverFires { expression: expression.to_owned() }),
        }
    }

    /// The longest time between two consecutive fire times, over [`GAP_HORIZON_YEARS`] years
    /// from 2000-01-01 (module docs): the earliest such pair. `None` when fewer than two fire
    /// times fall in that horizon (`@yearly` still has seven gaps; February 29th alone has one).
    pub fn longest_gap(&self) -> Option<Gap> {
        let start = reference();
        let end = start.with_year(2000 + GAP_HORIZON_YEARS)?;
        let next = |at: DateTime<Utc>, inclusive: bool| self.cron.find_next_occurrence(&at, inclusive).ok();
        let midnight_after = |at: DateTime<Utc>| {
            at.date_naive().succ_opt().and_then(|day| day.and_hms_opt(0, 0, 0)).map(|day| day.and_utc())
        };
        let first = next(start, true).filter(|first| *first < end)?;
        // The times of day of one firing day (every firing day has the same ones).
        let day_end = midnight_after(first)?;
        let mut longest: Option<Gap> = None;
        let mut keep = |gap: Gap| {
            if longest.is_none_or(|longest| gap.seconds() > longest.seconds()) {
                longest = Some(gap);
            }
        };
        let mut last_of_day = first;
        while let Some(fire) = next(last_of_day, false).filter(|fire| *fire < day_end) {
            keep(Gap { from: last_of_day, to: fire });
            last_of_day = fire;
        }
        let day_span = last_of_day - first;
        // From each firing day's last fire to the next firing day's first.
        let mut day_first = first;
        loop {
            let last = day_first + day_span;
            let Some(following) = midnight_after(day_first).and_then(|midnight| next(midnight, true)) else { break };
            if following >= end {
                break;
            }
            keep(Gap { from: last, to: following });
            day_first = following;
        }
        longest
    }

    /// The text the schedule was parsed from, verbatim.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The current slot at `now`: the latest fire time strictly before `now`.
    pub fn current_slot(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>, ScheduleError> {
        // croner searches whole seconds: from a time with a fraction, the whole second below it
        // is already strictly before `now` and may itself be the answer.
        let whole = now.trunc_subsecs(0);
        let found = if whole < now {
            self.cron.find_previous_occurrence(&whole, true)
        } else {
            self.cron.find_previous_occurrence(&now, false)
        };
        found.map_err(|_| self.no_fire_time(now))
    }

    /// The first fire time strictly after `at`.
    pub fn next_after(&self, at: DateTime<Utc>) -> Result<DateTime<Utc>, ScheduleError> {
        // From a time with a fraction, croner's next whole second is strictly after it.
        let whole = at.trunc_subsecs(0);
        let found = if whole < at {
            whole
                .checked_add_signed(TimeDelta::seconds(1))
                .and_then(|up| self.cron.find_next_occurrence(&up, true).ok())
        } else {
            self.cron.find_next_occurrence(&at, false).ok()
        };
        found.ok_or_else(|| self.no_fire_time(at))
    }

    /// Fire times strictly after `slot`, ascending. The iterator ends when no further fire
    /// time can be found.
    pub fn fires_after(&self, slot: DateTime<Utc>) -> FiresAfter<'_> {
        FiresAfter { schedule: self, cursor: Some(slot) }
    }

    fn no_fire_time(&self, at: DateTime<Utc>) -> ScheduleError {
        ScheduleError::NoFireTime { expression: self.text.clone(), at: at.to_rfc3339() }
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Schedule").field(&self.text).finish()
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Schedule) -> bool {
        self.text == other.text
    }
}

impl Eq for Schedule {}

/// Iterator over fire times after a slot (see [`Schedule::fires_after`]).
#[derive(Debug)]
pub struct FiresAfter<'a> {
    schedule: &'a Schedule,
    cursor: Option<DateTime<Utc>>,
}

impl Iterator for FiresAfter<'_> {
    type Item = DateTime<Utc>;

    fn next(&mut self) -> Option<DateTime<Utc>> {
        let next = self.schedule.next_after(self.cursor?).ok();
        self.cursor = next;
        next
    }
}

/// A half-open UTC interval `[start, end)` of the timestamp column compared by one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Window {
    /// Inclusive start.
    pub start: DateTime<Utc>,
    /// Exclusive end.
    pub end: DateTime<Utc>,
}

impl Window {
    /// The window of `slot`: `[slot - window_start, slot - window_end)`. `None` when an
    /// instant falls outside chrono's range or before PostgreSQL's first timestamp (4714 BC),
    /// which a definition stored by another tool can reach (validation bounds the offsets).
    pub fn from_offsets(slot: DateTime<Utc>, window_start: Duration, window_end: Duration) -> Option<Window> {
        let back = |offset: Duration| {
            TimeDelta::try_seconds(offset.seconds())
                .and_then(|d| slot.checked_sub_signed(d))
                .filter(|instant| *instant >= postgres_first_instant())
        };
        Some(Window { start: back(window_start)?, end: back(window_end)? })
    }

    /// Whether `instant` lies in `[start, end)`.
    pub fn contains(&self, instant: DateTime<Utc>) -> bool {
        self.start <= instant && instant < self.end
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).unwrap_or_default()
    }

    fn hourly() -> Schedule {
        Schedule::parse("0 * * * *").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn slot_is_the_latest_fire_strictly_before_now() {
        let schedule = hourly();
        assert_eq!(schedule.current_slot(at("2026-07-22T13:47:59Z")), Ok(at("2026-07-22T13:00:00Z")));
        assert_eq!(schedule.current_slot(at("2026-07-22T13:00:00Z")), Ok(at("2026-07-22T12:00:00Z")));
        assert_eq!(schedule.current_slot(at("2026-07-22T13:00:00.000001Z")), Ok(at("2026-07-22T13:00:00Z")));
        assert_eq!(schedule.current_slot(at("2026-07-22T12:59:59.999999Z")), Ok(at("2026-07-22T12:00:00Z")));
    }

    #[test]
    fn fires_after_a_slot_are_strictly_later_and_ascending() {
        let schedule = Schedule::parse("*/15 * * * *").unwrap_or_else(|e| panic!("{e}"));
        let fires: Vec<_> = schedule.fires_after(at("2026-07-22T13:00:00Z")).take(3).collect();
        assert_eq!(fires, vec![at("2026-07-22T13:15:00Z"), at("2026-07-22T13:30:00Z"), at("2026-07-22T13:45:00Z")]);
        let from_fraction: Vec<_> = schedule.fires_after(at("2026-07-22T13:14:59.5Z")).take(1).collect();
        assert_eq!(from_fraction, vec![at("2026-07-22T13:15:00Z")]);
    }

    #[test]
    fn windows_are_half_open_offsets_before_the_slot() {
        let slot = at("2026-07-22T13:00:00Z");
        let window = Window::from_offsets(slot, Duration::from_seconds(108_000), Duration::from_seconds(21_600));
        let window = window.unwrap_or_else(|| panic!("in range"));
        assert_eq!(window.start, at("2026-07-21T07:00:00Z"));
        assert_eq!(window.end, at("2026-07-22T07:00:00Z"));
        assert!(window.contains(window.start));
        assert!(!window.contains(window.end));
        let far = Window::from_offsets(slot, Duration::from_seconds(i64::MAX), Duration::from_seconds(0));
        assert_eq!(far, None);
        // Within chrono's range but before PostgreSQL's first timestamp: no window either.
        let before_postgres = Duration::from_seconds(7_000 * 31_556_952);
        assert_eq!(Window::from_offsets(slot, before_postgres, Duration::from_seconds(0)), None);
        let longest = Window::from_offsets(slot, Duration::MAX_WINDOW_OFFSET, Duration::from_seconds(0));
        assert!(longest.is_some_and(|window| window.start.to_rfc3339() == "1027-03-22T13:00:00+00:00"), "{longest:?}");
    }

    #[test]
    fn six_and_seven_fields_say_datadiff_reads_five() {
        let error = Schedule::parse("0 0 * * * *").err();
        assert_eq!(error, Some(ScheduleError::FieldCount { expression: "0 0 * * * *".into(), fields: 6 }));
        assert!(error.map(|e| e.to_string()).unwrap_or_default().contains("datadiff reads only 5 fields"));
        assert!(matches!(Schedule::parse("0 0 * * * * *"), Err(ScheduleError::FieldCount { fields: 7, .. })));
    }

    #[test]
    fn a_schedule_that_never_fires_is_rejected() {
        for expression in ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 2 *", "0 0 31 2,4 *"] {
            assert_eq!(
                Schedule::parse(expression).err(),
                Some(ScheduleError::NeverFires { expression: expression.into() }),
                "{expression}"
            );
        }
        assert_eq!(
            ScheduleError::NeverFires { expression: "0 0 31 2 *".into() }.to_string(),
            "'0 0 31 2 *' never fires: no date of the 400-year Gregorian calendar cycle matches it"
        );
        // Rare is not never: February 29th, and the fifth Friday of February (12, 28 or 40
        // years apart: 2008, 2036, 2064, 2092, 2104, …, 2188, 2228), fire within one cycle.
        let leap = Schedule::parse("0 0 29 2 *").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(leap.next_after(at("2026-07-22T13:00:00Z")), Ok(at("2028-02-29T00:00:00Z")));
        let rare = Schedule::parse("0 0 * 2 5#5").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rare.next_after(at("2026-07-22T13:00:00Z")), Ok(at("2036-02-29T00:00:00Z")));
        assert_eq!(rare.next_after(at("2188-03-01T00:00:00Z")), Ok(at("2228-02-29T00:00:00Z")));
        // Day of month OR day of week: a weekday rescues February 31st.
        assert!(Schedule::parse("0 0 31 2 1").is_ok());
    }

    #[test]
    fn empty_list_items_are_rejected() {
        for expression in ["5,,6 * * * *", "5, * * * *", ",5 * * * *", "0 0 1,,15 * *", "0 0 * * 1,", "0 , * * *"] {
            assert_eq!(
                Schedule::parse(expression).err(),
                Some(ScheduleError::Invalid { expression: expression.into() }),
                "{expression}"
            );
        }
        assert!(Schedule::parse("5,6 * * * *").is_ok());
    }

    fn gap(expression: &str) -> Option<(i64, DateTime<Utc>)> {
        let schedule = Schedule::parse(expression).unwrap_or_else(|e| panic!("{e}"));
        schedule.longest_gap().map(|gap| (gap.seconds(), gap.from))
    }

    #[test]
    fn the_longest_gap_between_fires() {
        let hour = 3_600;
        let day = 24 * hour;
        assert_eq!(gap("* * * * *"), Some((60, at("2000-01-01T00:00:00Z"))));
        assert_eq!(gap("0 * * * *"), Some((hour, at("2000-01-01T00:00:00Z"))));
        assert_eq!(gap("0 */6 * * *"), Some((6 * hour, at("2000-01-01T00:00:00Z"))));
        // Within the day and across midnight: 09:00, 17:00, then 09:00 the next day.
        assert_eq!(gap("0 9,17 * * *"), Some((16 * hour, at("2000-01-01T17:00:00Z"))));
        // Weekdays only: Friday 17:00 to Monday 09:00 (2000-01-07 was a Friday).
        assert_eq!(gap("0 9-17 * * 1-5"), Some((2 * day + 16 * hour, at("2000-01-07T17:00:00Z"))));
        assert_eq!(gap("@daily"), Some((day, at("2000-01-01T00:00:00Z"))));
        // The 31st: from March 31st to May 31st, 61 days (January to March is 60 in 2000).
        assert_eq!(gap("0 0 31 * *"), Some((61 * day, at("2000-03-31T00:00:00Z"))));
        // February 29th: 2000 to 2004.
        assert_eq!(gap("0 0 29 2 *"), Some(((366 + 365 * 3) * day, at("2000-02-29T00:00:00Z"))));
        // Once in 12 years or rarer: no two fires within the horizon.
        assert_eq!(gap("0 0 * 2 5#5"), None);
    }

    /// `(expression, croniter.is_valid, get_prev from 13:47:59, get_prev from 13:00:00)`,
    /// measured with croniter 7.0.0 (`crates/config/tests/vectors/cron_probe.py`). Expressions
    /// where datadiff deliberately differs are in [`DELIBERATE_DIFFERENCES`].
    const CRONITER: &[(&str, Option<(&str, &str)>)] = &[
        ("0 * * * *", Some(("2026-07-22T13:00:00Z", "2026-07-22T12:00:00Z"))),
        ("*/15 * * * *", Some(("2026-07-22T13:45:00Z", "2026-07-22T12:45:00Z"))),
        ("0 */6 * * *", Some(("2026-07-22T12:00:00Z", "2026-07-22T12:00:00Z"))),
        ("1h", None),
        ("15min", None),
        ("every hour", None),
        ("0 * * *", None),
        ("@hourly", Some(("2026-07-22T13:00:00Z", "2026-07-22T12:00:00Z"))),
        ("@HOURLY", Some(("2026-07-22T13:00:00Z", "2026-07-22T12:00:00Z"))),
        ("@daily", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("@midnight", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("@weekly", Some(("2026-07-19T00:00:00Z", "2026-07-19T00:00:00Z"))),
        ("@monthly", Some(("2026-07-01T00:00:00Z", "2026-07-01T00:00:00Z"))),
        ("@yearly", Some(("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))),
        ("@annually", Some(("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))),
        ("@reboot", None),
        ("0 0 ? * *", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * * ?", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 L * *", Some(("2026-06-30T00:00:00Z", "2026-06-30T00:00:00Z"))),
        ("0 0 * * 5L", None),
        ("0 0 * * 5#3", Some(("2026-07-17T00:00:00Z", "2026-07-17T00:00:00Z"))),
        ("0 0 * * MON#2", Some(("2026-07-13T00:00:00Z", "2026-07-13T00:00:00Z"))),
        ("0 0 15W * *", Some(("2026-07-15T00:00:00Z", "2026-07-15T00:00:00Z"))),
        ("0 0 LW * *", None),
        ("0 0 1,L * *", Some(("2026-07-01T00:00:00Z", "2026-07-01T00:00:00Z"))),
        ("0 0 * * +1", None),
        ("0/10 * * * *", Some(("2026-07-22T13:40:00Z", "2026-07-22T12:50:00Z"))),
        ("/10 * * * *", None),
        ("60 * * * *", None),
        ("0 24 * * *", None),
        ("0 0 0 * *", None),
        ("0 0 32 * *", None),
        ("0 0 * 13 *", None),
        ("0 0 * * 8", None),
        ("0 0 * * 7", Some(("2026-07-19T00:00:00Z", "2026-07-19T00:00:00Z"))),
        ("0 0 * * 0-7", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * jan mon", Some(("2026-01-26T00:00:00Z", "2026-01-26T00:00:00Z"))),
        ("0 0 * JAN-MAR MON-FRI", Some(("2026-03-31T00:00:00Z", "2026-03-31T00:00:00Z"))),
        ("0 0 * * sunday", None),
        ("0 0 * * SUN-SAT", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("*/0 * * * *", None),
        ("0 0 1 * MON", Some(("2026-07-20T00:00:00Z", "2026-07-20T00:00:00Z"))),
        ("0 0 */2 * MON", Some(("2026-07-21T00:00:00Z", "2026-07-21T00:00:00Z"))),
        ("1,2,3 * * * *", Some(("2026-07-22T13:03:00Z", "2026-07-22T12:03:00Z"))),
        ("1-10/3 * * * *", Some(("2026-07-22T13:10:00Z", "2026-07-22T12:10:00Z"))),
        ("  0 * * * *  ", Some(("2026-07-22T13:00:00Z", "2026-07-22T12:00:00Z"))),
        ("0\t*\t*\t*\t*", Some(("2026-07-22T13:00:00Z", "2026-07-22T12:00:00Z"))),
        ("* * * * * 2025", None),
        ("0 0 29 2 *", Some(("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"))),
        ("00 01 * * *", Some(("2026-07-22T01:00:00Z", "2026-07-22T01:00:00Z"))),
        ("0 0 H * *", None),
        ("-1 * * * *", None),
        ("0 0 1-31/31 * *", Some(("2026-07-01T00:00:00Z", "2026-07-01T00:00:00Z"))),
        ("", None),
        ("0 0 1W * *", Some(("2026-07-01T00:00:00Z", "2026-07-01T00:00:00Z"))),
        ("0 0 1W,15 * *", None),
        ("0 0 W * *", None),
        ("0 0 1-5W * *", None),
        ("0 0 L-2 * *", None),
        ("0 0 L,15 * *", Some(("2026-07-15T00:00:00Z", "2026-07-15T00:00:00Z"))),
        ("0 0 */L * *", None),
        ("0 0 ? * ?", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * * 5#6", None),
        ("0 0 * * 5#0", None),
        ("0 0 * * 1#1,3#2", Some(("2026-07-08T00:00:00Z", "2026-07-08T00:00:00Z"))),
        ("0 0 * * 7#1", Some(("2026-07-05T00:00:00Z", "2026-07-05T00:00:00Z"))),
        ("0 0 * * sun#1", Some(("2026-07-05T00:00:00Z", "2026-07-05T00:00:00Z"))),
        ("0 0 * * 1-5#2", None),
        ("0 0 * * */2", Some(("2026-07-21T00:00:00Z", "2026-07-21T00:00:00Z"))),
        ("0 0 * * 1/2", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 2/5 * *", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * */3 *", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * JAN/2 *", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * * MON/2", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("0 0 * * mon-7", Some(("2026-07-22T00:00:00Z", "2026-07-22T00:00:00Z"))),
        ("30 2 * * * ", Some(("2026-07-22T02:30:00Z", "2026-07-22T02:30:00Z"))),
        ("0 0 ?/2 * *", None),
    ];

    /// Valid for croniter, rejected by datadiff (see the module docs).
    const DELIBERATE_DIFFERENCES: &[&str] =
        &["0 0 * * * *", "0 0 * * * * *", "5-1 * * * *", "0 0 * * 5-1", "0 0 * * L5", "0 0 31W * *", "0 0 29W * *"];

    #[test]
    fn croner_agrees_with_croniter_on_the_measured_table() {
        let late = at("2026-07-22T13:47:59Z");
        let boundary = at("2026-07-22T13:00:00Z");
        let mut disagreements = Vec::new();
        for (expression, expected) in CRONITER {
            let parsed = Schedule::parse(expression);
            match (expected, parsed) {
                (None, Ok(_)) => {
                    disagreements.push(format!("{expression:?}: croniter rejects it, datadiff accepts it"))
                }
                (None, Err(_)) => {}
                (Some(_), Err(e)) => disagreements.push(format!("{expression:?}: croniter accepts it, datadiff: {e}")),
                (Some((from_late, from_boundary)), Ok(schedule)) => {
                    let got = (schedule.current_slot(late), schedule.current_slot(boundary));
                    if got != (Ok(at(from_late)), Ok(at(from_boundary))) {
                        disagreements
                            .push(format!("{expression:?}: croniter {from_late} {from_boundary}, got {got:?}"));
                    }
                }
            }
        }
        assert!(disagreements.is_empty(), "{disagreements:#?}");
        for expression in DELIBERATE_DIFFERENCES {
            assert!(Schedule::parse(expression).is_err(), "{expression:?}");
        }
    }

    proptest! {
        #[test]
        fn the_slot_is_the_last_fire_before_now(
            micros in 1_600_000_000_000_000i64..1_900_000_000_000_000i64,
            which in 0usize..4,
        ) {
            let expression = ["0 * * * *", "*/15 * * * *", "30 2 * * 1-5", "0 0 1 * *"][which];
            let schedule = Schedule::parse(expression).unwrap_or_else(|e| panic!("{e}"));
            let now = DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default();
            let slot = schedule.current_slot(now);
            prop_assert!(slot.as_ref().is_ok_and(|slot| *slot < now), "{:?}", slot);
            let next = slot.and_then(|slot| schedule.next_after(slot));
            prop_assert!(next.as_ref().is_ok_and(|next| *next >= now), "{:?}", next);
        }
    }

    #[test]
    fn schedules_keep_their_text() {
        let schedule = Schedule::parse(" @Hourly ").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schedule.as_str(), " @Hourly ");
        assert_eq!(format!("{schedule:?}"), "Schedule(\" @Hourly \")");
        let date = Utc.with_ymd_and_hms(2026, 7, 22, 0, 30, 0).single().unwrap_or_default();
        assert_eq!(schedule.current_slot(date), Ok(at("2026-07-22T00:00:00Z")));
    }
}
