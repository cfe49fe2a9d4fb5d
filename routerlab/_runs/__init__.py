"""The run machinery behind ``routerlab run``: what the application layer (:mod:`routerlab.app`) calls.

* :mod:`~routerlab._runs.session`: a comparison session run and persisted (``run_session``), planned
  and registered in ``session_plan``, run in ``session_live``, closed in ``session_close``;
  ``session_spec``: routers parsed, a recorded session resumed;
* :mod:`~routerlab._runs.runner`: one router's run over examples (``RunConfig``, ``RouterRun``);
  ``config``: run settings from options and a config file; ``selection``: which examples, in
  what order; ``resume``: the resume command, built once.

Private: the public entry points are :mod:`routerlab.app` and ``routerlab``'s own names.
"""
