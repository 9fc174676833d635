//! Integration tests of the runner against throwaway PostgreSQL clusters (and a throwaway
//! MariaDB server for the tap-mysql route).

mod attempt_checks;
mod attempt_deadlines;
mod attempt_faults;
mod attempt_history;
mod attempt_mysql;
mod attempt_mysql_settings;
#[path = "../../../audit/tests/it/cases.rs"]
mod cases;
mod context;
mod differential;
mod pipeline;
mod row_diff;
mod row_diff_mysql;
mod row_diff_progress;
mod row_diff_segments;
mod row_diff_split;
mod row_diff_values;
mod tick;
mod tick_horizon;
mod tick_processes;
mod tick_remediation;
mod tick_reverify;
mod tls;
