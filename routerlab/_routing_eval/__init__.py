"""The routing evaluation behind ``routerlab route``: each router's first decision, scored.

* :mod:`~routerlab._routing_eval.decisions`: first decisions computed on a split and summarised;
* :mod:`~routerlab._routing_eval.stored`: first decisions kept in the results store, the routing verdict;
* :mod:`~routerlab._routing_eval.tracking`: the MLflow parent and child runs of a routing comparison.

Private: the public entry points are :mod:`routerlab.app` and ``routerlab``'s own names.
"""
