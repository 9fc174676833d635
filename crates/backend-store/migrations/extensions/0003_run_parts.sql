-- datadiff extension 3: a row_diff window divided into key ranges ("parts") that several
-- processes sharing the backend claim under session advisory locks. One division row per
-- divided attempt (what finishing it needs besides its parts), one row per part. Keys and
-- column names only, never row values.
CREATE TABLE public.datadiff_run_divisions (
    run_id UUID NOT NULL,
    part_count INTEGER NOT NULL,
    split_key TEXT NOT NULL,
    strategy TEXT NOT NULL,
    results JSONB NOT NULL,
    error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    created_by TEXT NOT NULL,
    CONSTRAINT datadiff_run_divisions_pkey PRIMARY KEY (run_id),
    CONSTRAINT datadiff_run_divisions_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT ck_datadiff_run_divisions_part_count CHECK (part_count > 1),
    CONSTRAINT ck_datadiff_run_divisions_split_key CHECK (split_key IN ('int', 'uuid', 'text'))
);
COMMENT ON TABLE public.datadiff_run_divisions IS
    'datadiff divided row_diff windows: per attempt, how its window is divided and the results computed before row_diff';
COMMENT ON COLUMN public.datadiff_run_divisions.split_key IS
    'How the first key column is split: int, uuid or text (COLLATE "C")';
COMMENT ON COLUMN public.datadiff_run_divisions.strategy IS
    'The row_diff strategy the attempt asked for (auto, stream or segments), used by every part';
COMMENT ON COLUMN public.datadiff_run_divisions.results IS
    'The attempt''s results computed before row_diff (metadata and aggregate checks), for whoever finishes it';
COMMENT ON COLUMN public.datadiff_run_divisions.error IS
    'The aggregate query''s failure when row_diff ran after it, else NULL';
COMMENT ON COLUMN public.datadiff_run_divisions.created_by IS
    'The process that divided the window (host:pid, for observability)';
CREATE TABLE public.datadiff_run_parts (
    run_id UUID NOT NULL,
    part_index INTEGER NOT NULL,
    part_count INTEGER NOT NULL,
    lower_bound TEXT,
    upper_bound TEXT,
    claimed_at TIMESTAMPTZ,
    claimed_by TEXT,
    finished_at TIMESTAMPTZ,
    outcome JSONB,
    CONSTRAINT datadiff_run_parts_pkey PRIMARY KEY (run_id, part_index),
    CONSTRAINT datadiff_run_parts_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES public.datadiff_run_divisions (run_id) ON DELETE RESTRICT,
    CONSTRAINT ck_datadiff_run_parts_index CHECK (part_index >= 0 AND part_index < part_count),
    CONSTRAINT ck_datadiff_run_parts_outcome CHECK ((finished_at IS NULL) = (outcome IS NULL))
);
COMMENT ON TABLE public.datadiff_run_parts IS
    'datadiff parts of divided row_diff windows: key range, claim and outcome per part';
COMMENT ON COLUMN public.datadiff_run_parts.lower_bound IS
    'The lowest first-key value of the part, included; NULL: from the lowest';
COMMENT ON COLUMN public.datadiff_run_parts.upper_bound IS
    'The first-key value above the part, excluded; NULL: to the highest, with NULL keys';
COMMENT ON COLUMN public.datadiff_run_parts.claimed_at IS
    'When a process last claimed the part (under its session advisory lock)';
COMMENT ON COLUMN public.datadiff_run_parts.claimed_by IS
    'The process that last claimed it (host:pid, for observability)';
COMMENT ON COLUMN public.datadiff_run_parts.outcome IS
    'The part''s counts, strategy, seconds and first differences (keys and column names only), or its failure';
GRANT SELECT, INSERT, UPDATE ON public.datadiff_run_divisions TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.datadiff_run_parts TO {{app_role}};
