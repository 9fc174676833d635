//! The project directory: which files are read, in which order, and what they add up to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datadiff_diff_core::attempt::{HorizonSource, Reverify};
use datadiff_diff_core::definition::{CheckDefinition, SourceType, TargetType};

use crate::alerts::AlertSettings;
use crate::backend::BackendSettings;
use crate::connection::DbConn;
use crate::definitions::{self, TapContext};
use crate::document::{Document, join};
use crate::error::{Error, Problem};
use crate::extension::{ExtensionFile, Unresolved};
use crate::tls::{self, ConnectionTls};
use crate::yaml::{self, Node};
use crate::{Secret, template, vault};

/// A tap (`tap_*.yml`) as far as datadiff uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tap {
    /// `id`.
    pub id: String,
    /// `type` as written (`tap-postgres`, `tap-mysql`, or any other Singer tap).
    pub type_name: String,
    /// `type` when it is a source datadiff knows.
    pub source_type: Option<SourceType>,
    /// `target`: the id of the target it replicates into.
    pub target_id: String,
    /// `db_conn`, the source connection.
    pub db_conn: Option<DbConn>,
    /// `send_alert`; default true. False silences this tap's failure alerts.
    pub send_alert: bool,
    /// `slack_alert_channel`: an extra Slack channel for this tap's alerts.
    pub slack_alert_channel: Option<String>,
    /// The file it was read from.
    pub file: String,
}

/// A target (`target_*.yml`) as far as datadiff uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `id`.
    pub id: String,
    /// `type` as written.
    pub type_name: String,
    /// `type` when it is a target datadiff knows.
    pub target_type: Option<TargetType>,
    /// `db_conn`, the replica connection.
    pub db_conn: Option<DbConn>,
    /// The file it was read from.
    pub file: String,
}

/// A loaded, validated project.
#[derive(Debug, Clone)]
pub struct Project {
    /// The directory.
    pub dir: PathBuf,
    /// Every definition, sorted by `full_check_name`. Present even without `backend_db`
    /// (see [`Project::ignored_definitions_warning`]).
    pub definitions: Vec<CheckDefinition>,
    /// Taps, sorted by id.
    pub taps: Vec<Tap>,
    /// Targets, sorted by id.
    pub targets: Vec<Target>,
    /// `backend_db`, when configured.
    pub backend: Option<BackendSettings>,
    /// Alert destinations.
    pub alerts: AlertSettings,
    /// `datadiff.yml`'s TLS settings of the scheduled checks' connections, by tap and target.
    pub tls: ConnectionTls,
    /// `datadiff.yml`'s `checks.<name>.reverify` settings, by `full_check_name`: run-time
    /// settings of the tick, outside the definitions (changing them keeps the revision).
    pub reverify: BTreeMap<String, Reverify>,
    /// `datadiff.yml`'s `checks.<name>.horizon` settings, by `full_check_name`: where the
    /// replica says how far it has applied; run-time settings too (the revision is kept).
    pub horizon: BTreeMap<String, HorizonSource>,
    /// Warnings, one line each: unset environment variables, windows shorter than the time
    /// between two fires (`file:line: path: message`), ignored definitions.
    pub warnings: Vec<String>,
}

impl Project {
    /// Whether definitions exist but cannot be used because `config.yml` has no `backend_db`.
    pub fn definitions_ignored(&self) -> bool {
        self.backend.is_none() && !self.definitions.is_empty()
    }

    /// PipelineWise's warning when definitions exist without a backend.
    pub fn ignored_definitions_warning(&self) -> Option<String> {
        self.definitions_ignored().then(|| {
            format!(
                "Ignoring {} data_diff definition(s): config.yml does not define backend_db. Replication is unaffected.",
                self.definitions.len()
            )
        })
    }

    /// The tap with this id.
    pub fn tap(&self, id: &str) -> Option<&Tap> {
        self.taps.iter().find(|tap| tap.id == id)
    }

    /// The target with this id.
    pub fn target(&self, id: &str) -> Option<&Target> {
        self.targets.iter().find(|target| target.id == id)
    }

