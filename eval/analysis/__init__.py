"""A session's comparison: the one package that computes what every view shows, and the views.

:func:`~routerlab.eval.analysis.build.build_comparison` reads a session (or stored runs) from the
results store into :class:`~routerlab.eval.analysis.model.SessionComparison`, every figure
computed once (:mod:`~routerlab.eval.analysis.measures` names each measure once). The views only
render it: :mod:`~routerlab.eval.analysis.console` (``routerlab compare``, the run's closing
table), :mod:`~routerlab.eval.analysis.markdown`, :mod:`~routerlab.eval.analysis.figures` and
:mod:`~routerlab.eval.analysis.report_view` (the report's notebook),
:mod:`~routerlab.eval.analysis.tracked` (MLflow's parent run) and
:mod:`~routerlab.eval.analysis.frames` (the Python API, CSV and Parquet), all worded by
:mod:`~routerlab.eval.analysis.words`.
"""
