-- One row per input file per build that read it: where every line of the file went.
-- "Nothing lost" is the identity
--   lines_read = lines_imported + lines_rejected + lines_blank + lines_skipped
-- (lines_unaccounted = 0, is_reconciled): lines_read and lines_blank are counted
-- from the bytes of the file before it is parsed (skillwalker_py.build.ingest.scan_lines),
-- the other three from what the import did with its lines, so a line dropped
-- or doubled anywhere on the way breaks it. Files logged by a build older than
-- the line counts have NULL counts and is_reconciled NULL. tool_calls reads the
-- files of test_run: its lines_rejected are the lines rejected_lines lists once,
-- under test_run.
select
    build_id,
    source_table,
    file,
    imported_at,
    lines_read,
    rows_staged as lines_imported,
    lines_rejected,
    lines_blank,
    lines_skipped,
    lines_read - rows_staged - lines_rejected - lines_blank - lines_skipped as lines_unaccounted,
    lines_read = rows_staged + lines_rejected + lines_blank + lines_skipped as is_reconciled,
    changed_during_read
from {{ source('lake', 'sw_import_log') }}
where kind = 'rows'
