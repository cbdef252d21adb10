"""A corpus in, trees out: :func:`parse_corpus`.

A file of sentences (or any iterable of them) is parsed line by line, on every core
(``workers=``) or a Dask cluster (``scheduler=``), into a JSON Lines log with one record per
input line: its tree in the Penn Treebank's bracketed form, or a status saying why there is
none. The log is append-only and written crash-safely: a run killed at any moment resumes
(``resume=True``) with exactly the lines it lacks, and the log is put back in input order
when every line is there. docs/howto/corpus.md shows it from the command line
(``fastdcyk parse --input FILE``).

- :mod:`.lines`: the input's lines, and the bad ones;
- :mod:`.worker`: a job of lines parsed into records (in a worker, or here);
- :mod:`.log`: the output log: its header, resume, the order at the end;
- :mod:`.run`: :func:`parse_corpus`, its workers and its summary.
"""

from __future__ import annotations

from fastdcyk.corpus.log import FIELDS, STATUSES, CorpusLogError, read_log
from fastdcyk.corpus.run import CorpusSummary, parse_corpus

__all__ = ["FIELDS", "STATUSES", "CorpusLogError", "CorpusSummary", "parse_corpus", "read_log"]
