-- Upstream revision 002 down to 001: undo the constraint renames, then the column renames
-- (each list in reverse), and put back revision 001's table comments.
ALTER TABLE public.dd_watermark_events
    RENAME CONSTRAINT dd_watermark_events_verified_status_check TO dd_watermark_events_coverage_status_check;
ALTER TABLE public.dd_watermark_state
    RENAME CONSTRAINT dd_watermark_state_last_evaluated_run_id_fkey TO dd_watermark_state_evaluated_run_id_fkey;
ALTER TABLE public.dd_watermark_state
    RENAME CONSTRAINT dd_watermark_state_verified_status_check TO dd_watermark_state_coverage_status_check;

ALTER TABLE public.dd_watermark_events RENAME COLUMN verified_status TO coverage_status;
ALTER TABLE public.dd_watermark_events RENAME COLUMN furthest_observed_end TO max_observed_end;
ALTER TABLE public.dd_watermark_events RENAME COLUMN verified_end TO verified_through;
ALTER TABLE public.dd_watermark_events RENAME COLUMN previous_verified_end TO previous_verified_through;
ALTER TABLE public.dd_watermark_events RENAME COLUMN verified_start TO coverage_start;

ALTER TABLE public.dd_watermark_state RENAME COLUMN last_evaluated_run_id TO evaluated_run_id;
ALTER TABLE public.dd_watermark_state RENAME COLUMN verified_status TO coverage_status;
ALTER TABLE public.dd_watermark_state RENAME COLUMN furthest_observed_end TO max_observed_end;
ALTER TABLE public.dd_watermark_state RENAME COLUMN verified_end TO verified_through;
ALTER TABLE public.dd_watermark_state RENAME COLUMN verified_start TO coverage_start;

COMMENT ON TABLE public.dd_watermark_state IS
    'Mutable current verified-through watermark for each check definition';
COMMENT ON TABLE public.dd_watermark_events IS
    'Append-only history of verified-through watermark transitions';
