//! ansible-vault decryption (format 1.1 and 1.2, cipher AES256), for whole files and inline
//! `!vault |` values, and the vault password from `--secret FILE`.
//!
//! The format: a header line `$ANSIBLE_VAULT;1.1;AES256` (1.2 adds `;<vault id>`), then hex
//! lines which decode to three hex fields separated by newlines: salt, HMAC, ciphertext.
//! PBKDF2-HMAC-SHA256 (10,000 iterations) derives 80 bytes from the password and salt: the
//! AES-256 key, the HMAC-SHA256 key and the 16-byte initial counter. The HMAC of the
//! ciphertext is checked in constant time before anything is decrypted (AES-256-CTR, big-endian
//! 128-bit counter), then PKCS#7 padding is removed.

use std::path::Path;
use std::process::Command;

use aes::Aes256;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::Secret;

const HEADER: &str = "$ANSIBLE_VAULT;";
const ITERATIONS: u32 = 10_000;

/// Why a vault text does not decrypt. Never contains the password or the plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VaultError {
    /// The header is not `$ANSIBLE_VAULT;1.1;AES256` or `…;1.2;AES256;<id>`.
    #[error("unsupported vault header '{header}' (expected $ANSIBLE_VAULT;1.1;AES256)")]
    Header {
        /// The first line.
        header: String,
    },
    /// The body is not the hex encoding of salt, HMAC and ciphertext.
    #[error("malformed vault body: {reason}")]
    Body {
        /// What is wrong.
        reason: &'static str,
    },
    /// The HMAC does not match: the secret is wrong (or the text was altered).
    #[error("vault decryption failed: wrong secret or altered vault text (HMAC mismatch)")]
    WrongSecret,
    /// The plaintext is not UTF-8.
    #[error("decrypted vault text is not UTF-8")]
    NotUtf8,
}

/// Whether `text` is a vault text (its first non-blank line starts with `$ANSIBLE_VAULT;`).
pub(crate) fn is_vault_text(text: &str) -> bool {
    text.trim_start().starts_with(HEADER)
}

/// Decrypts a vault text with `secret`.
pub fn decrypt(text: &str, secret: &Secret) -> Result<String, VaultError> {
    let mut lines = text.trim().lines();
    let header = lines.next().unwrap_or_default().trim();
    let fields: Vec<&str> = header.split(';').collect();
    let supported = fields.len() >= 3
        && fields[0] == "$ANSIBLE_VAULT"
        && matches!(fields[1], "1.1" | "1.2")
        && fields[2].eq_ignore_ascii_case("AES256");
    if !supported {
        return Err(VaultError::Header { header: header.chars().take(80).collect() });
    }
    let hex: String = lines.flat_map(|line| line.chars().filter(|c| !c.is_whitespace())).collect();
    let body = decode_hex(&hex).ok_or(VaultError::Body { reason: "not hexadecimal" })?;
    let body = String::from_utf8(body).map_err(|_| VaultError::Body { reason: "not hexadecimal fields" })?;
    let parts: Vec<&str> = body.split('\n').collect();
    let [salt, tag, ciphertext] = parts.as_slice() else {
        return Err(VaultError::Body { reason: "expected salt, HMAC and ciphertext" });
    };
    let salt = decode_hex(salt.trim()).ok_or(VaultError::Body { reason: "salt is not hexadecimal" })?;
    let tag = decode_hex(tag.trim()).ok_or(VaultError::Body { reason: "HMAC is not hexadecimal" })?;
    let mut data = decode_hex(ciphertext.trim()).ok_or(VaultError::Body { reason: "ciphertext is not hexadecimal" })?;

    let mut derived = [0u8; 80];
    pbkdf2::pbkdf2_hmac::<Sha256>(secret.expose().as_bytes(), &salt, ITERATIONS, &mut derived);
    let (aes_key, rest) = derived.split_at(32);
    let (hmac_key, iv) = rest.split_at(32);

    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(hmac_key).map_err(|_| VaultError::WrongSecret)?;
    mac.update(&data);
    let expected = mac.finalize().into_bytes();
    if tag.len() != expected.len() || !bool::from(expected.as_slice().ct_eq(&tag)) {
        return Err(VaultError::WrongSecret);
    }

    let mut cipher = ctr::Ctr128BE::<Aes256>::new_from_slices(aes_key, iv).map_err(|_| VaultError::WrongSecret)?;
    cipher.apply_keystream(&mut data);
    let padding = usize::from(*data.last().ok_or(VaultError::Body { reason: "empty ciphertext" })?);
    if padding == 0
        || padding > 16
        || padding > data.len()
        || !data[data.len() - padding..].iter().all(|&b| usize::from(b) == padding)
    {
        return Err(VaultError::Body { reason: "bad padding" });
    }
    data.truncate(data.len() - padding);
    String::from_utf8(data).map_err(|_| VaultError::NotUtf8)
}

/// Why the `--secret` file gave no password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretFileError {
    /// The file cannot be read.
    #[error("cannot read secret file {path}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The executable secret file could not be run, or failed.
    #[error("secret script {path} failed")]
    Script {
        /// The script.
        path: String,
        /// What went wrong (its exit status, never its output).
        reason: String,
    },
}

