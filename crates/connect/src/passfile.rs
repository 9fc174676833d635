//! The libpq password file (`~/.pgpass` or `PGPASSFILE`): `host:port:database:user:password`
//! lines, the first match wins.
//!
//! Matching follows libpq: `*` in one of the first four fields matches anything; `\` escapes
//! `:` and `\`; lines starting with `#` are comments; a Unix-socket connection to a default
//! socket directory also matches the host name `localhost`; a file readable by group or
//! others is ignored (with a warning), as libpq ignores it.

use std::io::ErrorKind;
use std::path::Path;

use crate::error::Error;

/// What a password-file line is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassfileQuery<'a> {
    /// The host as given (a name, an address, or a socket directory path).
    pub host: &'a str,
    /// The port, as text.
    pub port: &'a str,
    /// The database name.
    pub database: &'a str,
    /// The user name.
    pub user: &'a str,
}

/// Socket directories libpq builds commonly use as their default; a connection through one
/// of them also matches a `localhost` line.
const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// Looks up a password in the file at `path`. A missing file is `Ok(None)`; a file with
/// group or world permissions is ignored (`Ok(None)`, with a warning), as libpq does.
pub fn lookup(path: &Path, query: &PassfileQuery<'_>) -> Result<Option<String>, Error> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Passfile { path: path.to_owned(), source }),
    };
    if !metadata.is_file() {
        tracing::warn!(path = %path.display(), "the password file is not a plain file; ignored");
        return Ok(None);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                "the password file has group or world access; permissions should be u=rw (0600) or less; ignored"
            );
            return Ok(None);
        }
    }
    let text = std::fs::read_to_string(path).map_err(|source| Error::Passfile { path: path.to_owned(), source })?;
    Ok(find(&text, query))
}

/// The password of the first line of `text` matching `query`.
pub(crate) fn find(text: &str, query: &PassfileQuery<'_>) -> Option<String> {
    let localhost_alias = query.host.is_empty() || DEFAULT_SOCKET_DIRS.contains(&query.host.trim_end_matches('/'));
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(fields) = split(line) else { continue };
        let [host, port, database, user, password] = fields;
        let host_matches = host == "*" || host == query.host || (localhost_alias && host == "localhost");
        let matches = |field: &str, value: &str| field == "*" || field == value;
        if host_matches
            && matches(&port, query.port)
            && matches(&database, query.database)
            && matches(&user, query.user)
        {
            return Some(password);
        }
    }
    None
}

/// Splits a line into its five unescaped fields; `None` when it has fewer than five. The
/// password is the rest of the line (colons in it need no escape, as in libpq).
fn split(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = Vec::with_capacity(5);
    let mut current = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(escaped) = chars.next() {
                    current.push(escaped);
                }
            }
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    if fields.len() < 4 {
        return None;
    }
    fields.push(current);
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<'a>(host: &'a str, port: &'a str, database: &'a str, user: &'a str) -> PassfileQuery<'a> {
        PassfileQuery { host, port, database, user }
    }

    #[test]
    fn first_matching_line_wins_and_stars_match_anything() {
        let text = "# comment\nother:5432:*:*:nope\ndb.example:5433:sales:app:first\n*:*:*:app:second\n";
        assert_eq!(find(text, &query("db.example", "5433", "sales", "app")).as_deref(), Some("first"));
        assert_eq!(find(text, &query("db.example", "5432", "sales", "app")).as_deref(), Some("second"));
        assert_eq!(find(text, &query("db.example", "5432", "sales", "bob")), None);
    }

    #[test]
    fn escapes_and_colons_in_passwords() {
        let text = "h\\:x:5432:d\\\\b:u:pa:ss\\:w\\\\rd\n";
        assert_eq!(find(text, &query("h:x", "5432", "d\\b", "u")).as_deref(), Some("pa:ss:w\\rd"));
    }

    #[test]
    fn default_socket_directories_match_localhost_lines() {
        let text = "localhost:5432:*:*:local\n/srv/sock:5432:*:*:custom\n";
        assert_eq!(find(text, &query("/var/run/postgresql", "5432", "d", "u")).as_deref(), Some("local"));
        assert_eq!(find(text, &query("/srv/sock", "5432", "d", "u")).as_deref(), Some("custom"));
        assert_eq!(find(text, &query("/other", "5432", "d", "u")), None);
    }

    #[test]
    fn short_lines_are_skipped() {
        assert_eq!(find("a:b:c\n*:*:*:*:ok\n", &query("x", "1", "d", "u")).as_deref(), Some("ok"));
    }

    #[test]
    fn a_world_readable_file_is_ignored_and_a_private_one_is_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(lookup(&path, &query("h", "1", "d", "u")).unwrap(), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(lookup(&path, &query("h", "1", "d", "u")).unwrap().as_deref(), Some("pw"));
        assert_eq!(lookup(&dir.path().join("absent"), &query("h", "1", "d", "u")).unwrap(), None);
    }
}
