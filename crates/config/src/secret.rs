//! Secrets: passwords, tokens and the vault password, wrapped so that neither `Debug` nor
//! `Display` can print them.

use std::fmt;

/// A secret string. `Debug` and `Display` print `***`; [`Secret::expose`] is the only way to
/// read it, so every place that hands it on is visible in the code.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret text, for handing to a connection or an HTTP header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?} {secret} {:?}", Some(&secret)), "Secret(***) *** Some(Secret(***))");
        assert_eq!(secret.expose(), "hunter2");
    }
}
