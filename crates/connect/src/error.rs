//! The connection crate's error type: a connection string, the password file, the connection
//! service file or the TLS files they name could not be read or used.
//!
//! Errors name what identifies the problem (the connection's role, the file, the line, the
//! parameter) and keep the cause with `#[source]`; `Display` says one layer and never repeats
//! the cause. No variant carries a DSN, a password or another parameter's value.

use std::path::PathBuf;

/// An error of connection settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A connection string could not be parsed. The DSN itself is never shown: it may hold
    /// a password.
    #[error("the {role} connection string is not a valid libpq DSN (URI or key=value)")]
    Dsn {
        /// Which connection (`source`, `replica`, ...).
        role: String,
        /// The parser's complaint (names the parameter, never its value).
        #[source]
        source: postgres::Error,
    },
    /// A connection string asks for something this version does not support.
    #[error("the {role} connection string: {problem}")]
    DsnUnsupported {
        /// Which connection.
        role: String,
        /// What is not supported.
        problem: String,
    },
    /// The password file exists but could not be read.
    #[error("cannot read the password file {}", path.display())]
    Passfile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The service a DSN (`service=`) or `PGSERVICE` names is in no service file.
    #[error(
        "the {role} connection names service {service:?}, which is not defined in {}",
        files.iter().map(|file| file.display().to_string()).collect::<Vec<_>>().join(" or ")
    )]
    ServiceNotFound {
        /// Which connection.
        role: String,
        /// The service's name.
        service: String,
        /// The files looked in, in order.
        files: Vec<PathBuf>,
    },
    /// A service file exists but could not be read.
    #[error("cannot read the service file {}", path.display())]
    ServiceFileRead {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line of the service section read is not valid.
    #[error("{}:{line}: {problem}", path.display())]
    ServiceFile {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// What is wrong (names the key, never a value).
        problem: String,
    },
    /// The parameters of a service are not valid connection parameters.
    #[error("the {role} connection's service {service:?} in {} has invalid parameters", path.display())]
    ServiceParams {
        /// Which connection.
        role: String,
        /// The service's name.
        service: String,
        /// The file it was read from.
        path: PathBuf,
        /// The parser's complaint (names the parameter, never its value).
        #[source]
        source: postgres::Error,
    },
    /// TLS could not be set up.
    #[error("cannot set up TLS for the {role} connection")]
    Tls {
        /// Which connection.
        role: String,
        /// OpenSSL's error.
        #[source]
        source: openssl::error::ErrorStack,
    },
    /// The root certificate file could not be loaded.
    #[error("cannot load the root certificates {} for the {role} connection", path.display())]
    RootCertificate {
        /// Which connection.
        role: String,
        /// The `sslrootcert` file.
        path: PathBuf,
        /// What was wrong with it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The client certificate or its key could not be loaded.
    #[error("cannot load the client certificate {} for the {role} connection", path.display())]
    ClientCertificate {
        /// Which connection.
        role: String,
        /// The `sslcert` or `sslkey` file.
        path: PathBuf,
        /// What was wrong with it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// `error` and its causes on one line, joined by `: ` (a summary's reason, a log field).
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