    /// The definition with this `full_check_name`.
    pub fn definition(&self, full_check_name: &str) -> Option<&CheckDefinition> {
        self.definitions.iter().find(|d| d.full_check_name == full_check_name)
    }
}

/// How to load a project, beyond its directory.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The vault password (already read, e.g. with [`crate::read_secret_file`]).
    pub secret: Option<Secret>,
    /// The environment `env_var` renders; `None` reads the process environment.
    pub env: Option<BTreeMap<String, String>>,
}

/// Loads a PipelineWise project directory: `config.yml`, `tap_*.yml|yaml`,
/// `target_*.yml|yaml` and the optional `datadiff.yml` (not recursive). `secret_file` is the
/// `--secret` file holding the vault password. Every problem of the directory is returned
/// together in [`Error::Invalid`].
pub fn load(dir: impl AsRef<Path>, secret_file: Option<&Path>) -> Result<Project, Error> {
    let secret = secret_file.map(vault::read_secret_file).transpose().map_err(Error::Secret)?;
    load_with(dir, &LoadOptions { secret, env: None })
}

/// The kinds of files datadiff reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FileKind {
    Config,
    Target,
    Tap,
    Extensions,
}

fn file_kind(name: &str) -> Option<FileKind> {
    let yaml = name.ends_with(".yml") || name.ends_with(".yaml");
    match name {
        "config.yml" => Some(FileKind::Config),
        "datadiff.yml" => Some(FileKind::Extensions),
        _ if yaml && name.starts_with("tap_") => Some(FileKind::Tap),
        _ if yaml && name.starts_with("target_") => Some(FileKind::Target),
        _ => None,
    }
}

/// A file read, rendered, decrypted and composed.
struct ReadFile {
    document: Document,
    root: Option<Node>,
}

fn read_file(
    path: &Path,
    name: &str,
    env: &BTreeMap<String, String>,
    secret: Option<&Secret>,
    warnings: &mut Vec<String>,
) -> ReadFile {
    let mut document = Document::new(name);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            document.problem("", None, format!("cannot read file: {error}"));
            return ReadFile { document, root: None };
        }
    };
    let rendered = match template::render(&text, env) {
        Ok(rendered) => rendered,
        Err(error) => {
            document.problem("", error.line, error.message);
            return ReadFile { document, root: None };
        }
    };
    for name_missing in rendered.missing {
        warnings.push(format!(
            "{name}: environment variable {name_missing} is not set; env_var['{name_missing}'] rendered as an empty string"
        ));
    }
    let mut text = rendered.text;
    if !vault::is_vault_text(&text) {
        // The lines of the rendered text are the composed YAML's lines.
        document.unset_lines = rendered.unset_lines;
    }
    if vault::is_vault_text(&text) {
        let Some(secret) = secret else {
            document.problem("", Some(1), "the file is vault-encrypted: pass its password with --secret FILE");
            return ReadFile { document, root: None };
        };
        match vault::decrypt(&text, secret) {
            Ok(plain) => text = plain,
            Err(error) => {
                document.problem("", Some(1), error.to_string());
                return ReadFile { document, root: None };
            }
        }
    }
    let (root, problems) = yaml::compose(&text, secret);
    for problem in problems {
        document.problem(&problem.path, Some(problem.line), problem.message);
    }
    ReadFile { document, root }
}

