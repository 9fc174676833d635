-- Upstream revision 001 down to base: drop the seven tables, newest dependants first.
-- alembic_version itself stays (empty), as Alembic leaves it.
DROP TABLE IF EXISTS public.dd_watermark_events CASCADE;
DROP TABLE IF EXISTS public.dd_watermark_state CASCADE;
DROP TABLE IF EXISTS public.dd_run_slot_state CASCADE;
DROP TABLE IF EXISTS public.dd_run_results CASCADE;
DROP TABLE IF EXISTS public.dd_run_attempts CASCADE;
DROP TABLE IF EXISTS public.dd_preflight_log CASCADE;
DROP TABLE IF EXISTS public.dd_check_definitions CASCADE;
