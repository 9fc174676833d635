//! The access layer's error type: every way talking to a source or replica database can go
//! wrong — its connection settings ([`datadiff_connect::Error`]), connecting, a statement, the
//! catalog, a stream.
//!
//! Errors name what identifies the problem (the role, the table, the column, the key) and
//! keep the cause with `#[source]`; `Display` says one layer and never repeats the cause.
//! No variant carries a row value, a DSN or a password.

/// An error of source or replica access.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection settings could not be read: the connection string, the password
    /// file, the connection service file, or the TLS files they name (see
    /// [`datadiff_connect::Error`]; its text is this error's text).
    #[error(transparent)]
    Settings(#[from] datadiff_connect::Error),
    /// Connecting failed (refused, timed out, authentication failed...).
    #[error("cannot connect to the {role} database")]
    Connect {
        /// Which connection.
        role: String,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },
    /// Connecting (TCP, TLS and authentication together) took longer than the connect
    /// timeout.
    #[error("cannot connect to the {role} database: no answer within the {seconds} s connect timeout")]
    ConnectTimeout {
        /// Which connection.
        role: String,
        /// The timeout.
        seconds: f64,
    },
    /// The connecting thread could not be started.
    #[error("cannot start a thread to connect to the {role} database")]
    ConnectThread {
        /// Which connection.
        role: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A statement failed.
    #[error("{action} failed on the {role} database")]
    Query {
        /// Which connection.
        role: String,
        /// What was being done, e.g. `counting rows of public.orders`.
        action: String,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },
    /// A table named on the command line does not exist (or is not visible to the role).
    #[error("table {table} does not exist on the {role} database (or the role cannot see it)")]
    TableNotFound {
        /// Which connection.
        role: String,
        /// The table, as `schema.table`.
        table: String,
    },
    /// A column named on the command line is not in a table.
    #[error("column {column} does not exist in {table} on the {role} database")]
    ColumnNotFound {
        /// Which connection.
        role: String,
        /// The table.
        table: String,
        /// The missing column.
        column: String,
    },
    /// A column's type has no canonical comparison (json, arrays, intervals, ...).
    #[error("column {column} has type {type_name} on the {role} database, which datadiff cannot compare ({pair})")]
    UnsupportedType {
        /// Which connection has the type (`source`, or the target's name).
        role: String,
        /// The column.
        column: String,
        /// The type as `format_type` prints it.
        type_name: String,
        /// Both sides' types: `<type> on the source, <type> on the <target side>`.
        pair: String,
    },
    /// The two sides of a column pair have types that do not compare.
    #[error("column {column} cannot be compared: {source_type} on the source, {target_type} on the {target_role}")]
    IncompatibleTypes {
        /// The column.
        column: String,
        /// What the target side is called (`target`, `replica`).
        target_role: String,
        /// The source column's type.
        source_type: String,
        /// The target column's type.
        target_type: String,
    },
    /// The key column's types are not one key family on both sides (integers, uuid, text,
    /// dates and timestamps: see [`crate::stream::decoder::plan_key`]).
    #[error(
        "key column {column} must be of one integer, uuid, text, date or timestamp type family on both sides \
         ({source_type} on the source, {target_type} on the {target_role})"
    )]
    KeyType {
        /// The key column.
        column: String,
        /// What the target side is called.
        target_role: String,
        /// The source key's type.
        source_type: String,
        /// The target key's type.
        target_type: String,
    },
    /// A row's key is NULL.
    #[error("the {role} stream has a NULL key in column {column}")]
    NullKey {
        /// Which connection.
        role: String,
        /// The key column.
        column: String,
    },
    /// A streamed row could not be decoded (the message never contains the value).
    #[error("cannot decode column {column} of the {role} stream: {problem}")]
    Decode {
        /// Which connection.
        role: String,
        /// The column (or `COPY header`).
        column: String,
        /// What was wrong, without the value.
        problem: crate::stream::DecodeError,
    },
    /// Reading a COPY stream failed.
    #[error("reading the {role} stream failed")]
    Stream {
        /// Which connection.
        role: String,
        /// The I/O error of the COPY reader (wraps the driver's error).
        #[source]
        source: std::io::Error,
    },
    /// A reader could not open its own connection to the server (before authentication).
    #[error("cannot connect the {role} stream")]
    StreamConnect {
        /// Which connection.
        role: String,
        /// The socket or TLS error.
        #[source]
        source: std::io::Error,
    },
    /// A reader thread stopped without saying why (it panicked).
    #[error("the {role} reader thread stopped unexpectedly")]
    ReaderLost {
        /// Which connection.
        role: String,
    },
    /// A key arrived twice on one side.
    #[error("duplicate key {key} in {table} on the {role} database: the key column must be unique")]
    DuplicateKey {
        /// Which connection.
        role: String,
        /// The table.
        table: String,
        /// The duplicated key.
        key: String,
    },
    /// A key arrived after a greater one: the database does not order keys as the merge does.
    #[error("{table} on the {role} database is not in key order: {key} arrived after {previous}")]
    OutOfOrder {
        /// Which connection.
        role: String,
        /// The table.
        table: String,
        /// The key before.
        previous: String,
        /// The smaller key after it.
        key: String,
    },
    /// A MySQL or MariaDB stream failed (connecting, its session statements or the query);
    /// the message names the side and holds a server error's message only.
    #[error("{message}")]
    MySql {
        /// Which connection.
        role: String,
        /// The one-line reason.
        message: String,
    },
    /// A side was asked for segment hashes of rows the comparison cannot hash (a caller that
    /// did not pass [`crate::compare::Comparison::unhashable`]).
    #[error("the {role} rows cannot be hashed by segment")]
    NotHashable {
        /// Which connection.
        role: String,
    },
    /// A server's answer was not in the form its statement writes (a packed segment answer
    /// of a wrong length).
    #[error("{what}: the {role} database answered in an unexpected form")]
    Protocol {
        /// Which connection.
        role: String,
        /// Which answer.
        what: &'static str,
    },
    /// The merge stopped for a reason not listed above.
    #[error("the merge stopped: {message}")]
    Merge {
        /// The merge's message (keys and sides only).
        message: String,
    },
    /// A split point read from a side is not a key of the split's kind (see
    /// [`crate::split`]).
    #[error("the {role} database returned a split point of {table} that is not a key")]
    SplitPoint {
        /// Which connection.
        role: String,
        /// The table split.
        table: String,
    },
}

impl Error {
    /// A closure turning a driver error into [`Error::Query`] for `role` doing `action`.
    pub fn query(role: &str, action: impl Into<String>) -> impl FnOnce(postgres::Error) -> Error {
        let role = role.to_owned();
        let action = action.into();
        move |source| Error::Query { role, action, source }
    }
}
