//! Window bounds bound as a prepared statement's parameters, each in the type the server
//! inferred for it (the doctor's `EXPLAIN`s and its key-uniqueness scan).

use chrono::{DateTime, Utc};
use postgres::types::{ToSql, Type};

/// A parameter the server typed as something no window bound is.
#[derive(Debug, thiserror::Error)]
#[error("cannot bind a window bound of type {0}")]
pub(crate) struct UnboundParameter(pub(crate) String);

/// `bounds` as `statement`'s parameters, in order: a `timestamptz` as it is, a `timestamp` as
/// its UTC wall time, a `date` as its UTC date. Parameters beyond `bounds` are left unbound
/// (the server then refuses the statement, naming the count).
pub(crate) fn bind(
    statement: &postgres::Statement,
    bounds: &[DateTime<Utc>],
) -> Result<Vec<Box<dyn ToSql + Sync>>, UnboundParameter> {
    statement
        .params()
        .iter()
        .zip(bounds)
        .map(|(parameter, bound)| -> Result<Box<dyn ToSql + Sync>, UnboundParameter> {
            match *parameter {
                Type::TIMESTAMPTZ => Ok(Box::new(*bound)),
                Type::TIMESTAMP => Ok(Box::new(bound.naive_utc())),
                Type::DATE => Ok(Box::new(bound.date_naive())),
                ref other => Err(UnboundParameter(other.to_string())),
            }
        })
        .collect()
}

/// The parameters as the driver takes them.
pub(crate) fn as_params(bound: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    bound.iter().map(|param| param.as_ref() as &(dyn ToSql + Sync)).collect()
}
