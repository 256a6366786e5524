"""`batches`, `limiters` and `profiles`: their pages exist with an empty state until the
engines that write those keys land (§1.7, §1.9, §1.10).

Each list answers the usual paging envelope with no items; each detail or action
answers 404, as for a batch, limiter or profile that does not exist.
"""

from ..auth import ApiError, endpoint
from .common import Paging


def _empty(request, **kwargs):
    paging = Paging(request)
    return paging.envelope(paging.slice([]), 0, available=False)


def _missing(kind: str):
    def handler(request, **kwargs):
        raise ApiError("not_found", f"No such {kind}.")
    return handler


urls = {
    "batches": endpoint(GET=_empty),
    "batches/dead": endpoint(GET=_empty),
    "batches/<str:bid>": endpoint(GET=_missing("batch")),
    "limiters": endpoint(GET=_empty),
    "limiters/<str:name>": endpoint(GET=_missing("limiter")),
    "limiters/<str:name>/reset": endpoint(POST=_missing("limiter")),
    "profiles": endpoint(GET=_empty),
    "profiles/<str:key>/data": endpoint(GET=_missing("profile")),
}
