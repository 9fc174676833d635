-- Upstream revision 004 down to 003: forget delivered warnings (they may be sent again).
DROP TABLE public.dd_index_warning_state;
