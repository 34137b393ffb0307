-- One row per input line that could not be imported, as of the last read of
-- its file (sw_rejected_lines, written with the rows of the same read).
select source_table, file, line, test_run_id, reason, raw, build_id
from {{ source('lake', 'sw_rejected_lines') }}
