-- Upstream revision 002: the watermark columns take their "verified interval" names.
-- Columns first, then the constraints whose generated names carried the old column names.
ALTER TABLE public.dd_watermark_state RENAME COLUMN coverage_start TO verified_start;
ALTER TABLE public.dd_watermark_state RENAME COLUMN verified_through TO verified_end;
ALTER TABLE public.dd_watermark_state RENAME COLUMN max_observed_end TO furthest_observed_end;
ALTER TABLE public.dd_watermark_state RENAME COLUMN coverage_status TO verified_status;
ALTER TABLE public.dd_watermark_state RENAME COLUMN evaluated_run_id TO last_evaluated_run_id;

ALTER TABLE public.dd_watermark_events RENAME COLUMN coverage_start TO verified_start;
ALTER TABLE public.dd_watermark_events RENAME COLUMN previous_verified_through TO previous_verified_end;
ALTER TABLE public.dd_watermark_events RENAME COLUMN verified_through TO verified_end;
ALTER TABLE public.dd_watermark_events RENAME COLUMN max_observed_end TO furthest_observed_end;
ALTER TABLE public.dd_watermark_events RENAME COLUMN coverage_status TO verified_status;

ALTER TABLE public.dd_watermark_state
    RENAME CONSTRAINT dd_watermark_state_coverage_status_check TO dd_watermark_state_verified_status_check;
ALTER TABLE public.dd_watermark_state
    RENAME CONSTRAINT dd_watermark_state_evaluated_run_id_fkey TO dd_watermark_state_last_evaluated_run_id_fkey;
ALTER TABLE public.dd_watermark_events
    RENAME CONSTRAINT dd_watermark_events_coverage_status_check TO dd_watermark_events_verified_status_check;

COMMENT ON TABLE public.dd_watermark_state IS
    'Mutable current verified interval and furthest observed window for each check definition';
COMMENT ON TABLE public.dd_watermark_events IS
    'Append-only history of verified intervals and furthest observed window transitions';
