"""`profiles`: routes kept for when their engine lands.

Nothing in this version writes profiles, so every one of these endpoints answers 501
`not_available` (and `api/meta` lists the feature as off) rather than an empty list that
would suggest there is simply nothing yet.
Turning a feature on in `overview.FEATURES` and routing real views here is all a later
version needs.
"""

from ..auth import ApiError, endpoint
from .overview import FEATURES

NAMES = {"profiles": "Profiles"}


def _not_available(feature: str):
    def handler(request, **kwargs):
        raise ApiError("not_available", f"{NAMES[feature]} are not available in this version "
                       "of Wurk yet: nothing creates them.", feature=feature)
    return handler


def _routes(feature: str, paths: list[tuple[str, str]]) -> dict:
    if FEATURES[feature]:
        raise RuntimeError(f"feature {feature!r} is on but still has placeholder routes")
    return {path: endpoint(**{method: _not_available(feature)}) for path, method in paths}


urls = {
    **_routes("profiles", [("profiles", "GET"), ("profiles/<str:key>/data", "GET")]),
}
