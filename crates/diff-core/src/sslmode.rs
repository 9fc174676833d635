//! libpq's `sslmode` vocabulary, shared by the configuration, the backend store and source
//! and replica access (each decides what a mode means for its connections; the names are
//! one).

use std::fmt;
use std::str::FromStr;

/// libpq's `sslmode` values, in libpq's spelling.
///
/// ```
/// use datadiff_diff_core::definition::SslMode;
///
/// assert_eq!("verify-full".parse::<SslMode>(), Ok(SslMode::VerifyFull));
/// assert_eq!(SslMode::Allow.to_string(), "allow");
/// assert!("verify_full".parse::<SslMode>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Plaintext first; TLS only when the server refuses a plaintext login.
    Allow,
    /// TLS when the server offers it, without verification; else plaintext (libpq's default).
    Prefer,
    /// TLS always, without verification (libpq: as `verify-ca` when a root file is set).
    Require,
    /// TLS, the certificate must chain to a trusted root.
    VerifyCa,
    /// TLS, trusted chain and matching host name.
    VerifyFull,
}

impl SslMode {
    /// The libpq spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// A text that is not one of libpq's `sslmode` values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full; got '{0}'")]
pub struct UnknownSslMode(pub String);

impl FromStr for SslMode {
    type Err = UnknownSslMode;

    fn from_str(text: &str) -> Result<SslMode, UnknownSslMode> {
        match text {
            "disable" => Ok(SslMode::Disable),
            "allow" => Ok(SslMode::Allow),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            other => Err(UnknownSslMode(other.to_owned())),
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_its_libpq_spelling() {
        for mode in [
            SslMode::Disable,
            SslMode::Allow,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ] {
            assert_eq!(mode.as_str().parse::<SslMode>(), Ok(mode));
        }
        assert_eq!("Require".parse::<SslMode>(), Err(UnknownSslMode("Require".into())));
    }
}
