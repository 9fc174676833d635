//! Vault files, inline `!vault` values, `--secret` files and `env_var` rendering. The vault
//! texts in `tests/fixtures` were written by `tests/vectors/vault_encrypt.py` (Python's
//! `cryptography`), not by the code under test.

use std::path::Path;

use crate::{CONFIG, TARGET, VALID, load_ok, problems, problems_with, project, tap};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_whole_file_vault_decrypts_with_the_secret_file() {
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &fixture("tap_vaulted.yml")),
    ]);
    let secret = dir.path().join("vault-secret");
    std::fs::write(&secret, "fixture-secret\n").unwrap_or_else(|e| panic!("{e}"));
    let project =
        datadiff_config::load(dir.path(), Some(&secret)).unwrap_or_else(|e| panic!("{e}: {:#?}", e.problems()));
    assert_eq!(project.definitions[0].full_check_name, "postgres/payments/public/transfers");
    let password = project.tap("payments").and_then(|t| t.db_conn.clone()).and_then(|c| c.password);
    assert_eq!(password.map(|p| p.expose().to_owned()).as_deref(), Some("whole-file-pw"));
}

#[test]
fn a_vault_file_without_or_with_a_wrong_secret_is_a_clear_error() {
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &fixture("tap_vaulted.yml")),
    ]);
    let found = problems(&dir);
    assert_eq!(found[0].file, "tap_payments.yml");
    assert!(found[0].message.contains("--secret"), "{}", found[0].message);
    let found = problems_with(&dir, Some("not-it"));
    assert!(found[0].message.contains("wrong secret"), "{}", found[0].message);
}

#[test]
fn inline_vault_values_decrypt_and_stay_secret() {
    let vaulted: String = fixture("inline_password.vault").lines().map(|l| format!("    {l}\n")).collect();
    let text = tap("", "", VALID).replace(
        "db_conn: {host: primary, dbname: payments}\n",
        &format!("db_conn:\n  host: primary\n  dbname: payments\n  password: !vault |\n{vaulted}"),
    );
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let options = crate::options(Some("fixture-secret"));
    let project =
        datadiff_config::load_with(dir.path(), &options).unwrap_or_else(|e| panic!("{e}: {:#?}", e.problems()));
    let password = project.tap("payments").and_then(|t| t.db_conn.clone()).and_then(|c| c.password);
    assert_eq!(password.as_ref().map(|p| p.expose()), Some("inline-pw"));
    assert!(!format!("{project:?}").contains("inline-pw"));

    let found = problems(&dir);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "db_conn.password");
    assert_eq!(found[0].line, Some(8));
}

#[test]
fn pipelinewise_docs_vault_example() {
    let text = "$ANSIBLE_VAULT;1.1;AES256
66633736626365386334633463383431353762623562663733623833626637383762343430626163
3330383435323737383766333639616138363235356135360a343735366137393763323636353739
63646266353131363436363965336561323336663032336334323236616237363430613432386335
6631613665336365640a643531363765663631306431363433623536363061316234643737323465
34626363656166373230303162623531643638656665633731333338333464633565
";
    let secret = datadiff_config::Secret::new("M@st3rP@ssw0rd");
    assert_eq!(datadiff_config::decrypt_vault(text, &secret).as_deref(), Ok("This is a string to encrypt"));
    let wrong = datadiff_config::decrypt_vault(text, &datadiff_config::Secret::new("M@st3rP@ssw0rd!"));
    assert_eq!(wrong, Err(datadiff_config::VaultError::WrongSecret));
}

#[test]
fn unset_environment_variables_render_empty_with_a_warning() {
    let text = tap("", "", VALID).replace("host: primary", "host: \"{{ env_var['PAYMENTS_HOST'] }}\"");
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let project = load_ok(&dir);
    let host = project.tap("payments").and_then(|t| t.db_conn.clone()).and_then(|c| c.host);
    assert_eq!(host.as_deref(), Some(""));
    assert_eq!(project.warnings.len(), 1);
    assert!(
        project.warnings[0].contains("PAYMENTS_HOST") && project.warnings[0].starts_with("tap_payments.yml"),
        "{:?}",
        project.warnings
    );
}

