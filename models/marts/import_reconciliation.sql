-- One row per input file per build that read it: where every line of the file went.
-- "Nothing lost" is the identity
--   lines_read = lines_imported + lines_rejected + lines_blank + lines_skipped
-- (lines_unaccounted = 0, is_reconciled): lines_read and lines_blank are counted
-- from the physical lines of the file as it is read (skillwalker_py.pipeline.lines.read_file),
-- the other three from what the import did with its lines, so a line dropped
-- or doubled anywhere on the way breaks it. Files logged by a build older than
-- the line counts have NULL counts and is_reconciled NULL. tool_calls reads the
-- files of test_run: its lines_rejected are the lines rejected_lines lists once,
-- under test_run.
-- A later read of the same file for the same table supersedes a row
-- (superseded_by): the rows of that read replaced the ones of this one, so a row
-- that did not reconcile because a writer appended while it was read
-- (changed_during_read) is healed by the next build, which reads the file again.
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
    changed_during_read,
    lead(build_id) over (partition by source_table, file order by imported_at, build_id) as superseded_by
from {{ source('lake', 'sw_import_log') }}
where kind = 'rows'
