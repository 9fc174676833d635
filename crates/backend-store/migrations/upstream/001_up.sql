-- Upstream revision 001: the initial data-diff schema, with the column names this revision
-- had (the watermark columns are renamed by 002). Every constraint is named explicitly with
-- the name PostgreSQL would generate for upstream's unnamed constraints, so that Alembic's
-- own later steps (which rename and drop constraints by those names) apply to a backend
-- datadiff created. {{app_role}} is replaced by the application role, quoted as an identifier.

CREATE TABLE public.dd_check_definitions (
    check_id UUID NOT NULL,
    full_check_name TEXT NOT NULL,
    revision INTEGER NOT NULL,
    config_hash CHAR(64) NOT NULL,
    canonical_config JSONB NOT NULL,
    target_id TEXT NOT NULL,
    tap_id TEXT NOT NULL,
    source_type TEXT NOT NULL,
    target_type TEXT NOT NULL,
    source_database TEXT NOT NULL,
    target_database TEXT NOT NULL,
    source_schema TEXT NOT NULL,
    source_table TEXT NOT NULL,
    target_schema TEXT NOT NULL,
    target_table TEXT NOT NULL,
    source_key_column TEXT NOT NULL,
    target_key_column TEXT NOT NULL,
    source_timestamp_column TEXT NOT NULL,
    target_timestamp_column TEXT NOT NULL,
    checks JSONB NOT NULL,
    frequency TEXT NOT NULL,
    window_start_seconds BIGINT NOT NULL,
    window_end_seconds BIGINT NOT NULL,
    statement_timeout_seconds BIGINT NOT NULL,
    is_current BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    superseded_at TIMESTAMPTZ,
    CONSTRAINT dd_check_definitions_pkey PRIMARY KEY (check_id),
    CONSTRAINT dd_check_definitions_window_start_seconds_check CHECK (window_start_seconds > 0),
    CONSTRAINT dd_check_definitions_window_end_seconds_check CHECK (window_end_seconds >= 0),
    CONSTRAINT dd_check_definitions_statement_timeout_seconds_check CHECK (statement_timeout_seconds > 0),
    CONSTRAINT dd_check_definitions_full_check_name_revision_key UNIQUE (full_check_name, revision)
);

-- At most one current revision per check name.
CREATE UNIQUE INDEX uq_dd_check_definitions_is_current_name
    ON public.dd_check_definitions (full_check_name)
    WHERE is_current;

CREATE INDEX ix_dd_check_definitions_is_current_scope
    ON public.dd_check_definitions (is_current, target_id, tap_id);

CREATE TABLE public.dd_preflight_log (
    preflight_id UUID NOT NULL,
    check_id UUID NOT NULL,
    status TEXT NOT NULL,
    checked_at TIMESTAMPTZ NOT NULL,
    query_fingerprint CHAR(64) NOT NULL,
    index_metadata JSONB NOT NULL,
    findings JSONB NOT NULL,
    error TEXT,
    -- What the PASS/BLOCKED verdict was decided from, kept for audit.
    table_rows BIGINT,
    row_limit BIGINT,
    has_leading_index BOOLEAN,
    CONSTRAINT dd_preflight_log_pkey PRIMARY KEY (preflight_id),
    CONSTRAINT dd_preflight_log_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT,
    CONSTRAINT dd_preflight_log_status_check CHECK (status IN ('PASS', 'BLOCKED', 'ERROR'))
);

