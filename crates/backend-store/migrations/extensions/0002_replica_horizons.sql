-- datadiff extension 2: the replica horizon each scheduled check with checks.<name>.horizon
-- last observed (how far its replica had applied), for report metrics' applied lag. One row
-- per check name, overwritten by each reading (a reading that does not know the position
-- keeps the newest known horizon); positions only, never row values.
CREATE TABLE public.datadiff_replica_horizons (
    full_check_name TEXT NOT NULL,
    horizon TEXT NOT NULL,
    observed_at TIMESTAMPTZ NOT NULL,
    applied_up_to TIMESTAMPTZ,
    known BOOLEAN NOT NULL,
    position TEXT NOT NULL,
    CONSTRAINT datadiff_replica_horizons_pkey PRIMARY KEY (full_check_name)
);
COMMENT ON TABLE public.datadiff_replica_horizons IS
    'datadiff replica horizons: per check, the last reading of how far its replica had applied';
COMMENT ON COLUMN public.datadiff_replica_horizons.horizon IS
    'The checks.<name>.horizon setting read: subscription:NAME or column:NAME';
COMMENT ON COLUMN public.datadiff_replica_horizons.observed_at IS
    'When it was read (the tick''s now)';
COMMENT ON COLUMN public.datadiff_replica_horizons.applied_up_to IS
    'The newest known horizon: every source change before it was applied on the replica; NULL before one is known';
COMMENT ON COLUMN public.datadiff_replica_horizons.known IS
    'Whether the latest reading knew the position (false: paused, disabled, behind or empty)';
COMMENT ON COLUMN public.datadiff_replica_horizons.position IS
    'What the replica reported, in words (subscription and LSN, or column and newest value)';
GRANT SELECT, INSERT, UPDATE ON public.datadiff_replica_horizons TO {{app_role}};
