"""The job hash on the wire: JSON codec, jids, timestamps, argument checks, backtraces."""

import base64
import binascii
import json
import math
import secrets
import time
import warnings
import zlib
from datetime import datetime, timedelta, timezone

from .errors import InvalidJobError, JobArgumentError

# Keys that steer a push but never reach Redis (wire §4.2).
TRANSIENT_KEYS = ("pool", "client_class", "name", "sync", "on_commit", "transactional",
                  "retry_in", "retries_exhausted", "cron", "cron_args", "cron_tz")

MS_THRESHOLD = 100_000_000_000  # an int below this is seconds, not ms (wire §5)
ERROR_MESSAGE_MAX = 10_000
ERROR_MESSAGE_FAILED = "!!! ERROR MESSAGE THREW AN ERROR !!!"

PREVIEW_BYTES = 200


class MalformedPayload(ValueError):
    """Stored bytes that are not a JSON value Wurk (and Ruby's parser) would write."""


def _refuse_constant(name: str):
    # NaN and Infinity are not JSON. Python's decoder accepts them, Ruby's refuses them,
    # and Wurk's encoder cannot write them back, so a payload holding one could be run
    # but never retried or moved: refuse it up front.
    raise MalformedPayload(f"{name} is not valid JSON")


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_decoder = json.JSONDecoder(parse_constant=_refuse_constant)


def dumps(obj) -> bytes:
    """Encode compactly, as Ruby's generator does, so members match byte for byte."""
    return _encoder.encode(obj).encode("utf-8")