/// Reads the vault password from `--secret FILE`: an executable file is run and its standard
/// output used (as Ansible does), otherwise the file's content; surrounding whitespace is
/// stripped either way.
pub fn read_secret_file(path: &Path) -> Result<Secret, SecretFileError> {
    let shown = path.display().to_string();
    let metadata = std::fs::metadata(path).map_err(|source| SecretFileError::Read { path: shown.clone(), source })?;
    let bytes = if is_executable(&metadata) {
        let output = run_script(path)
            .map_err(|e| SecretFileError::Script { path: shown.clone(), reason: e.kind().to_string() })?;
        if !output.status.success() {
            return Err(SecretFileError::Script { path: shown, reason: output.status.to_string() });
        }
        output.stdout
    } else {
        std::fs::read(path).map_err(|source| SecretFileError::Read { path: shown.clone(), source })?
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(Secret::new(text.trim()))
}

/// Runs the secret script. A script written just before (tests, provisioning) can briefly be
/// "text file busy" while another thread forks: retried a few times.
fn run_script(path: &Path) -> std::io::Result<std::process::Output> {
    const ETXTBSY: i32 = 26;
    let mut attempts = 0;
    loop {
        match Command::new(path).stdin(std::process::Stdio::null()).output() {
            Err(error) if error.raw_os_error() == Some(ETXTBSY) && attempts < 20 => {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    false
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).unwrap_or(0)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// PipelineWise's documented example (password `M@st3rP@ssw0rd`).
    pub(crate) const DOCS_EXAMPLE: &str = "$ANSIBLE_VAULT;1.1;AES256
66633736626365386334633463383431353762623562663733623833626637383762343430626163
3330383435323737383766333639616138363235356135360a343735366137393763323636353739
63646266353131363436363965336561323336663032336334323236616237363430613432386335
6631613665336365640a643531363765663631306431363433623536363061316234643737323465
34626363656166373230303162623531643638656665633731333338333464633565
";

    #[test]
    fn pipelinewise_docs_example_decrypts() {
        assert_eq!(decrypt(DOCS_EXAMPLE, &Secret::new("M@st3rP@ssw0rd")), Ok("This is a string to encrypt".to_owned()));
    }

    #[test]
    fn a_wrong_secret_is_a_clear_error() {
        let error = decrypt(DOCS_EXAMPLE, &Secret::new("wrong"));
        assert_eq!(error, Err(VaultError::WrongSecret));
        assert!(error.err().map(|e| e.to_string()).unwrap_or_default().contains("wrong secret"));
    }

    #[test]
    fn malformed_texts_are_errors_not_panics() {
        let secret = Secret::new("x");
        assert!(matches!(decrypt("$ANSIBLE_VAULT;1.0;AES\n00", &secret), Err(VaultError::Header { .. })));
        assert!(matches!(decrypt("$ANSIBLE_VAULT;1.1;AES256\nzz", &secret), Err(VaultError::Body { .. })));
        assert!(matches!(decrypt("$ANSIBLE_VAULT;1.1;AES256\n616263", &secret), Err(VaultError::Body { .. })));
        assert!(matches!(decrypt("$ANSIBLE_VAULT;1.1;AES256\n", &secret), Err(VaultError::Body { .. })));
        // Altered ciphertext: the HMAC catches it.
        let altered = DOCS_EXAMPLE.replace("34626363", "34626364");
        assert_eq!(decrypt(&altered, &Secret::new("M@st3rP@ssw0rd")), Err(VaultError::WrongSecret));
    }

    #[test]
    fn vault_1_2_headers_with_an_id_are_accepted() {
        let labelled = DOCS_EXAMPLE.replace("$ANSIBLE_VAULT;1.1;AES256", "$ANSIBLE_VAULT;1.2;AES256;prod");
        assert_eq!(decrypt(&labelled, &Secret::new("M@st3rP@ssw0rd")), Ok("This is a string to encrypt".to_owned()));
    }

    #[test]
    fn secret_files_are_stripped_and_scripts_run() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let plain = dir.path().join("secret");
        std::fs::write(&plain, "  M@st3rP@ssw0rd\n\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_secret_file(&plain).map(|s| s.expose().to_owned()).ok(), Some("M@st3rP@ssw0rd".to_owned()));

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let script = dir.path().join("secret.sh");
            std::fs::write(&script, "#!/bin/sh\necho 'from-script'\n").unwrap_or_else(|e| panic!("{e}"));
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read_secret_file(&script).map(|s| s.expose().to_owned()).ok(), Some("from-script".to_owned()));
            let failing = dir.path().join("failing.sh");
            std::fs::write(&failing, "#!/bin/sh\nexit 3\n").unwrap_or_else(|e| panic!("{e}"));
            std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(matches!(read_secret_file(&failing), Err(SecretFileError::Script { .. })));
        }
        assert!(matches!(read_secret_file(&dir.path().join("missing")), Err(SecretFileError::Read { .. })));
    }
}
