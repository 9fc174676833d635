//! Opening the backend from a project: `backend_db` (config crate) mapped onto the store's
//! [`BackendConfig`] (the store cannot depend on the config crate), and opened within its
//! connect timeout.

use std::time::Duration;

use datadiff_backend_store::{BackendConfig, Error as StoreError, PoolOptions, Store};
use datadiff_config::BackendSettings;

use crate::error::Error;

/// The store's settings for a project's `backend_db` (with `datadiff.yml`'s `sslrootcert`,
/// `sslcert` and `sslkey`).
/// `connect_timeout: 0` waits indefinitely, as libpq.
pub fn backend_config(settings: &BackendSettings) -> BackendConfig {
    BackendConfig {
        host: settings.host.clone(),
        port: settings.port,
        user: settings.user.clone(),
        password: settings.password.expose().to_owned(),
        dbname: settings.dbname.clone(),
        ddl_user: settings.ddl_user.clone(),
        ddl_password: settings.ddl_password.expose().to_owned(),
        sslmode: settings.sslmode,
        sslrootcert: settings.sslrootcert.clone(),
        sslcert: settings.sslcert.clone(),
        sslkey: settings.sslkey.clone(),
        connect_timeout: Duration::from_secs(u64::from(settings.connect_timeout)),
        ..BackendConfig::default()
    }
}

/// Opens the backend ([`Store::open`]), which gives up after its `connect_timeout` — TCP, TLS
/// and authentication together, as libpq's `connect_timeout` — with [`Error::BackendTimeout`].
/// Every other failure is [`Error::Backend`] with the store's typed error as its source.
pub fn open_backend(config: BackendConfig) -> Result<Store, Error> {
    open_backend_with(config, PoolOptions::default())
}

/// [`open_backend`] with a pool of its own size (`--jobs N` needs N sessions): opened once.
pub fn open_backend_with(config: BackendConfig, pool: PoolOptions) -> Result<Store, Error> {
    let address = format!("{}:{}/{}", config.host, config.port, config.dbname);
    Store::open_with(config, pool).map_err(|source| match source {
        StoreError::ConnectTimeout { timeout, .. } => Error::BackendTimeout { address, timeout },
        source => Error::Backend { action: "opening the backend".to_owned(), source },
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use datadiff_config::Secret;

    use super::*;

    #[test]
    fn backend_db_maps_onto_the_store_settings() {
        let settings = BackendSettings {
            host: "backend.internal".into(),
            port: 6432,
            user: "app".into(),
            password: Secret::new("app-pw"),
            dbname: "pipelinewise".into(),
            ddl_user: "owner".into(),
            ddl_password: Secret::new("owner-pw"),
            connect_timeout: 7,
            sslmode: Some(datadiff_diff_core::definition::SslMode::VerifyFull),
            sslrootcert: Some(PathBuf::from("/etc/ca.pem")),
            sslcert: Some(PathBuf::from("/etc/dd.crt")),
            sslkey: Some(PathBuf::from("/etc/dd.key")),
        };
        let config = backend_config(&settings);
        assert_eq!(
            (config.host.as_str(), config.port, config.dbname.as_str()),
            ("backend.internal", 6432, "pipelinewise")
        );
        assert_eq!((config.user.as_str(), config.password.as_str()), ("app", "app-pw"));
        assert_eq!((config.ddl_user.as_str(), config.ddl_password.as_str()), ("owner", "owner-pw"));
        assert_eq!(config.sslmode, Some(datadiff_diff_core::definition::SslMode::VerifyFull));
        assert_eq!(config.sslrootcert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!((config.sslcert, config.sslkey), (settings.sslcert.clone(), settings.sslkey.clone()));
        assert_eq!(config.connect_timeout, Duration::from_secs(7));
        assert_eq!(config.application_name, "pipelinewise-data-diff");
        assert_eq!(config.statement_timeout, None);
        let unset = backend_config(&BackendSettings { sslmode: None, ..settings });
        assert_eq!(unset.sslmode, None, "libpq's default (prefer) when unset");
    }
}
