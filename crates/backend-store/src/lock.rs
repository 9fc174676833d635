//! The advisory locks that serialize writers, keyed exactly as PipelineWise keys them.
//!
//! Every lock is transaction-scoped: `pg_advisory_xact_lock(hashtext(<key>))`, released by
//! the commit or rollback of the transaction that took it. The key texts are upstream's
//! (runs note §3.6), so a PipelineWise process and datadiff working on one backend exclude
//! each other: both hash the same text with the same server function.

use std::fmt;

use datadiff_diff_core::attempt::CheckId;
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
    }
}