/// Like [`load`], with the vault password and the environment given.
pub fn load_with(dir: impl AsRef<Path>, options: &LoadOptions) -> Result<Project, Error> {
    let dir = dir.as_ref().to_path_buf();
    let entries = std::fs::read_dir(&dir).map_err(|source| Error::Directory { dir: dir.clone(), source })?;
    let mut files: Vec<(FileKind, String)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Directory { dir: dir.clone(), source })?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        if entry.file_type().map(|t| t.is_file() || t.is_symlink()).unwrap_or(false)
            && let Some(kind) = file_kind(&name)
        {
            files.push((kind, name));
        }
    }
    files.sort();
    let env = options.env.clone().unwrap_or_else(|| std::env::vars().collect());
    let secret = options.secret.as_ref();
    let mut warnings = Vec::new();
    let mut documents: Vec<Document> = Vec::new();

    // config.yml
    let mut backend = None;
    let mut alerts = AlertSettings::default();
    match files.iter().find(|(kind, _)| *kind == FileKind::Config) {
        Some((_, name)) => {
            let ReadFile { mut document, root } = read_file(&dir.join(name), name, &env, secret, &mut warnings);
            if let Some(root) = root.filter(|r| !r.is_null())
                && document.mapping(&root, "").is_some()
            {
                backend = BackendSettings::read(&mut document, &root);
                alerts = AlertSettings::read_pipelinewise(&mut document, &root);
            }
            documents.push(document);
        }
        None => {
            let mut document = Document::new("config.yml");
            document.problem("", None, "config.yml not found in the project directory");
            documents.push(document);
        }
    }

    // Targets.
    let mut targets: Vec<Target> = Vec::new();
    let mut unreadable_target = false;
    for (_, name) in files.iter().filter(|(kind, _)| *kind == FileKind::Target) {
        let ReadFile { mut document, root } = read_file(&dir.join(name), name, &env, secret, &mut warnings);
        if let Some(root) = root {
            let target = read_target(&mut document, &root, name, &dir);
            unreadable_target |= target.is_none();
            if let Some(target) = target {
                match targets.iter().find(|t| t.id == target.id) {
                    Some(first) => {
                        let message = format!("duplicate target id '{}' (also defined in {})", target.id, first.file);
                        document.problem("id", root.get("id").map(|n| n.line), message);
                    }
                    None => targets.push(target),
                }
            }
        } else {
            unreadable_target = true;
            if document.problems.is_empty() {
                document.problem("", None, "the file is empty");
            }
        }
        documents.push(document);
    }
    targets.sort_by(|a, b| a.id.cmp(&b.id));

    // Taps and their definitions.
    let mut taps: Vec<Tap> = Vec::new();
    let mut built: Vec<(CheckDefinition, usize, String, usize)> = Vec::new();
    let mut failed_names: Vec<String> = Vec::new();
    // Taps whose tables were never read (unknown target, duplicate id), and whether some tap
    // file could not be read as far as its id: their problems are reported in their own files,
    // and datadiff.yml entries naming their checks are not reported again as unknown.
    let mut unread_taps: Vec<String> = Vec::new();
    let mut unreadable_tap = false;
    let mut tap_files: Vec<(String, ReadFile)> = Vec::new();
    for (_, name) in files.iter().filter(|(kind, _)| *kind == FileKind::Tap) {
        let read = read_file(&dir.join(name), name, &env, secret, &mut warnings);
        tap_files.push((name.clone(), read));
    }
    // Taps are processed sorted by id (then file name), as PipelineWise iterates them.
    let id_of =
        |read: &ReadFile| read.root.as_ref().and_then(|r| r.get("id")).and_then(Node::as_str).map(str::to_owned);
    tap_files.sort_by(|a, b| (id_of(&a.1), &a.0).cmp(&(id_of(&b.1), &b.0)));
    for (name, ReadFile { mut document, root }) in tap_files {
        let Some(root) = root else {
            if document.problems.is_empty() {
                document.problem("", None, "the file is empty");
            }
            unreadable_tap = true;
            documents.push(document);
            continue;
        };
        let read = read_tap(&mut document, &root, &name, &dir);
        unreadable_tap |= read.is_none();
        if let Some(tap) = read {
            if let Some(first) = taps.iter().find(|t| t.id == tap.id) {
                let message = format!("duplicate tap id '{}' (also defined in {})", tap.id, first.file);
                document.problem("id", root.get("id").map(|n| n.line), message);
                unread_taps.push(tap.id.clone());
            } else {
                match targets.iter().find(|t| t.id == tap.target_id) {
                    None => {
                        let message = format!("tap '{}' references unknown target '{}'", tap.id, tap.target_id);
                        document.problem("target", root.get("target").map(|n| n.line), message);
                        unread_taps.push(tap.id.clone());
                    }
                    Some(target) => {
                        let index = documents.len();
                        for (definition, path, line) in
                            tap_definitions(&mut document, &root, &tap, target, &mut failed_names)
                        {
                            built.push((definition, index, path, line));
                        }
                    }
                }
                taps.push(tap);
            }
        }
        documents.push(document);
    }
    taps.sort_by(|a, b| a.id.cmp(&b.id));

    // Duplicate names: the first keeps its definition.
    let mut definitions: Vec<CheckDefinition> = Vec::new();
    for (definition, index, path, line) in built {
        if definitions.iter().any(|d| d.full_check_name == definition.full_check_name) {
            documents[index].problem(
                &path,
                Some(line),
                format!("Data-diff check names must be unique for each table: '{}'", definition.full_check_name),
            );
            failed_names.push(definition.full_check_name);
        } else {
            definitions.push(definition);
        }
    }
    definitions.sort_by(|a, b| a.full_check_name.cmp(&b.full_check_name));

    // datadiff.yml
    let mut connection_tls = ConnectionTls::default();
    let mut reverify = BTreeMap::new();
    let mut horizon = BTreeMap::new();
    if let Some((_, name)) = files.iter().find(|(kind, _)| *kind == FileKind::Extensions) {
        let ReadFile { mut document, root } = read_file(&dir.join(name), name, &env, secret, &mut warnings);
        if let Some(root) = root {
            let mut extensions = ExtensionFile::read(&mut document, &root, &mut alerts, &dir);
            let read_taps: Vec<&str> = taps.iter().map(|tap| tap.id.as_str()).collect();
            let unresolved =
                Unresolved { names: &failed_names, unread_taps: &unread_taps, read_taps: &read_taps, unreadable_tap };
            extensions.apply(&mut document, &mut definitions, &unresolved);
            reverify = extensions.reverify(&definitions);
            horizon = extensions.horizon(&definitions);
            if let (Some(backend), Some(cert)) = (backend.as_mut(), extensions.sslrootcert) {
                // `system` is libpq's name for the system trust store, not a file.
                let keep = cert.is_absolute() || cert.as_os_str() == "system";
                backend.sslrootcert = Some(if keep { cert } else { dir.join(cert) });
            }
            if let Some(backend) = backend.as_mut() {
                backend.sslcert = extensions.sslcert.take();
                backend.sslkey = extensions.sslkey.take();
            }
            let ssl = |db_conn: &Option<DbConn>| db_conn.as_ref().is_some_and(|conn| conn.ssl);
            let tap_ids: Vec<(&str, bool)> = taps.iter().map(|tap| (tap.id.as_str(), ssl(&tap.db_conn))).collect();
            let target_ids: Vec<(&str, bool)> =
                targets.iter().map(|target| (target.id.as_str(), ssl(&target.db_conn))).collect();
            let known = tls::Known { taps: &tap_ids, targets: &target_ids, unreadable_tap, unreadable_target };
            connection_tls = tls::resolve(&mut document, std::mem::take(&mut extensions.tls), &known);
        }
        documents.push(document);
    }
    // Resolved once, to an absolute path: a relative `--dir` must not be joined again by a
    // reader that resolves against the project directory itself (`p/p/alerts.jsonl`).
    if let Some(log) = alerts.log.as_mut()
        && log.path.is_relative()
    {
        let joined = dir.join(&log.path);
        log.path = std::path::absolute(&joined).unwrap_or(joined);
    }

    let mut problems: Vec<Problem> = Vec::new();
    for document in documents {
        problems.extend(document.problems);
        warnings.extend(document.warnings.iter().map(Problem::to_string));
    }
    if !problems.is_empty() {
        return Err(Error::Invalid { dir, problems });
    }
    let project =
        Project { dir, definitions, taps, targets, backend, alerts, tls: connection_tls, reverify, horizon, warnings };
    let mut project = project;
    if let Some(warning) = project.ignored_definitions_warning() {
        project.warnings.push(warning);
    }
    Ok(project)
}

