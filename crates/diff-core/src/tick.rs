//! The order of one definition's work in a scheduler tick (runs note §1–§3, SPEC §4), as a
//! pure state machine the runner executes.
//!
//! A tick does, for each runnable definition: the **stale sweep** of its revision when one
//! of its attempts is stale; the **due slots**, computed *before* retries insert attempts of
//! their own (the current slot, or every slot after the newest attempted one up to it, oldest
//! first, at most [`MAX_CATCH_UP`]); the **automatic retries** of failed slots of earlier
//! intervals (listed when a candidate is known, or when the sweep just failed an attempt),
//! never forced; then the due slots, with `--force` when given; then, when the definition has
//! `checks.<name>.reverify`, the **re-verifications**: at most its per-tick budget of PASS
//! slots last attempted longer ago than its period, least recently attempted first, each
//! PipelineWise's `--force` (MANUAL, the newest attempt's bounds). An unforced current slot whose
//! newest attempt is already known (and unchanged by a sweep) is answered SKIPPED here, by the
//! same [`decide_start`] rule the store applies under its lock, without a round trip.
//!
//! [`CheckTickPlan::next_step`] says what to do next; the runner does it and reports what it found
//! ([`CheckTickPlan::swept`], [`CheckTickPlan::retry_candidates`]). The plan does no I/O and
//! never reads the clock, so the composite rules are property-tested without a database.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use datadiff_diff_core::{schedule::{CheckTickPlan, Schedule, TickFacts, TickStep}, attempt::StartKind};
//!
//! let schedule = Schedule::parse("0 * * * *")?;
//! let current = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap();
//! let facts = TickFacts {
//!     current,
//!     latest_attempted: Some(Utc.with_ymd_and_hms(2026, 7, 22, 11, 0, 0).unwrap()),
//!     has_stale_attempt: false,
//!     has_retry_candidate: false,
//!     current_slot_newest: None,
//!     force: false,
//!     reverify: None,
//!     now: current,
//! };
//! let mut plan = CheckTickPlan::new(&schedule, facts, |_| None);
//! let first = Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap();
//! assert_eq!(plan.next_step(), TickStep::Start { slot: first, kind: StartKind::Scheduled { force: false } });
//! assert_eq!(plan.next_step(), TickStep::Start { slot: current, kind: StartKind::Scheduled { force: false } });
//! assert_eq!(plan.next_step(), TickStep::Done);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use crate::attempt::{
    AttemptFacts, MAX_CATCH_UP, Reverify, RevisionHistory, Skip, StartDecision, StartKind, StartRequest, decide_start,
    due_slots,
};
use crate::schedule::{Schedule, Window};

/// What the tick knows about one runnable definition before it does anything (the backend's
/// schedule overview, `now`'s current slot and `--force`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickFacts {
    /// The current slot: the latest cron fire strictly before `now`.
    pub current: DateTime<Utc>,
    /// The newest slot attempted so far, if any.
    pub latest_attempted: Option<DateTime<Utc>>,
    /// Whether a RUNNING attempt of the revision is older than its stale budget.
    pub has_stale_attempt: bool,
    /// Whether a failed slot of an earlier interval may be retried.
    pub has_retry_candidate: bool,
    /// The newest attempt of the current slot, when it has one.
    pub current_slot_newest: Option<AttemptFacts>,
    /// `--force`: start due slots even when attempted (retries are never forced).
    pub force: bool,
    /// `checks.<name>.reverify`: re-verify old PASS slots after the due slots.
    pub reverify: Option<Reverify>,
    /// `now` (only the re-verification reads it: `now` minus the period).
    pub now: DateTime<Utc>,
}

/// The next thing to do for a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickStep {
    /// Sweep the revision's stale attempts, then report with [`CheckTickPlan::swept`].
    Sweep,
    /// List the retry candidates before the current slot (at most [`MAX_CATCH_UP`]), then
    /// report them with [`CheckTickPlan::retry_candidates`].
    ListRetries,
    /// Start (through the store, which decides again under its lock) and execute an attempt.
    Start {
        /// The slot.
        slot: DateTime<Utc>,
        /// Scheduled (with `--force` or not) or a retry.
        kind: StartKind,
    },
    /// List the slots due for re-verification (verified before `verified_before`, least
    /// recently attempted first, at most `limit`), then report them with
    /// [`CheckTickPlan::reverification_candidates`].
    ListReverifications {
        /// `now` minus the re-verification period.
        verified_before: DateTime<Utc>,
        /// The per-tick budget.
        limit: usize,
    },
    /// Report the slot SKIPPED without asking the store: its newest attempt is known.
    Skip {
        /// The slot.
        slot: DateTime<Utc>,
        /// Why, as [`decide_start`] says.
        skip: Skip,
    },
    /// Nothing more for this definition in this tick.
    Done,
}

/// Where the plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The sweep is to be asked for.
    Sweep,
    /// The sweep was asked for; waiting for [`CheckTickPlan::swept`].
    AwaitSweep,
    /// Decide whether retries are listed.
    Retries,
    /// Retries were asked for; waiting for [`CheckTickPlan::retry_candidates`].
    AwaitRetries,
    /// Starting retries, then due slots.
    Starting,
    /// Re-verifications were asked for; waiting for
    /// [`CheckTickPlan::reverification_candidates`].
    AwaitReverifications,
    /// Starting re-verifications.
    Reverifying,
    /// Finished.
    Done,
}

