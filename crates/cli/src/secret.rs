//! Redaction of secrets in text the CLI did not write itself (argument-parser messages quote
//! the arguments they reject, and a misplaced DSN may carry a password).

/// Replaces the password of `scheme://user:password@host` URIs and the value of
/// `password=...` pairs with `***`.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_end = after.find(['/', '?', ' ', '\'', '"', '\n']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at_sign), Some(colon)) if colon < at_sign => {
                out.push_str(&authority[..=colon]);
                out.push_str("***");
                out.push_str(&authority[at_sign..]);
            }
            _ => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    redact_pairs(&out)
}

fn redact_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.to_ascii_lowercase().find("password=") {
        let (before, after) = rest.split_at(at + "password=".len());
        out.push_str(before);
        out.push_str("***");
        let end = if let Some(quoted) = after.strip_prefix('\'') {
            quoted.find('\'').map_or(after.len(), |close| close + 2)
        } else {
            after.find([' ', '&', '\'', '"', '\n']).unwrap_or(after.len())
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_uris_and_pairs_are_redacted() {
        assert_eq!(
            redact("unexpected argument 'postgresql://app:s3cr3t@db:5432/x?sslmode=require' found"),
            "unexpected argument 'postgresql://app:***@db:5432/x?sslmode=require' found"
        );
        assert_eq!(redact("host=h password=s3cr3t user=u"), "host=h password=*** user=u");
        assert_eq!(redact("host=h password='a b' user=u"), "host=h password=*** user=u");
        assert_eq!(redact("postgres://x?password=s3cr3t&a=1"), "postgres://x?password=***&a=1");
        assert_eq!(redact("postgresql://app@db/x and no secret"), "postgresql://app@db/x and no secret");
    }
}
