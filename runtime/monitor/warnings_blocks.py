"""``with warnings.catch_warnings(): warnings.simplefilter(...)`` blocks, replayed whole.

Inside such a block the program only changes the warning filters, which the
block's exit puts back (the same list object, and ``showwarning``); what is
left of it is what a warning issued inside sees, and the filters' version
counter, which tells the warning registries to forget which warnings they
already showed.  A replay makes the whole block again, on a new
``catch_warnings`` object and after the graph, with the same filter calls:
its effects on the process are then eager's.  The monitor finds such blocks
(``calls.py``); a block that does anything else, or that records warnings
(``record=True``), is not turned into one call.
"""

from __future__ import annotations

import warnings

FILTER_FUNCTIONS = {
    "simplefilter": warnings.simplefilter,
    "filterwarnings": warnings.filterwarnings,
    "resetwarnings": warnings.resetwarnings,
}


def replay_warnings_block(options: tuple, calls: tuple) -> None:
    """Enter ``warnings.catch_warnings(**dict(options))``, make ``calls`` (each
    ``(filter function name, args, kwargs)``) and exit, as the program's block did."""
    with warnings.catch_warnings(**dict(options)):
        for name, args, kwargs in calls:
            FILTER_FUNCTIONS[name](*args, **kwargs)
