//! Streaming readers: both sides of a comparison read by key, concurrently, with flat memory.
//!
//! * [`read_columns`] reads a table's columns and their type [`Family`] from the catalog.
//! * [`plan_key`] and [`plan_pair`] choose, once per column, the [`KeyDecoder`] and
//!   [`Decoder`] of each side so that compatible types meet in one canonical
//!   [`datadiff_diff_core::merge::Value`] variant, forgiving only what the source's type cannot
//!   distinguish (see [`decoder`]; every pair is in the table of `docs/comparison.md`,
//!   "Comparing values across types").
//! * [`MySqlRowQuery`] and [`RowStream::mysql`] stream a MySQL/MariaDB source in the
//!   encodings of its PostgreSQL replica's decoders, planned by [`plan_mysql_key`] and
//!   [`plan_mysql_pair`] (the pairs and decisions are in `docs/comparison.md`).
//! * [`RowQuery`] is what one side streams (a `SELECT` ordered by key plus its decoders);
//!   [`RowStream::spawn`] runs it as binary `COPY` on a reader thread over a caller's
//!   [`Session`](crate::Session), [`RowStream::connect`] over a connection of its own to an
//!   [`Endpoint`] (about three times cheaper per row on the client: tokio-postgres with a tap
//!   decoding `CopyData` in place). Either yields [`EncodedRow`]s (the key and each field's
//!   canonical bytes in its batch's shared buffer) for [`datadiff_diff_core::merge`] and
//!   [`datadiff_diff_core::merge::Summary`]; [`EncodedRow::values`] turns one back into
//!   [`datadiff_diff_core::merge::Value`]s. A [`StreamStopper`] stops a reader from another thread.
//!
//! ```no_run
//! use datadiff_diff_core::merge::{merge, Summary};
//! use datadiff_access::stream::{self, RowQuery, RowStream, StreamOptions};
//! use datadiff_access::{Dsn, Environment, Session, SessionSettings, TableName};
//!
//! let environment = Environment::process();
//! let mut source = Session::connect(&Dsn::parse("source", "host=a dbname=app", &environment)?, SessionSettings::audit())?;
//! let mut target = Session::connect(&Dsn::parse("target", "host=b dbname=app", &environment)?, SessionSettings::audit())?;
//! let table: TableName = "public.orders".parse()?;
//! let source_columns = stream::read_columns(&mut source, &table)?;
//! let target_columns = stream::read_columns(&mut target, &table)?;
//! let find = |columns: &[stream::ColumnType], name: &str| columns.iter().find(|c| c.name == name).cloned().unwrap();
//! let (source_key, target_key) = stream::plan_key(&find(&source_columns, "id"), &find(&target_columns, "id"), "target")?;
//! let (source_status, target_status) =
//!     stream::plan_pair(&find(&source_columns, "status"), &find(&target_columns, "status"), "target")?;
//! let source_query = RowQuery::for_table(&table, "id", source_key, vec![("status".into(), source_status)], None);
//! let target_query = RowQuery::for_table(&table, "id", target_key, vec![("status".into(), target_status)], None);
//! let mut summary = Summary::new(20, vec!["status".to_owned()]);
//! std::thread::scope(|scope| {
//!     let source_rows = RowStream::spawn(scope, &mut source, source_query, StreamOptions::default());
//!     let target_rows = RowStream::spawn(scope, &mut target, target_query, StreamOptions::default());
//!     for change in merge(source_rows, target_rows) {
//!         summary.record(&change?);
//!     }
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! println!("{} changed", summary.changed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod column;
mod copy;
mod decode_error;
pub mod decoder;
mod encoded;
mod endpoint;
#[cfg(feature = "mysql")]
mod mysql;
mod reader;
mod tap;

pub use column::{ColumnType, Family, read_columns, read_columns_with};
pub use copy::{CopyParser, Flow, Tuple};
pub use decode_error::DecodeError;
pub use decoder::{Coercions, Decoder, KeyDecoder, plan_key, plan_pair, plan_pair_with};
pub use encoded::{BatchWriter, EncodedRow, Fields};
pub use endpoint::Endpoint;
#[cfg(feature = "mysql")]
pub use mysql::{MySqlColumnType, MySqlEncoder, MySqlFamily, MySqlKey, MySqlRowQuery, plan_mysql_key, plan_mysql_pair};
pub use reader::{RowQuery, RowStream, StreamOptions, StreamStopper};
