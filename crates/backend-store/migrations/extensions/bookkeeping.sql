-- datadiff's own migration record, created before the first extension migration. It is
-- not itself a checksummed migration. The application role may read it (the schema gate
-- does) but never change it.
CREATE TABLE public.datadiff_schema_migrations (
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    checksum CHAR(64) NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT datadiff_schema_migrations_pkey PRIMARY KEY (version),
    CONSTRAINT ck_datadiff_schema_migrations_version CHECK (version > 0)
);
COMMENT ON TABLE public.datadiff_schema_migrations IS
    'datadiff extension migrations applied to this backend (never used by PipelineWise)';
GRANT SELECT ON public.datadiff_schema_migrations TO {{app_role}};