/// A required non-empty string at the root of a tap or target file.
fn root_string(document: &mut Document, root: &Node, key: &str) -> Option<String> {
    match root.get(key) {
        Some(value) => match value.as_str() {
            Some(text) if !text.is_empty() => Some(text.to_owned()),
            _ => {
                let mut message = format!("{key} must be a non-empty string, got {}", value.type_name());
                if let Some(note) = document.unset_note(Some(value)) {
                    message.push_str(&format!(" ({note})"));
                }
                document.problem(key, Some(value.line), message);
                None
            }
        },
        None => {
            document.problem("", Some(root.line), format!("'{key}' is a required property"));
            None
        }
    }
}

fn read_target(document: &mut Document, root: &Node, file: &str, dir: &Path) -> Option<Target> {
    document.mapping(root, "")?;
    let id = root_string(document, root, "id");
    let type_name = root_string(document, root, "type");
    let postgres = (type_name.as_deref() == Some("target-postgres")).then_some(dir);
    let db_conn = DbConn::read(document, root, "", None, postgres);
    Some(Target {
        target_type: type_name.as_deref().and_then(|t| t.parse().ok()),
        id: id?,
        type_name: type_name?,
        db_conn,
        file: file.to_owned(),
    })
}

fn read_tap(document: &mut Document, root: &Node, file: &str, dir: &Path) -> Option<Tap> {
    document.mapping(root, "")?;
    let id = root_string(document, root, "id");
    let type_name = root_string(document, root, "type");
    let target_id = root_string(document, root, "target");
    let mysql = (type_name.as_deref() == Some("tap-mysql")).then_some(dir);
    let postgres = (type_name.as_deref() == Some("tap-postgres")).then_some(dir);
    let db_conn = DbConn::read(document, root, "", mysql, postgres);
    let send_alert = match root.get("send_alert") {
        None => true,
        Some(value) => value.as_bool().unwrap_or_else(|| {
            document.problem(
                "send_alert",
                Some(value.line),
                format!("send_alert must be a boolean, got {}", value.type_name()),
            );
            true
        }),
    };
    let slack_alert_channel = document.optional_str(root, "", "slack_alert_channel");
    Some(Tap {
        source_type: type_name.as_deref().and_then(|t| t.parse().ok()),
        id: id?,
        type_name: type_name?,
        target_id: target_id?,
        db_conn,
        send_alert,
        slack_alert_channel,
        file: file.to_owned(),
    })
}

