-- Upstream revision 004: remember delivered source-index warnings across restarts, imports
-- and definition revisions. The application only ever inserts here.
CREATE TABLE public.dd_index_warning_state (
    warning_id UUID NOT NULL,
    check_id UUID NOT NULL,
    sent_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT dd_index_warning_state_pkey PRIMARY KEY (warning_id),
    CONSTRAINT dd_index_warning_state_check_id_fkey FOREIGN KEY (check_id)
        REFERENCES public.dd_check_definitions (check_id) ON DELETE RESTRICT
);
COMMENT ON TABLE public.dd_index_warning_state IS
    'Delivered source-index warnings, retained across config revisions and scheduled runs';
COMMENT ON COLUMN public.dd_index_warning_state.warning_id IS
    'Deterministic UUID of tap, source type, database, schema, table, and timestamp column';
COMMENT ON COLUMN public.dd_index_warning_state.check_id IS
    'Historical check definition that first delivered this warning';
GRANT SELECT, INSERT, UPDATE ON public.dd_index_warning_state TO {{app_role}};
