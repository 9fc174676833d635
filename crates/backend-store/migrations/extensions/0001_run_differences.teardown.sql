-- Removes extension 1 (only when going below upstream 004 with drop_extensions).
DROP TABLE public.datadiff_run_differences;
