#!/usr/bin/env python3
"""Checks docs/deploy/airflow_datadiff.py without installing Airflow.

1. It compiles (py_compile) and imports only what it should (ast).
2. It is loaded against a stand-in for the three Airflow names it uses (DAG,
   PythonOperator, the two exceptions), which records the DAG and its tasks: one task per
   TAPS entry, with the tick's command line.
3. Its callable is run against stand-in `datadiff` programs that exit 0, 1, 2 and 3, and
   must map them: 0 returns, 1 raises AirflowFailException (no retries), 2 and 3 raise
   AirflowException but not AirflowFailException (retried).

Usage: check_airflow_dag.py PATH [DATADIFF]. With DATADIFF (a built binary), the command
line the task builds is also checked against datadiff's own parser (`--help` appended).
"""

import ast
import os
import py_compile
import stat
import subprocess
import sys
import tempfile
import types

ALLOWED_IMPORTS = {"os", "subprocess", "datetime", "airflow", "airflow.exceptions", "airflow.operators.python"}


def stand_in_airflow():
    """Modules named as Airflow's, recording what the DAG file builds."""
    recorded = {"dags": [], "tasks": []}

    class AirflowException(Exception):
        pass

    class AirflowFailException(AirflowException):
        pass

    class DAG:
        def __init__(self, dag_id, **kwargs):
            self.dag_id = dag_id
            self.kwargs = kwargs
            recorded["dags"].append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class PythonOperator:
        def __init__(self, task_id, python_callable, op_kwargs=None, **kwargs):
            self.task_id = task_id
            self.python_callable = python_callable
            self.op_kwargs = op_kwargs or {}
            recorded["tasks"].append(self)

    airflow = types.ModuleType("airflow")
    airflow.DAG = DAG
    exceptions = types.ModuleType("airflow.exceptions")
    exceptions.AirflowException = AirflowException
    exceptions.AirflowFailException = AirflowFailException
    operators = types.ModuleType("airflow.operators")
    python = types.ModuleType("airflow.operators.python")
    python.PythonOperator = PythonOperator
    sys.modules.update(
        {
            "airflow": airflow,
            "airflow.exceptions": exceptions,
            "airflow.operators": operators,
            "airflow.operators.python": python,
        }
    )
    return recorded, AirflowException, AirflowFailException


def fake_datadiff(directory, code):
    """A program that records its arguments and exits `code`."""
    path = os.path.join(directory, f"datadiff-exit-{code}")
    with open(path, "w") as file:
        file.write(f'#!/bin/sh\nprintf "%s\\n" "$@" > "$0.args"\nexit {code}\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def main():
    path = sys.argv[1]
    real_datadiff = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as scratch:
        py_compile.compile(path, cfile=os.path.join(scratch, "dag.pyc"), doraise=True)
    with open(path) as file:
        tree = ast.parse(file.read(), path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module]
        for name in names:
            assert name in ALLOWED_IMPORTS, f"{path}: unexpected import {name}"

    recorded, airflow_exception, fail_exception = stand_in_airflow()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["DATADIFF_PROJECT_DIR"] = os.path.join(scratch, "project")
        namespace = {"__name__": "airflow_datadiff"}
        exec(compile(tree, path, "exec"), namespace)
        assert len(recorded["dags"]) == 1, "one DAG"
        dag = recorded["dags"][0]
        assert dag.kwargs.get("schedule") == "5 * * * *", dag.kwargs
        assert dag.kwargs.get("catchup") is False, "no backfill of past hours: datadiff catches up itself"
        taps = namespace["TAPS"]
        tasks = recorded["tasks"]
        assert taps and len(tasks) == len(taps), f"one task per tap: {taps} / {[t.task_id for t in tasks]}"
        assert len({task.task_id for task in tasks}) == len(tasks), "task ids are unique"
        for (target, tap), task in zip(taps, tasks):
            assert task.op_kwargs == {"target": target, "tap": tap}, task.op_kwargs

        task = tasks[0]
        for code, expected in [(0, None), (1, fail_exception), (2, airflow_exception), (3, airflow_exception)]:
            program = fake_datadiff(scratch, code)
            namespace["DATADIFF"] = program
            try:
                task.python_callable(**task.op_kwargs)
                raised = None
            except airflow_exception as error:
                raised = error
            if expected is None:
                assert raised is None, f"exit 0 must succeed, raised {raised!r}"
            else:
                assert isinstance(raised, expected), f"exit {code}: {raised!r}"
                if expected is airflow_exception:
                    assert not isinstance(raised, fail_exception), f"exit {code} must be retried: {raised!r}"
            with open(program + ".args") as file:
                argv = file.read().split("\n")[:-1]
            target, tap = taps[0]
            expected_argv = ["run_data_diff_checks", "--dir", os.environ["DATADIFF_PROJECT_DIR"], "--target", target,
                             "--tap", tap]
            assert argv == expected_argv, argv
        if real_datadiff:
            subprocess.run([real_datadiff, *argv, "--help"], check=True, stdout=subprocess.DEVNULL)
    print(f"{path}: compiles; {len(tasks)} task(s), one per tap; exit codes 0/1/2 mapped")


if __name__ == "__main__":
    main()
