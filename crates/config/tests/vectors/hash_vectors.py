"""Expected canonical JSON and config_hash values for datadiff's tests.

Run with any Python 3: `python3 hash_vectors.py`. Each definition below is the dict that
PipelineWise's canonical_config holds (config note section 1.6); the bytes are exactly
json.dumps(sort_keys=True, separators=(",", ":")) and the hash their SHA-256. The printed
values are pasted into the Rust tests as literals.
"""
import hashlib
import json

CHECKS = ["schema_compatibility", "row_count", "distinct_key_count", "null_key_count",
          "duplicate_key_count", "min_key", "max_key", "row_checksum"]


def show(name, payload):
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    print(name)
    print(text)
    print(hashlib.sha256(text.encode("utf-8")).hexdigest())
    print()


snowflake = {
    "target_id": "snowflake", "tap_id": "payments", "source_type": "tap-postgres",
    "target_type": "target-snowflake", "source_database": "payments", "target_database": "analytics",
    "source_schema": "public", "source_table": "transfers-v2", "target_schema": "REPLICATED_PAYMENTS",
    "target_table": "V2", "source_key_column": "transfer_id", "target_key_column": "TRANSFER_ID",
    "source_timestamp_column": "updated_at", "target_timestamp_column": "UPDATED_AT",
    "source_compare_columns": ["status", "amount"], "target_compare_columns": ["STATUS", "AMOUNT"],
    "checks": CHECKS, "frequency": "0 * * * *", "window_start_seconds": 108000,
    "window_end_seconds": 21600, "statement_timeout_seconds": 120,
}
show("snowflake, initial_full_scan omitted", snowflake)
show("snowflake, initial_full_scan true", {**snowflake, "initial_full_scan": True})
show("snowflake, initial_full_scan false (older era)", {**snowflake, "initial_full_scan": False})

postgres = {
    "target_id": "postgres", "tap_id": "payments", "source_type": "tap-postgres",
    "target_type": "target-postgres", "source_database": "payments", "target_database": "warehouse",
    "source_schema": "public", "source_table": "transfers-v2", "target_schema": "replicated_payments",
    "target_table": "v2", "source_key_column": "transfer_id", "target_key_column": "transfer_id",
    "source_timestamp_column": "updated_at", "target_timestamp_column": "updated_at",
    "source_compare_columns": ["Status", "amount"], "target_compare_columns": ["status", "amount"],
    "checks": ["row_count", "row_checksum"], "frequency": "0 */6 * * *", "window_start_seconds": 54000,
    "window_end_seconds": 0, "statement_timeout_seconds": 300,
}
show("postgres", postgres)
show("postgres, initial_full_scan true", {**postgres, "initial_full_scan": True})

unicode = {
    "target_id": "postgres", "tap_id": "zahlungen", "source_type": "tap-mysql",
    "target_type": "target-postgres", "source_database": "kasse", "target_database": "lager",
    "source_schema": "öffentlich", "source_table": "Überweisungen", "target_schema": "ziel_ß",
    "target_table": "überweisungen", "source_key_column": "Schlüssel", "target_key_column": "schlüssel",
    "source_timestamp_column": "geändert_am", "target_timestamp_column": "geändert_am",
    "source_compare_columns": ["betrag€", "notiz😀", "tab\there", "quote\"back\\slash", "ctl\x01\x7f/"],
    "target_compare_columns": ["betrag€", "notiz😀", "tab\there", "quote\"back\\slash", "ctl\x01\x7f/"],
    "checks": ["schema_compatibility"], "frequency": "@hourly", "window_start_seconds": 3600,
    "window_end_seconds": 0, "statement_timeout_seconds": 300,
}
show("non-ASCII names", unicode)

extended = {**postgres, "datadiff": {"exclude_soft_deleted": True, "row_diff": {"max_examples": 20}}}
show("postgres with datadiff extensions", extended)
show("postgres with row_diff only", {**postgres, "datadiff": {"row_diff": {"max_examples": 5}}})

# The fixture project in tests/fixtures/project, normalised by hand with PipelineWise's rules.
transfers = {
    "target_id": "postgres", "tap_id": "payments", "source_type": "tap-postgres",
    "target_type": "target-postgres", "source_database": "payments", "target_database": "warehouse",
    "source_schema": "public", "source_table": "transfers-v2", "target_schema": "replicated_payments",
    "target_table": "v2", "source_key_column": "transfer_id", "target_key_column": "transfer_id",
    "source_timestamp_column": "updated_at", "target_timestamp_column": "updated_at",
    "source_compare_columns": ["Status", "amount"], "target_compare_columns": ["status", "amount"],
    "checks": CHECKS, "frequency": "0 * * * *", "window_start_seconds": 108000,
    "window_end_seconds": 21600, "statement_timeout_seconds": 120, "initial_full_scan": True,
}
show("fixture postgres/payments/public/transfers-v2", transfers)
refunds = {
    "target_id": "postgres", "tap_id": "payments", "source_type": "tap-postgres",
    "target_type": "target-postgres", "source_database": "payments", "target_database": "warehouse",
    "source_schema": "public", "source_table": "Refunds", "target_schema": "replicated_payments",
    "target_table": "refunds", "source_key_column": "id", "target_key_column": "id",
    "source_timestamp_column": "updated_at", "target_timestamp_column": "updated_at",
    "source_compare_columns": ["amount"], "target_compare_columns": ["amount"],
    "checks": ["row_count", "row_checksum"], "frequency": "*/15 * * * *", "window_start_seconds": 7200,
    "window_end_seconds": 0, "statement_timeout_seconds": 120,
}
show("fixture postgres/payments/public/Refunds without extensions", refunds)
show("fixture postgres/payments/public/Refunds", {**refunds, "datadiff": {"exclude_soft_deleted": True, "row_diff": {"max_examples": 5}}})
orders = {
    "target_id": "postgres", "tap_id": "shop", "source_type": "tap-mysql",
    "target_type": "target-postgres", "source_database": "shop", "target_database": "warehouse",
    "source_schema": "shop", "source_table": "Orders", "target_schema": "shop_replica",
    "target_table": "orders", "source_key_column": "OrderID", "target_key_column": "orderid",
    "source_timestamp_column": "UpdatedAt", "target_timestamp_column": "updatedat",
    "source_compare_columns": [], "target_compare_columns": [],
    "checks": ["row_count", "max_key"], "frequency": "@daily", "window_start_seconds": 172800,
    "window_end_seconds": 86400, "statement_timeout_seconds": 300,
}
show("fixture postgres/shop/shop/Orders", orders)
