-- Upstream revision 003 down to 002. Revision 002 cannot hold a NULL window start, NULL
-- verified bounds or a DEFERRED attempt, and audit history is never rewritten, so the guard
-- refuses before anything changes while such rows exist.
DO $guard$
BEGIN
    IF EXISTS (SELECT 1 FROM public.dd_run_attempts
                WHERE window_start IS NULL OR status = 'DEFERRED')
       OR EXISTS (SELECT 1 FROM public.dd_run_slot_state
                   WHERE window_start IS NULL)
       OR EXISTS (SELECT 1 FROM public.dd_watermark_state
                   WHERE verified_start IS NULL OR verified_end IS NULL)
       OR EXISTS (SELECT 1 FROM public.dd_watermark_events
                   WHERE verified_start IS NULL OR verified_end IS NULL)
    THEN
        RAISE EXCEPTION 'Cannot downgrade data-diff to revision 002: unresolved historical bounds or DEFERRED attempts are not representable. Retain revision 003 or restore the backend from a pre-upgrade backup; do not discard audit history.';
    END IF;
END
$guard$;

ALTER TABLE public.dd_watermark_state DROP CONSTRAINT ck_dd_watermark_state_verified_bounds;
ALTER TABLE public.dd_watermark_state
    ALTER COLUMN verified_start SET NOT NULL,
    ALTER COLUMN verified_end SET NOT NULL;
COMMENT ON COLUMN public.dd_watermark_state.verified_start IS NULL;
COMMENT ON COLUMN public.dd_watermark_state.verified_end IS NULL;

ALTER TABLE public.dd_watermark_events DROP CONSTRAINT ck_dd_watermark_events_verified_bounds;
ALTER TABLE public.dd_watermark_events
    ALTER COLUMN verified_start SET NOT NULL,
    ALTER COLUMN verified_end SET NOT NULL;
COMMENT ON COLUMN public.dd_watermark_events.verified_start IS NULL;
COMMENT ON COLUMN public.dd_watermark_events.verified_end IS NULL;

ALTER TABLE public.dd_run_attempts DROP CONSTRAINT ck_dd_run_attempts_resolved_window;
ALTER TABLE public.dd_run_attempts ALTER COLUMN window_start SET NOT NULL;
COMMENT ON COLUMN public.dd_run_attempts.window_start IS NULL;

ALTER TABLE public.dd_run_slot_state DROP CONSTRAINT ck_dd_run_slot_state_resolved_window;
ALTER TABLE public.dd_run_slot_state ALTER COLUMN window_start SET NOT NULL;
COMMENT ON COLUMN public.dd_run_slot_state.window_start IS NULL;

ALTER TABLE public.dd_run_attempts DROP CONSTRAINT dd_run_attempts_status_check;
ALTER TABLE public.dd_run_attempts ADD CONSTRAINT dd_run_attempts_status_check
    CHECK (status IN ('RUNNING', 'PASS', 'FAIL', 'ERROR'));
COMMENT ON COLUMN public.dd_run_attempts.status IS NULL;
