"""The value checks behind `Config` and `ProcessOptions`; every error names its field.

Messages start with the field name, so the Django layer can swap it for the WURK key
(`ConfigurationError.renamed`) and the CLI for its flag.
"""

import contextlib
import functools
import inspect
import math
from collections.abc import Mapping
from typing import Any

from .errors import ConfigurationError, JobArgumentError

REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel")
# redis-py connection options that Wurk sets itself, with what to use instead.
WURK_OWNED_REDIS_OPTIONS = {
    "max_connections": "set redis_pool_size (WURK['REDIS_POOL_SIZE']) instead",
    "timeout": "Wurk sets the pool's wait from its network timeout",
    "socket_timeout": "Wurk sets it from its network timeout",
    "retry": "Wurk retries only idempotent reads, never a push",
    "decode_responses": "Wurk reads replies as bytes",
}


def whole(name: str, value, minimum: int, *, optional: bool = False):
    """A whole number >= minimum (bool is not a number here)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}",
                                 field=name)
    return value


def number(name: str, value, *, positive: bool, optional: bool = False,
           unit: str = "seconds"):
    """A finite number (of seconds, by default), > 0 or >= 0."""
    if optional and value is None:
        return value
    is_number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not is_number or not math.isfinite(value) or value < 0 or (positive and value == 0):
        rule = f"> 0 (a number of {unit})" if positive else f"a number >= 0 ({unit})"
        raise ConfigurationError(f"{name} must be {rule}, got {value!r}", field=name)
    return value


def one_of(name: str, value, choices: tuple, described: str):
    # By type as well as value: 0 is not False, nor 1 True.
    if not any(type(value) is type(choice) and value == choice for choice in choices):
        raise ConfigurationError(f"{name} must be {described}, got {value!r}", field=name)
    return value


def names(name: str, value) -> tuple:
    """A list (or set) of strings; a bare string would be read one letter at a time."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)) \
            or not all(isinstance(item, str) for item in value):
        raise ConfigurationError(f"{name} must be a list of strings, got {value!r:.100}",
                                 field=name)
    return tuple(value)


MAX_PORT = 65_535


def listen_port(name: str, value):
    """A TCP port to listen on, 1 to 65535, or None (off)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 1 <= value <= MAX_PORT):
        raise ConfigurationError(f"{name} must be a port number from 1 to {MAX_PORT}, got "
                                 f"{value!r}", field=name)
    return value


def listen_address(name: str, value):
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{name} must be an address to listen on, such as '0.0.0.0' "
                                 f"or '127.0.0.1', got {value!r}", field=name)
    return value


@contextlib.contextmanager
def blame(field: str):
    """Attribute any ConfigurationError or JobArgumentError raised inside to `field`."""
    try:
        yield
    except ConfigurationError as exc:
        if exc.field is not None:
            raise
        raise ConfigurationError(str(exc), field=field) from None
    except JobArgumentError as exc:
        raise ConfigurationError(str(exc), field=field) from None


def redis_url(url) -> str:
    """A redis://, rediss:// or unix:// URL, or a redis+sentinel:// one naming Sentinels
    and a master (the password masked in any error)."""
    if not isinstance(url, str) or not url:
        raise ConfigurationError("redis_url must be a non-empty string", field="redis_url")
    scheme, separator, _ = url.partition("://")
    if not separator or scheme.lower() not in REDIS_SCHEMES:
        from .redis import mask_url
        raise ConfigurationError(f"redis_url must be a redis://, rediss:// or unix:// URL, "
                                 f"got {mask_url(url)!r:.200} (for Sentinel: "
                                 f"redis+sentinel://host:26379,.../master)", field="redis_url")
    if scheme.lower().endswith("+sentinel"):
        from .sentinel import parse_url
        parse_url(url)
    return url


def redis_options(url: str, options) -> dict:
    """Extra redis-py connection options: known to redis-py for the URL's scheme, and
    none that Wurk sets itself (redis-py would only fail at the first connection)."""
    if not isinstance(options, Mapping):
        raise ConfigurationError(f"redis_options must be a dict, got {options!r:.100}",
                                 field="redis_options")
    if not options:
        return {}
    known = _redis_option_names(url.partition("://")[0].lower())
    for key in options:
        if key in WURK_OWNED_REDIS_OPTIONS:
            raise ConfigurationError(f"redis_options: {key!r} cannot be set: "
                                     f"{WURK_OWNED_REDIS_OPTIONS[key]}", field="redis_options")
        if key not in known:
            import difflib
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError(f"redis_options: {key!r} is not a redis-py connection "
                                     f"option for a {url.partition('://')[0]}:// URL{hint}",
                                     field="redis_options")
    return dict(options)


@functools.cache
def _redis_option_names(scheme: str) -> list[str]:
    from redis import connection
    classes: list[type[Any]] = [connection.AbstractConnection]
    by_scheme: dict[str, list[type[Any]]] = {
        "unix": [connection.UnixDomainSocketConnection],
        "rediss": [connection.Connection, connection.SSLConnection],
        "rediss+sentinel": [connection.Connection, connection.SSLConnection]}
    classes += by_scheme.get(scheme, [connection.Connection])
    found = {"connection_class"}
    if scheme.endswith("+sentinel"):
        found.add("sentinel_kwargs")  # the Sentinels' own connection options, whole
    for cls in classes:
        for parameter in inspect.signature(cls.__init__).parameters.values():
            if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                found.add(parameter.name)
    found.discard("self")
    return sorted(found)


RELIABLE_PUSH_KEYS = {"buffer", "overflow"}
OVERFLOW_POLICIES = ("drop_oldest", "raise")


def reliable_push(value) -> dict | None:
    """Reliable push's settings: None or False (off), True (a 1000-job buffer that drops
    its oldest push when full), or a dict of `buffer` and `overflow`."""
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping) or set(value) - RELIABLE_PUSH_KEYS:
        raise ConfigurationError(f"reliable_push must be True, False or a dict with 'buffer' "
                                 f"and/or 'overflow', got {value!r:.100}", field="reliable_push")
    size = value.get("buffer", 1000)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigurationError(f"reliable_push['buffer'] must be a whole number of jobs "
                                 f">= 1, got {size!r}", field="reliable_push")
    overflow = value.get("overflow", "drop_oldest")
    if overflow not in OVERFLOW_POLICIES:
        raise ConfigurationError(f"reliable_push['overflow'] must be 'drop_oldest' or "
                                 f"'raise', got {overflow!r}", field="reliable_push")
    return {"buffer": size, "overflow": overflow}


ENCRYPTION_KEYS = {"active_version", "key_resolver"}


def encryption(value) -> dict | None:
    """Argument encryption's settings: None (off) or a dict of `active_version` (a whole
    number >= 1) and `key_resolver` (a callable `version -> 32 bytes`, or its import path,
    imported when first needed)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != ENCRYPTION_KEYS:
        raise ConfigurationError(f"encryption must be a dict with 'active_version' and "
                                 f"'key_resolver', got {value!r:.100}", field="encryption")
    version, resolver = value["active_version"], value["key_resolver"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigurationError(f"encryption['active_version'] must be a whole number >= 1, "
                                 f"got {version!r}", field="encryption")
    dotted = isinstance(resolver, str) and "." in resolver.strip(".")
    if not (callable(resolver) or dotted):
        raise ConfigurationError(f"encryption['key_resolver'] must be a function of the key "
                                 f"version or its import path ('myproject.crypto.key_for'), "
                                 f"got {resolver!r:.100}", field="encryption")
    return {"active_version": version, "key_resolver": resolver}
