-- Upstream revision 003: a historical window whose start is not yet known is stored with a
-- NULL start instead of an invented timestamp, and attempts gain the DEFERRED status.
-- Nothing is updated or deleted.
ALTER TABLE public.dd_run_attempts DROP CONSTRAINT dd_run_attempts_status_check;
ALTER TABLE public.dd_run_attempts ADD CONSTRAINT dd_run_attempts_status_check
    CHECK (status IN ('RUNNING', 'PASS', 'FAIL', 'ERROR', 'DEFERRED'));

ALTER TABLE public.dd_run_attempts ALTER COLUMN window_start DROP NOT NULL;
ALTER TABLE public.dd_run_attempts ADD CONSTRAINT ck_dd_run_attempts_resolved_window
    CHECK (window_start IS NOT NULL OR status IN ('RUNNING', 'ERROR', 'DEFERRED'));
COMMENT ON COLUMN public.dd_run_attempts.window_start IS
    'Inclusive comparison start; NULL while the historical start is unresolved';

ALTER TABLE public.dd_run_slot_state ALTER COLUMN window_start DROP NOT NULL;
ALTER TABLE public.dd_run_slot_state ADD CONSTRAINT ck_dd_run_slot_state_resolved_window
    CHECK (window_start IS NOT NULL OR status IN ('ERROR'));
COMMENT ON COLUMN public.dd_run_slot_state.window_start IS
    'Inclusive comparison start; NULL while the historical start is unresolved';

ALTER TABLE public.dd_watermark_state
    ALTER COLUMN verified_start DROP NOT NULL,
    ALTER COLUMN verified_end DROP NOT NULL;
ALTER TABLE public.dd_watermark_state ADD CONSTRAINT ck_dd_watermark_state_verified_bounds
    CHECK ((verified_start IS NOT NULL AND verified_end IS NOT NULL)
        OR (verified_start IS NULL AND verified_end IS NULL
            AND verified_status = 'BLOCKED' AND blocking_run_id IS NOT NULL));
COMMENT ON COLUMN public.dd_watermark_state.verified_start IS
    'Start of the verified interval; NULL when an unresolved historical run blocks verification';
COMMENT ON COLUMN public.dd_watermark_state.verified_end IS
    'End of the contiguous verified interval; NULL when an unresolved historical run blocks verification';

ALTER TABLE public.dd_watermark_events
    ALTER COLUMN verified_start DROP NOT NULL,
    ALTER COLUMN verified_end DROP NOT NULL;
ALTER TABLE public.dd_watermark_events ADD CONSTRAINT ck_dd_watermark_events_verified_bounds
    CHECK ((verified_start IS NOT NULL AND verified_end IS NOT NULL)
        OR (verified_start IS NULL AND verified_end IS NULL
            AND verified_status = 'BLOCKED' AND blocking_run_id IS NOT NULL));
COMMENT ON COLUMN public.dd_watermark_events.verified_start IS
    'Start of the verified interval; NULL when an unresolved historical run blocks verification';
COMMENT ON COLUMN public.dd_watermark_events.verified_end IS
    'End of the contiguous verified interval; NULL when an unresolved historical run blocks verification';

COMMENT ON COLUMN public.dd_run_attempts.status IS
    'RUNNING or terminal PASS, FAIL, ERROR, or DEFERRED; DEFERRED means neither side has settled historical timestamps';
