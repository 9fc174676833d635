"""datadiff on Airflow: one task per tap, every hour at :05 UTC.

Each task runs one scheduler tick for its tap,

    datadiff run_data_diff_checks --dir PROJECT --target TARGET --tap TAP

and maps datadiff's exit code onto the task's state:

* 0 - every attempt passed (or nothing was due): success.
* 1 - a check FAILed or ERRORed, or an alert could not be delivered: the task fails
  without retries (AirflowFailException). It is a finding about the replica, not a crash;
  datadiff retries the failed slot itself at the next tick, and `datadiff
  rerun_data_diff_check` remediates it once the replica is fixed.
* 2 - configuration, usage, backend connection or schema problem: the task fails and
  Airflow's retries apply (a backend that was briefly away is worth another try).
* anything else (killed by a signal): fails, retried like 2.

The run table and datadiff's log lines go to the task log. Put the DAG file in the DAGs
folder of Airflow 2.4 or newer; set TAPS to the project's taps (`id` and `target` of each
`tap_*.yml`), and DATADIFF_PROJECT_DIR (the project directory on the workers) and
DATADIFF_BIN (default: `datadiff` on the workers' PATH, e.g. from the `datadiff-bin`
wheel in Airflow's virtual environment) in the workers' environment, with the passwords the
project YAML reads through `env_var`.
"""

import os
import subprocess
from datetime import datetime, timedelta

from airflow import DAG
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.operators.python import PythonOperator

# (target id, tap id) of every tap whose checks this DAG runs.
TAPS = [
    ("warehouse", "payments"),
]

PROJECT_DIR = os.environ.get("DATADIFF_PROJECT_DIR", "/srv/pipelinewise")
DATADIFF = os.environ.get("DATADIFF_BIN", "datadiff")


def run_tap_checks(target, tap):
    """One datadiff tick for one tap, its exit code mapped onto the task's state."""
    command = [DATADIFF, "run_data_diff_checks", "--dir", PROJECT_DIR, "--target", target, "--tap", tap]
    print("running:", " ".join(command), flush=True)
    try:
        completed = subprocess.run(command, check=False)
    except OSError as error:
        raise AirflowException(f"datadiff could not be started ({DATADIFF}): {error}") from error
    code = completed.returncode
    if code == 0:
        return
    if code == 1:
        raise AirflowFailException(
            f"datadiff: a check of {target}/{tap} FAILed or ERRORed (exit 1); see the run table above, "
            f"`datadiff report --dir {PROJECT_DIR} failures`, then rerun_data_diff_check once the replica is fixed"
        )
    if code == 2:
        raise AirflowException(
            f"datadiff: configuration, usage or backend problem for {target}/{tap} (exit 2); "
            "the error line above names what to fix"
        )
    raise AirflowException(f"datadiff ended with exit code {code} for {target}/{tap}")


with DAG(
    dag_id="datadiff_checks",
    description="datadiff: prove each tap's replica matches its source, one task per tap",
    schedule="5 * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["datadiff"],
) as dag:
    for target_id, tap_id in TAPS:
        PythonOperator(
            task_id=f"datadiff_{target_id}_{tap_id}",
            python_callable=run_tap_checks,
            op_kwargs={"target": target_id, "tap": tap_id},
        )
