"""``roi batch``: resumable, exactly-once extraction over folders of scans, locally or on Ray.

See docs/batch.md. The parent process is the only writer of the outputs and the manifest.
"""

from extractor.batch.runner import (
    BatchOptions,
    BatchSummary,
    format_summary,
    print_summary,
    run_batch,
)

__all__ = ["BatchOptions", "BatchSummary", "format_summary", "print_summary", "run_batch"]