#[test]
fn missing_messages_name_the_unset_variables_behind_empty_fields() {
    // The PipelineWise habit: passwords from the environment. Two unset, one set, one blank
    // literal, one defaulted: only the unset ones are named, each beside its field.
    let config = "backend_db:\n  host: localhost\n  user: app\n  \
                  password: \"{{ env_var['DATADIFF_APP_PASSWORD'] }}\"\n  dbname: \"{{ env_var['BACKEND_PASSWORD'] }}\"\n  \
                  ddl_user: ''\n  ddl_password: '{{ env_var[\"DD_DDL_PW\"] }}{{ env_var.DD_DDL_PW2 }}'\n";
    let dir =
        project(&[("config.yml", config), ("target_postgres.yml", TARGET), ("tap_payments.yml", &tap("", "", VALID))]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "backend_db is missing required fields: password (env_var DATADIFF_APP_PASSWORD is unset), ddl_user, \
         ddl_password (env_var DD_DDL_PW, DD_DDL_PW2 are unset)"
    );
    assert!(!found[0].to_string().contains("backend-pw"), "a set variable's value is never printed");

    // An empty default of an unset variable still names it (that is where the empty came
    // from); a literal empty value names nothing.
    let config = "backend_db:\n  host: localhost\n  user: app\n  \
                  password: \"{{ env_var['UNSET_PW'] | default('') }}\"\n  dbname: d\n  ddl_user: o\n  ddl_password: p\n";
    let dir =
        project(&[("config.yml", config), ("target_postgres.yml", TARGET), ("tap_payments.yml", &tap("", "", VALID))]);
    assert_eq!(
        problems(&dir)[0].message,
        "backend_db is missing required fields: password (env_var UNSET_PW is unset)"
    );
}

#[test]
fn missing_timing_names_the_unset_variable_of_an_inherited_default() {
    let valid = VALID.replace("frequency: '0 * * * *'\n", "");
    let text = tap("frequency: \"{{ env_var['DD_FREQUENCY'] }}\"\n", "", &valid);
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let found = problems(&dir);
    assert!(
        found.iter().any(|problem| problem.message
            == "Data-diff timing must be defined on the table or inherited from tap data_diff_defaults: \
                frequency (env_var DD_FREQUENCY is unset)"),
        "{found:#?}"
    );
}

#[test]
fn alert_and_identity_messages_name_unset_variables_too() {
    let config = format!(
        "{CONFIG}alert_handlers:\n  slack: {{token: \"{{{{ env_var['DD_SLACK_TOKEN'] }}}}\"}}\n  \
         victorops: {{base_url: \"{{{{ env_var['SLACK_TOKEN'] }}}}\", routing_key: \"{{{{ env_var['DD_ROUTING'] }}}}\"}}\n"
    );
    let text = tap("", "", VALID).replace("id: payments", "id: \"{{ env_var['DD_TAP_ID'] }}\"");
    let dir = project(&[("config.yml", &config), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let messages: Vec<String> = problems(&dir).into_iter().map(|problem| problem.message).collect();
    for expected in [
        "slack alert handler needs a token: token (env_var DD_SLACK_TOKEN is unset)",
        "victorops alert handler needs base_url and routing_key: routing_key (env_var DD_ROUTING is unset)",
        "id must be a non-empty string, got str (env_var DD_TAP_ID is unset)",
    ] {
        assert!(messages.iter().any(|message| message == expected), "{expected:?} not in {messages:#?}");
    }
}

#[test]
fn secrets_never_reach_problems() {
    let config = CONFIG.replace("password: app-pw", "password: app-pw\n  bogus: 1");
    let dir =
        project(&[("config.yml", &config), ("target_postgres.yml", TARGET), ("tap_payments.yml", &tap("", "", VALID))]);
    let found = problems(&dir);
    assert_eq!(found[0].path, "backend_db.bogus");
    assert!(found.iter().all(|p| !p.to_string().contains("app-pw")));
}
