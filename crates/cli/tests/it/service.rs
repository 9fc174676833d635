//! `datadiff audit` with libpq connection services (`service=`, `PGSERVICE`) and a replica
//! that requires a client certificate, end to end through `datadiff_cli::run`.

use datadiff_access::Environment;
use datadiff_cli::{Console, Exit, run};
use datadiff_testkit::{Cluster, ClusterOptions, SUPERUSER, shared_cluster};

const TABLE: &str = "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, plan text, notes text); \
                     INSERT INTO public.customers SELECT g, 'u' || g || '@example.com', 'free', NULL FROM generate_series(1, 5) g;";

fn datadiff(environment: Environment, args: &[&str]) -> (Exit, String, String) {
    let (console, captured) = Console::capture(environment);
    let exit = run(std::iter::once("datadiff").chain(args.iter().copied()), console);
    (exit, captured.stdout(), captured.stderr())
}

#[test]
fn audit_reaches_both_sides_through_a_service_file_with_a_client_certificate() {
    let shared = shared_cluster();
    let source = shared.fresh_database().unwrap();
    source.client().unwrap().batch_execute(TABLE).unwrap();
    let cluster =
        Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[]).require_client_certificates()).unwrap();
    cluster.create_role("auditor", "auditor-pw").unwrap();
    let replica = cluster.fresh_database().unwrap();
    replica.client().unwrap().batch_execute(&format!("{TABLE} GRANT SELECT ON public.customers TO auditor;")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let issued = cluster.issue_client_certificate("auditor", dir.path()).unwrap();
    let services = format!(
        "# datadiff's services\n[source]\nhost=127.0.0.1\nport={}\nuser={SUPERUSER}\npassword={}\ndbname={}\n\n\
         [replica]\nhost=localhost\nport={}\nuser=auditor\npassword=auditor-pw\ndbname={}\nsslmode=verify-full\n\
         sslrootcert={}\nsslcert={}\nsslkey={}\n",
        shared.port(),
        shared.superuser_password(),
        source.name(),
        cluster.port(),
        replica.name(),
        cluster.ca_certificate().unwrap().display(),
        issued.certificate.display(),
        issued.key.display(),
    );
    let file = dir.path().join("pg_service.conf");
    std::fs::write(&file, services).unwrap();
    let environment = Environment::from_pairs([
        ("PGSERVICEFILE", file.display().to_string()),
        ("PGSYSCONFDIR", dir.path().join("etc").display().to_string()),
    ]);

    // `service=` in a key=value DSN and `?service=` in a URI.
    let args = ["audit", "--source", "service=source", "--replica", "postgresql://?service=replica"];
    let (exit, stdout, stderr) = datadiff(
        environment.clone(),
        &[&args[..], &["--table", "public.customers", "--cutover-ready", "-vv"]].concat(),
    );
    assert_eq!(exit, Exit::Success, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["status"], "PASS", "{stdout}");
    let connected: Vec<&str> = stderr.lines().filter(|line| line.contains("connected")).collect();
    assert!(connected.iter().any(|line| line.contains("replica") && line.contains("tls=true")), "{stderr}");
    assert!(!stderr.contains("auditor-pw") && !stdout.contains("auditor-pw"));

    // PGSERVICE for a DSN that names none; the DSN's own sslmode wins over the service's,
    // and without the client certificate the replica refuses.
    let environment_replica = environment.clone().with("PGSERVICE", "replica");
    let (exit, _, stderr) = datadiff(
        environment_replica,
        &[
            "audit",
            "--source",
            "service=source",
            "--replica",
            "sslmode=require sslcert=/nonexistent/c.crt sslkey=/nonexistent/c.key",
            "--table",
            "public.customers",
            "--cutover-ready",
        ],
    );
    assert_eq!(exit, Exit::Error, "{stderr}");
    assert!(
        stderr.contains("cannot load the client certificate /nonexistent/c.crt for the replica connection"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_service_is_a_usage_error_naming_it_and_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services.conf");
    std::fs::write(&file, "[other]\nhost=h\n").unwrap();
    let environment = Environment::from_pairs([
        ("PGSERVICEFILE", file.display().to_string()),
        ("PGSYSCONFDIR", dir.path().join("etc").display().to_string()),
    ]);
    let (exit, _, stderr) = datadiff(
        environment,
        &["audit", "--source", "service=sales", "--replica", "service=other", "--table", "public.t", "--cutover-ready"],
    );
    assert_eq!(exit, Exit::Error, "{stderr}");
    assert!(stderr.starts_with("error: the source connection names service \"sales\""), "{stderr}");
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains(&dir.path().join("etc/pg_service.conf").display().to_string()), "{stderr}");
}
