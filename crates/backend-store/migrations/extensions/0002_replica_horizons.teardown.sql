-- Removes extension 2 (only when going below upstream 004 with drop_extensions).
DROP TABLE public.datadiff_replica_horizons;
