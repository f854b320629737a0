"""Send a workflow job's messages and tracebacks to its Snakemake log file."""

import logging
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def job_log(path: str) -> Iterator[logging.Logger]:
    """Log to ``path`` during a job, warnings to stderr too (Snakemake shows it); an exception too, then re-raised."""
    logger = logging.getLogger("onenn")
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(levelname)s %(message)s"))
    shown = logging.StreamHandler()
    shown.addFilter(lambda record: record.levelno == logging.WARNING)  # an error's traceback reaches stderr anyway
    logger.addHandler(handler)
    logger.addHandler(shown)
    try:
        yield logger
    except BaseException:
        logger.error("job failed:\n%s", traceback.format_exc())
        raise
    finally:
        logger.removeHandler(handler)
        logger.removeHandler(shown)
        handler.close()
        sys.stderr.flush()