/// Every table definition of a tap, with the YAML path and line of its `data_diff` block.
fn tap_definitions(
    document: &mut Document,
    root: &Node,
    tap: &Tap,
    target: &Target,
    failed_names: &mut Vec<String>,
) -> Vec<(CheckDefinition, String, usize)> {
    let defaults = root.get("data_diff_defaults").filter(|d| definitions::check_defaults(document, d));
    let context = TapContext {
        tap_id: &tap.id,
        tap_type: &tap.type_name,
        target_id: &target.id,
        target_type: &target.type_name,
        source_database: tap.db_conn.as_ref().and_then(|c| c.dbname.as_deref()),
        target_database: target.db_conn.as_ref().and_then(|c| c.dbname.as_deref()),
        defaults,
    };
    let mut result = Vec::new();
    let Some(schemas) = root.get("schemas") else { return result };
    let Some(schemas) = schemas.as_seq() else {
        document.problem("schemas", Some(schemas.line), format!("must be a list, got {}", schemas.type_name()));
        return result;
    };
    for (i, schema) in schemas.iter().enumerate() {
        let schema_path = format!("schemas[{i}]");
        let Some(tables) = schema.get("tables") else { continue };
        let Some(tables) = tables.as_seq() else {
            document.problem(
                &join(&schema_path, "tables"),
                Some(tables.line),
                format!("must be a list, got {}", tables.type_name()),
            );
            continue;
        };
        for (j, table) in tables.iter().enumerate() {
            let table_path = format!("{schema_path}.tables[{j}]");
            let Some(data_diff) = table.get("data_diff") else { continue };
            let name = match (
                schema.get("source_schema").and_then(Node::as_str),
                table.get("table_name").and_then(Node::as_str),
            ) {
                (Some(schema_name), Some(table_name)) => {
                    Some(CheckDefinition::full_check_name_of(&target.id, &tap.id, schema_name, table_name))
                }
                _ => None,
            };
            match definitions::table_definition(document, &context, schema, &schema_path, table, &table_path, data_diff)
            {
                Some(definition) => result.push((definition, join(&table_path, "data_diff"), data_diff.line)),
                None => failed_names.extend(name),
            }
        }
    }
    result
}
