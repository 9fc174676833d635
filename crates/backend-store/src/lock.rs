//! The advisory locks that serialize writers, keyed exactly as PipelineWise keys them.
//!
//! Every lock is transaction-scoped: `pg_advisory_xact_lock(hashtext(<key>))`, released by
//! the commit or rollback of the transaction that took it. The key texts are upstream's
//! (runs note §3.6), so a PipelineWise process and datadiff working on one backend exclude
//! each other: both hash the same text with the same server function.
//!
//! Beside upstream's four, datadiff takes two **session-level** locks of its own
//! ([`SessionLock`]) on a divided `row_diff` window (extension 3): two keys,
//! `pg_try_advisory_lock(hashtext(<class>), hashtext(<object>))`, so they can never meet
//! upstream's one-key locks. They are held by a backend session for as long as its process
//! works on what they name and released by `pg_advisory_unlock` — or by the server when the
//! session ends, which is how a killed process gives its part back.

use std::fmt;

use datadiff_diff_core::attempt::{CheckId, RunId};
use postgres::Transaction;
use uuid::Uuid;

use crate::error::Error;

/// One of the four advisory locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdvisoryLock {
    /// Definition sync (`import_config`): `pipelinewise.data_diff.definition_sync`.
    DefinitionSync,
    /// Starting an attempt (scheduled, forced, retry or remediation) of a check revision:
    /// the check id's text alone.
    Check(CheckId),
    /// A coverage transition (slot state, watermark state and event) of a check revision:
    /// `pipelinewise.data_diff.coverage:<check_id>`.
    Coverage(CheckId),
    /// Delivering a source-index warning: `pipelinewise.data_diff.index_warning.<warning_id>`.
    IndexWarning(Uuid),
}

impl AdvisoryLock {
    /// The text whose `hashtext` is the lock key.
    pub fn key(&self) -> String {
        self.to_string()
    }

    /// Takes the lock for the rest of `transaction`, waiting while another session holds it.
    pub(crate) fn acquire(&self, transaction: &mut Transaction<'_>) -> Result<(), Error> {
        transaction
            .execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&self.key()])
            .map_err(Error::query("taking an advisory lock"))?;
        Ok(())
    }
}

impl fmt::Display for AdvisoryLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdvisoryLock::DefinitionSync => f.write_str("pipelinewise.data_diff.definition_sync"),
            AdvisoryLock::Check(check_id) => write!(f, "{check_id}"),
            AdvisoryLock::Coverage(check_id) => write!(f, "pipelinewise.data_diff.coverage:{check_id}"),
            AdvisoryLock::IndexWarning(warning_id) => {
                write!(f, "pipelinewise.data_diff.index_warning.{}", warning_id.hyphenated())
            }
        }
    }
}

/// One of datadiff's two session-level advisory locks on a divided window (see the module
/// docs): taken with `pg_try_advisory_lock(hashtext(class), hashtext(object))`, never waited
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionLock {
    /// The process finishing a divided attempt: class `datadiff.run_owner`, object the run id
    /// (`<run_id>`). Its starter holds it while it works; whoever takes it once it is free
    /// finishes the attempt.
    RunOwner(RunId),
    /// A process comparing one part of a divided attempt: class `datadiff.run_part`, object
    /// `<run_id>:<part_index>`.
    RunPart {
        /// The attempt.
        run_id: RunId,
        /// The part's place in key order, from 0.
        index: i32,
    },
}

impl SessionLock {
    /// The two texts whose `hashtext` are the lock's keys: class, object.
    pub fn keys(&self) -> (&'static str, String) {
        match self {
            SessionLock::RunOwner(run_id) => ("datadiff.run_owner", run_id.to_string()),
            SessionLock::RunPart { run_id, index } => ("datadiff.run_part", format!("{run_id}:{index}")),
        }
    }

    /// Takes the lock for `client`'s session when no other session holds it: whether it did.
    pub(crate) fn try_acquire(&self, client: &mut postgres::Client) -> Result<bool, Error> {
        let (class, object) = self.keys();
        client
            .query_one("SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))", &[&class, &object])
            .and_then(|row| row.try_get(0))
            .map_err(Error::query("taking a session advisory lock"))
    }

    /// Releases the lock held by `client`'s session.
    pub(crate) fn release(&self, client: &mut postgres::Client) -> Result<(), Error> {
        let (class, object) = self.keys();
        client
            .execute("SELECT pg_advisory_unlock(hashtext($1), hashtext($2))", &[&class, &object])
            .map_err(Error::query("releasing a session advisory lock"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_upstreams_texts() {
        let check = CheckId::new(Uuid::from_u128(0xABCDEF01_2345_6789_ABCD_EF0123456789));
        assert_eq!(AdvisoryLock::DefinitionSync.key(), "pipelinewise.data_diff.definition_sync");
        assert_eq!(AdvisoryLock::Check(check).key(), "abcdef01-2345-6789-abcd-ef0123456789");
        assert_eq!(
            AdvisoryLock::Coverage(check).key(),
            "pipelinewise.data_diff.coverage:abcdef01-2345-6789-abcd-ef0123456789"
        );
        assert_eq!(
            AdvisoryLock::IndexWarning(Uuid::from_u128(0xCA948919_A957_5A1D_BE15_76D9FB044875)).key(),
            "pipelinewise.data_diff.index_warning.ca948919-a957-5a1d-be15-76d9fb044875"
        );
        let run_id = RunId::new(Uuid::from_u128(0xABCDEF01_2345_6789_ABCD_EF0123456789));
        assert_eq!(
            SessionLock::RunOwner(run_id).keys(),
            ("datadiff.run_owner", "abcdef01-2345-6789-abcd-ef0123456789".to_owned())
        );
        assert_eq!(
            SessionLock::RunPart { run_id, index: 7 }.keys(),
            ("datadiff.run_part", "abcdef01-2345-6789-abcd-ef0123456789:7".to_owned())
        );
    }
}
