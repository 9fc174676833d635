-- Removes extension 3 (only when going below upstream 004 with drop_extensions).
DROP TABLE public.datadiff_run_parts;
DROP TABLE public.datadiff_run_divisions;
