//! The OS user the server runs as: ourselves, or an unprivileged account when we are root
//! (`initdb` and `postgres` refuse to run as root, and `mariadbd` should not run as root).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::Error;

/// A uid/gid pair to run server programs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// `None` when we are not root (run as ourselves); otherwise the first of `accounts` (tried in
/// order, e.g. the server's own account then `nobody`) found in `/etc/passwd` with a uid other
/// than 0. `probe` is a file we just created: its owner is our effective uid (no `unsafe`
/// `geteuid` call needed).
pub(crate) fn run_as(probe: &Path, accounts: &[&str]) -> Result<Option<RunAs>, Error> {
    let owner = std::fs::metadata(probe).map_err(Error::io(format!("reading {}", probe.display())))?.uid();
    if owner != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(Error::io("reading /etc/passwd"))?;
    accounts.iter().find_map(|name| lookup(&passwd, name)).map(Some).ok_or_else(|| Error::Io {
        action: format!(
            "running as root, but no unprivileged account ({}) exists to run the server as",
            accounts.join(" or ")
        ),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })
}

fn lookup(passwd: &str, name: &str) -> Option<RunAs> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        (uid != 0).then_some(RunAs { uid, gid })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_an_account_and_never_returns_root() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104::/var/lib/postgresql:/bin/bash\n";
        assert_eq!(lookup(passwd, "postgres"), Some(RunAs { uid: 101, gid: 104 }));
        assert_eq!(lookup(passwd, "root"), None);
        assert_eq!(lookup(passwd, "nobody"), None);
    }
}
