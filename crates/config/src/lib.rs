//! A PipelineWise project directory turned into validated datadiff check definitions.
//!
//! This crate will read `config.yml`, `tap_*.yml`, `target_*.yml` and the optional
//! `datadiff.yml` (Jinja with `env_var`, ansible-vault secrets, YAML 1.1 as PyYAML reads it),
//! validate every `data_diff` block with PipelineWise's rules and messages, and produce
//! definitions whose canonical JSON and `config_hash` are byte-identical to PipelineWise's
//! (SPEC §2, §10; config note §1).