def loads(raw: bytes | str):
    """Decode stored JSON; every way the bytes can fail to decode raises MalformedPayload.

    Hostile payloads fail in ways json's own ValueError does not cover: invalid UTF-8
    (UnicodeDecodeError is one, but only by luck), nesting past the interpreter's
    recursion limit (RecursionError) and NaN. Callers guard on one exception type.
    """
    try:
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw = bytes(raw).decode("utf-8")
        return _decoder.decode(raw)
    except MalformedPayload:
        raise
    except (ValueError, RecursionError, TypeError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise MalformedPayload(f"not valid JSON ({reason:.200})") from None


def preview(raw) -> str:
    """The first bytes of a payload, safe to log."""
    return repr(bytes(raw[:PREVIEW_BYTES]) if isinstance(raw, (bytes, bytearray)) else
                str(raw)[:PREVIEW_BYTES])


def decode_job(raw: bytes | str) -> dict:
    """The one decoder of stored jobs: the job hash, or InvalidJobError saying why not.

    Shared by the processor, the poller, the reaper and the data API, so a payload is
    judged the same everywhere: what one of them cannot run, none of them drops.
    """
    try:
        job = loads(raw)
    except MalformedPayload as exc:
        raise InvalidJobError(f"payload is {exc}: {preview(raw)}") from None
    if not isinstance(job, dict):
        raise InvalidJobError(f"payload is JSON but not an object: {preview(raw)}")
    if not isinstance(job.get("class"), str) or not job["class"]:
        raise InvalidJobError(f"payload has no 'class' naming its task: {preview(raw)}")
    # Every Sidekiq client refuses to push a job without an args array, so a payload
    # lacking one was written by hand or damaged; running it with no args would guess.
    if not isinstance(job.get("args"), list):
        raise InvalidJobError(f"payload 'args' is missing or not a list: {preview(raw)}")
    return job


def new_jid() -> str:
    return secrets.token_hex(12)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# How job timestamps (created_at, enqueued_at, failed_at, ...) are written: Sidekiq 8
# writes integer epoch milliseconds; Sidekiq 6 and 7 write float epoch seconds and show
# an integer-ms time as a date tens of thousands of years away.
TIMESTAMP_FORMATS = ("ms", "float")


def timestamp_clock(timestamp_format: str):
    """The function that stamps job times in `timestamp_format` ("ms" or "float")."""
    return now_ms if timestamp_format == "ms" else time.time


INTERVAL_THRESHOLD = 1_000_000_000


def scheduled_at(interval) -> float | None:
    """Apply the interval rule: the epoch seconds to run at, or None for "now".

    Numbers below 10^9 are relative seconds, larger ones absolute epoch times;
    a time that is not in the future means an immediate push.
    """
    if isinstance(interval, timedelta):
        value = interval.total_seconds()
    elif isinstance(interval, datetime):
        value = interval.timestamp()
    elif isinstance(interval, (int, float)) and not isinstance(interval, bool):
        value = float(interval)
    else:
        raise JobArgumentError(f"a schedule must be seconds, a timedelta or a datetime, "
                               f"got {type(interval).__name__}")
    now = time.time()
    at = now + value if value < INTERVAL_THRESHOLD else value
    return at if at > now else None


def to_epoch_seconds(value) -> float | None:
    """Read a job timestamp written by any Sidekiq version as epoch seconds.

    Floats are seconds (Sidekiq < 8); ints are milliseconds, except implausibly small
    ones, which can only be seconds.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        return value / 1000 if value >= MS_THRESHOLD else float(value)
    if isinstance(value, str):
        try:
            return to_epoch_seconds(loads(value))
        except ValueError:
            return None
    return None


def to_datetime(value) -> datetime | None:
    seconds = to_epoch_seconds(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)


# --- argument checks (core semantics §4 step 5) -------------------------------------

_NATIVE_SCALARS = (str, int, bool, type(None))


def _first_bad_value(value, path: str):
    """Return (path, value, reason) for the first non-JSON-native value, else None."""
    kind = type(value)
    if kind in _NATIVE_SCALARS:
        return None
    if kind is float:
        return None if math.isfinite(value) else (path, value, "is not a finite number")
    if kind is list:
        for index, item in enumerate(value):
            found = _first_bad_value(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return (f"{path} key {key!r}", key, "is not a str dict key")
            found = _first_bad_value(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    return (path, value, "is not JSON-native")


def check_args(args: list, mode) -> None:
    """Enforce JSON-native arguments: `"raise"` raises, `"warn"` warns, False skips."""
    if not mode:
        return
    for position, value in enumerate(args):
        found = _first_bad_value(value, f"argument {position}")
        if found is None:
            continue
        path, bad, reason = found
        message = (f"{path} of type {type(bad).__module__}.{type(bad).__qualname__} {reason}: "
                   f"{bad!r:.80}. Job arguments must be str, int, float, bool, None, list "
                   f"or dict with str keys; pass an id or a string instead.")
        if mode == "warn":
            warnings.warn(message, stacklevel=4)
            return
        raise JobArgumentError(message)


# --- failure fields (wire §4.3, §4.4) -----------------------------------------------

def error_message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        return ERROR_MESSAGE_FAILED
    text = text[:ERROR_MESSAGE_MAX]
    # Lone surrogates cannot be written as UTF-8; replace them rather than fail.
    return text.encode("utf-8", "replace").decode("utf-8")


def error_class(exc: BaseException) -> str:
    kind = type(exc)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def backtrace_lines(exc: BaseException) -> list[str]:
    """Frames innermost first, Ruby's order, as `file:line:in 'function'`."""
    lines = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        lines.append(f"{code.co_filename}:{tb.tb_lineno}:in '{code.co_name}'")
        tb = tb.tb_next
    lines.reverse()
    return lines


def encode_backtrace(lines: list[str]) -> str:
    return base64.b64encode(zlib.compress(dumps(lines))).decode("ascii")


def decode_backtrace(value) -> list[str]:
    """Read any Sidekiq backtrace form: strict or MIME base64 of zlib JSON, or a plain list."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(line) for line in value]
    try:
        packed = base64.b64decode("".join(str(value).split()), validate=False)
        return [str(line) for line in loads(zlib.decompress(packed))]
    except (binascii.Error, zlib.error, ValueError):
        return []