/// One definition's part of a tick: see the module docs.
#[derive(Debug, Clone)]
pub struct CheckTickPlan {
    facts: TickFacts,
    stage: Stage,
    swept: bool,
    retries: VecDeque<DateTime<Utc>>,
    due: VecDeque<DateTime<Utc>>,
    reverifications: VecDeque<DateTime<Utc>>,
    current_window: Option<Window>,
}

impl CheckTickPlan {
    /// The plan of a definition with `schedule` and `facts`; `window` gives a slot's rolling
    /// window (`None` when it is out of range: the store then decides).
    pub fn new(
        schedule: &Schedule,
        facts: TickFacts,
        window: impl Fn(DateTime<Utc>) -> Option<Window>,
    ) -> CheckTickPlan {
        let due: VecDeque<_> = due_slots(schedule, facts.latest_attempted, facts.current).into();
        let current_window = window(facts.current);
        let stage = if facts.has_stale_attempt { Stage::Sweep } else { Stage::Retries };
        CheckTickPlan {
            facts,
            stage,
            swept: false,
            retries: VecDeque::new(),
            due,
            reverifications: VecDeque::new(),
            current_window,
        }
    }

    /// The next step. After [`TickStep::Sweep`] and [`TickStep::ListRetries`] the plan waits
    /// for their report; asked again before it (the step failed), it ends with
    /// [`TickStep::Done`]: the definition's remaining work waits for the next tick.
    pub fn next_step(&mut self) -> TickStep {
        match self.stage {
            Stage::Sweep => {
                self.stage = Stage::AwaitSweep;
                TickStep::Sweep
            }
            Stage::AwaitSweep | Stage::AwaitRetries | Stage::AwaitReverifications | Stage::Done => {
                self.stage = Stage::Done;
                TickStep::Done
            }
            Stage::Retries if self.facts.has_retry_candidate || self.swept => {
                self.stage = Stage::AwaitRetries;
                TickStep::ListRetries
            }
            Stage::Retries => {
                self.stage = Stage::Starting;
                self.next_start()
            }
            Stage::Starting => self.next_start(),
            Stage::Reverifying => match (self.reverifications.pop_front(), self.facts.reverify) {
                (Some(slot), Some(reverify)) => TickStep::Start {
                    slot,
                    kind: StartKind::Reverify { verified_before: reverify.verified_before(self.facts.now) },
                },
                _ => {
                    self.stage = Stage::Done;
                    TickStep::Done
                }
            },
        }
    }

    /// The sweep's report: whether it retired any attempt (a swept attempt may be a retry
    /// candidate now, and the current slot's newest attempt may have changed).
    pub fn swept(&mut self, any: bool) {
        if self.stage == Stage::AwaitSweep {
            self.swept = any;
            self.stage = Stage::Retries;
        }
    }

    /// The retry candidates the store listed, oldest first (at most [`MAX_CATCH_UP`] are
    /// started).
    pub fn retry_candidates(&mut self, slots: impl IntoIterator<Item = DateTime<Utc>>) {
        if self.stage == Stage::AwaitRetries {
            self.retries = slots.into_iter().take(MAX_CATCH_UP).collect();
            self.stage = Stage::Starting;
        }
    }

    /// The slots the store listed as due for re-verification, least recently attempted first
    /// (at most the per-tick budget are started).
    pub fn reverification_candidates(&mut self, slots: impl IntoIterator<Item = DateTime<Utc>>) {
        if self.stage == Stage::AwaitReverifications {
            let limit = self.facts.reverify.map_or(0, |reverify| reverify.per_tick);
            self.reverifications = slots.into_iter().take(limit).collect();
            self.stage = Stage::Reverifying;
        }
    }

    fn next_start(&mut self) -> TickStep {
        if let Some(slot) = self.retries.pop_front() {
            return TickStep::Start { slot, kind: StartKind::Retry { retry_before: self.facts.current } };
        }
        let Some(slot) = self.due.pop_front() else {
            return match self.facts.reverify {
                Some(reverify) if reverify.per_tick > 0 => {
                    self.stage = Stage::AwaitReverifications;
                    TickStep::ListReverifications {
                        verified_before: reverify.verified_before(self.facts.now),
                        limit: reverify.per_tick,
                    }
                }
                _ => {
                    self.stage = Stage::Done;
                    TickStep::Done
                }
            };
        };
        if let Some(skip) = self.known_skip(slot) {
            return TickStep::Skip { slot, skip };
        }
        TickStep::Start { slot, kind: StartKind::Scheduled { force: self.facts.force } }
    }

    /// The SKIPPED answer for an unforced current slot whose newest attempt is known and was
    /// not changed by a sweep.
    fn known_skip(&self, slot: DateTime<Utc>) -> Option<Skip> {
        if self.facts.force || self.swept || slot != self.facts.current {
            return None;
        }
        let newest = self.facts.current_slot_newest.as_ref()?;
        let facts = [newest.clone()];
        let request = StartRequest {
            kind: StartKind::Scheduled { force: false },
            scheduled_for: slot,
            slot_attempts: &facts,
            history: RevisionHistory::default(),
            full_scan_eligible: false,
            window: self.current_window?,
        };
        match decide_start(&request) {
            StartDecision::Skip(skip) => Some(skip),
            StartDecision::Start(_) => None,
        }
    }
}