CREATE TABLE public.dd_run_attempts (
    run_id UUID NOT NULL,
    check_id UUID NOT NULL,
    scheduled_for TIMESTAMPTZ NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    window_end TIMESTAMPTZ NOT NULL,
    attempt INTEGER NOT NULL,
    trigger_type TEXT NOT NULL,
    status TEXT NOT NULL,
    rerun_of_run_id UUID,
    remediation_reference TEXT,
    preflight_id UUID,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    error TEXT,
    CONSTRAINT dd_run_attempts_pkey PRIMARY KEY (run_id),
    CONSTRAINT dd_run_attempts_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT,
    CONSTRAINT ck_dd_run_attempts_trigger_type
        CHECK (trigger_type IN ('SCHEDULED', 'MANUAL', 'RETRY', 'REMEDIATION')),
    CONSTRAINT dd_run_attempts_status_check CHECK (status IN ('RUNNING', 'PASS', 'FAIL', 'ERROR')),
    CONSTRAINT dd_run_attempts_rerun_of_run_id_fkey FOREIGN KEY (rerun_of_run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_run_attempts_preflight_id_fkey FOREIGN KEY (preflight_id)
        REFERENCES public.dd_preflight_log (preflight_id) ON DELETE RESTRICT,
    CONSTRAINT dd_run_attempts_check CHECK (window_start < window_end),
    CONSTRAINT dd_run_attempts_check_id_scheduled_for_attempt_key UNIQUE (check_id, scheduled_for, attempt)
);

CREATE INDEX ix_dd_run_attempts_schedule
    ON public.dd_run_attempts (check_id, scheduled_for, status);

CREATE TABLE public.dd_run_results (
    run_id UUID NOT NULL,
    check_type TEXT NOT NULL,
    status TEXT NOT NULL,
    source_value JSONB,
    target_value JSONB,
    source_query_seconds DOUBLE PRECISION,
    target_query_seconds DOUBLE PRECISION,
    error TEXT,
    CONSTRAINT dd_run_results_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_run_results_status_check CHECK (status IN ('PASS', 'FAIL', 'ERROR')),
    CONSTRAINT dd_run_results_pkey PRIMARY KEY (run_id, check_type)
);

CREATE TABLE public.dd_run_slot_state (
    check_id UUID NOT NULL,
    scheduled_for TIMESTAMPTZ NOT NULL,
    run_id UUID NOT NULL,
    attempt INTEGER NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    window_end TIMESTAMPTZ NOT NULL,
    status TEXT NOT NULL,
    CONSTRAINT dd_run_slot_state_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT,
    CONSTRAINT dd_run_slot_state_run_id_key UNIQUE (run_id),
    CONSTRAINT dd_run_slot_state_run_id_fkey FOREIGN KEY (run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_run_slot_state_attempt_check CHECK (attempt > 0),
    CONSTRAINT dd_run_slot_state_status_check CHECK (status IN ('PASS', 'FAIL', 'ERROR')),
    CONSTRAINT dd_run_slot_state_check CHECK (window_start < window_end),
    CONSTRAINT dd_run_slot_state_pkey PRIMARY KEY (check_id, scheduled_for)
);

CREATE INDEX ix_dd_run_slot_state_coverage_order
    ON public.dd_run_slot_state (check_id, window_start, window_end, scheduled_for);

CREATE TABLE public.dd_watermark_state (
    check_id UUID NOT NULL,
    coverage_start TIMESTAMPTZ NOT NULL,
    verified_through TIMESTAMPTZ NOT NULL,
    max_observed_end TIMESTAMPTZ NOT NULL,
    coverage_status TEXT NOT NULL,
    blocking_run_id UUID,
    evaluated_run_id UUID NOT NULL,
    event_type TEXT NOT NULL,
    state_version BIGINT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    reason TEXT NOT NULL,
    CONSTRAINT dd_watermark_state_pkey PRIMARY KEY (check_id),
    CONSTRAINT dd_watermark_state_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_state_coverage_status_check CHECK (coverage_status IN ('CONTIGUOUS', 'BLOCKED')),
    CONSTRAINT dd_watermark_state_blocking_run_id_fkey FOREIGN KEY (blocking_run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_state_evaluated_run_id_fkey FOREIGN KEY (evaluated_run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_state_event_type_check
        CHECK (event_type IN ('INITIALIZE', 'ADVANCE', 'INVALIDATE', 'BLOCK', 'CONFIRM')),
    CONSTRAINT dd_watermark_state_state_version_check CHECK (state_version > 0),
    CONSTRAINT dd_watermark_state_check CHECK (coverage_start <= verified_through),
    CONSTRAINT dd_watermark_state_check1 CHECK (verified_through <= max_observed_end)
);

CREATE TABLE public.dd_watermark_events (
    watermark_event_id UUID NOT NULL,
    event_sequence BIGSERIAL NOT NULL,
    check_id UUID NOT NULL,
    evaluated_run_id UUID NOT NULL,
    event_type TEXT NOT NULL,
    coverage_start TIMESTAMPTZ NOT NULL,
    previous_verified_through TIMESTAMPTZ,
    verified_through TIMESTAMPTZ NOT NULL,
    max_observed_end TIMESTAMPTZ NOT NULL,
    coverage_status TEXT NOT NULL,
    blocking_run_id UUID,
    recorded_at TIMESTAMPTZ NOT NULL,
    reason TEXT NOT NULL,
    CONSTRAINT dd_watermark_events_pkey PRIMARY KEY (watermark_event_id),
    CONSTRAINT dd_watermark_events_event_sequence_key UNIQUE (event_sequence),
    CONSTRAINT dd_watermark_events_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_events_evaluated_run_id_key UNIQUE (evaluated_run_id),
    CONSTRAINT dd_watermark_events_evaluated_run_id_fkey FOREIGN KEY (evaluated_run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_events_event_type_check
        CHECK (event_type IN ('INITIALIZE', 'ADVANCE', 'INVALIDATE', 'BLOCK', 'CONFIRM')),
    CONSTRAINT dd_watermark_events_coverage_status_check CHECK (coverage_status IN ('CONTIGUOUS', 'BLOCKED')),
    CONSTRAINT dd_watermark_events_blocking_run_id_fkey FOREIGN KEY (blocking_run_id)
        REFERENCES public.dd_run_attempts (run_id) ON DELETE RESTRICT,
    CONSTRAINT dd_watermark_events_check CHECK (coverage_start <= verified_through),
    CONSTRAINT dd_watermark_events_check1 CHECK (verified_through <= max_observed_end)
);

CREATE INDEX ix_dd_watermark_events_history
    ON public.dd_watermark_events (check_id, event_sequence DESC);

COMMENT ON TABLE public.dd_check_definitions IS
    'Versioned data-diff check definitions imported from YAML configuration';
COMMENT ON TABLE public.dd_preflight_log IS
    'Append-only preflight evidence and early validation errors for run attempts';
COMMENT ON TABLE public.dd_run_attempts IS
    'Execution attempts updated from RUNNING to a terminal outcome';
COMMENT ON TABLE public.dd_run_results IS
    'Append-only per-check-type outcomes for completed run attempts';
COMMENT ON TABLE public.dd_run_slot_state IS
    'Mutable selected terminal attempt for each check and scheduled slot';
COMMENT ON TABLE public.dd_watermark_state IS
    'Mutable current verified-through watermark for each check definition';
COMMENT ON TABLE public.dd_watermark_events IS
    'Append-only history of verified-through watermark transitions';

-- The migration role owns everything; the application role reads and writes rows only.
GRANT SELECT, INSERT, UPDATE ON public.dd_check_definitions TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_preflight_log TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_run_attempts TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_run_results TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_run_slot_state TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_watermark_state TO {{app_role}};
GRANT SELECT, INSERT, UPDATE ON public.dd_watermark_events TO {{app_role}};
-- Inserting an event draws from the BIGSERIAL's sequence.
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {{app_role}};
GRANT SELECT ON public.alembic_version TO {{app_role}};
GRANT USAGE ON SCHEMA public TO {{app_role}};
