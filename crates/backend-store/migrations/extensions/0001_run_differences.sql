-- datadiff extension 1: row-level evidence of the row_diff check (SPEC §10). Keys and
-- column names only, never row values. One row per reported difference, at most
-- max_examples per result, numbered from 1 in key order.
CREATE TABLE public.datadiff_run_differences (
    run_id UUID NOT NULL,
    check_type TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    kind TEXT NOT NULL,
    key JSONB NOT NULL,
    fields TEXT[] NOT NULL,
    CONSTRAINT datadiff_run_differences_pkey PRIMARY KEY (run_id, check_type, ordinal),
    CONSTRAINT datadiff_run_differences_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT ck_datadiff_run_differences_ordinal CHECK (ordinal > 0),
    CONSTRAINT ck_datadiff_run_differences_kind
        CHECK (kind IN ('MISSING_IN_TARGET', 'EXTRA_IN_TARGET', 'CHANGED')),
    CONSTRAINT ck_datadiff_run_differences_fields
        CHECK ((kind = 'CHANGED') = (cardinality(fields) > 0))
);
COMMENT ON TABLE public.datadiff_run_differences IS
    'datadiff row_diff evidence: example differing keys and changed column names per run and check type';
COMMENT ON COLUMN public.datadiff_run_differences.ordinal IS
    'Position of the difference in key order, from 1';
COMMENT ON COLUMN public.datadiff_run_differences.kind IS
    'MISSING_IN_TARGET, EXTRA_IN_TARGET, or CHANGED';
COMMENT ON COLUMN public.datadiff_run_differences.key IS
    'Canonical key of the differing row; never a non-key value';
COMMENT ON COLUMN public.datadiff_run_differences.fields IS
    'Names of the compared columns that differ; empty unless kind is CHANGED';
GRANT SELECT, INSERT, UPDATE ON public.datadiff_run_differences TO {{app_role}};
