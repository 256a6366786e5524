"""The job hash on the wire: JSON codec, jids, timestamps, argument checks, backtraces."""

import base64
import binascii
import json
import math
import os
import reprlib
import time
import warnings
import zlib
from datetime import UTC, datetime, timedelta

from .errors import InvalidJobError, JobArgumentError

MS_THRESHOLD = 100_000_000_000  # ints below are seconds (as ms they would be before 1974)
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


# Ruby's JSON.parse (Sidekiq's reader) refuses documents nested deeper than this, and
# Python's own limit moves with the version (about 1,000 on 3.11, far more on 3.13): one
# fixed limit makes a payload readable or not alike on every Wurk and Sidekiq.
MAX_DOCUMENT_NESTING = 100


def loads(raw: bytes | str):
    """Decode stored JSON; every way the bytes can fail to decode raises MalformedPayload.

    Hostile payloads fail in ways json's own ValueError does not cover: invalid UTF-8
    (UnicodeDecodeError is one, but only by luck), nesting past the interpreter's
    recursion limit (RecursionError) and NaN. Callers guard on one exception type.
    """
    try:
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw = bytes(raw).decode("utf-8")
        value = _decoder.decode(raw)
    except MalformedPayload:
        raise
    except (ValueError, RecursionError, TypeError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise MalformedPayload(f"not valid JSON ({reason:.200})") from None
    # Only a document with that many openers can be that deep: two C-speed counts keep
    # the walk off every ordinary job.
    if raw.count("[") + raw.count("{") >= MAX_DOCUMENT_NESTING and _nested_past_limit(value):
        raise MalformedPayload(f"not valid JSON (nested more than {MAX_DOCUMENT_NESTING} "
                               f"levels, which Sidekiq's parser refuses)")
    return value


def _nested_past_limit(value) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DOCUMENT_NESTING:
            return True
        children = item.values() if type(item) is dict else item
        stack.extend((child, depth + 1) for child in children
                     if type(child) in (list, dict))
    return False


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
    # What secrets.token_hex(12) returns, without its three Python-level calls per push.
    return os.urandom(12).hex()


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
# The last second of the year 9999: a later run time cannot be shown as a date, and is
# a mistake (milliseconds given as seconds, an infinite or absurd delay). A job stored
# at such a score would simply never run.
MAX_AT = 253_402_300_799


# A schedule: seconds from now (or epoch seconds from 10^9 on), a timedelta or a datetime.
Interval = float | timedelta | datetime


def scheduled_at(interval: Interval) -> float | None:
    """Apply the interval rule: the epoch seconds to run at, or None for "now".

    As in Sidekiq (`interval.to_f`), the value in seconds decides: below 10^9 it is
    relative, else an absolute epoch time; a time that is not in the future means an
    immediate push. NaN, infinities and times past the year 9999 raise JobArgumentError.
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
    if not math.isfinite(value):
        raise JobArgumentError(f"a schedule must be a finite number of seconds, got {value!r}")
    now = time.time()
    at = now + value if value < INTERVAL_THRESHOLD else value
    if at > MAX_AT:
        raise JobArgumentError(f"a schedule of {interval!r:.60} puts the job after the year "
                               f"9999; give seconds from now or epoch seconds")
    return at if at > now else None


def check_at(value, label: str = "'at'"):
    """A push's `at`, checked: finite epoch seconds no later than the year 9999."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JobArgumentError(f"{label} must be epoch seconds, got {value!r:.60}")
    if not math.isfinite(value) or value > MAX_AT:
        raise JobArgumentError(f"{label} must be epoch seconds before the year 10000, "
                               f"got {value!r}")
    return value


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
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


# --- argument checks ---------------------------------------------------------------

_NATIVE_SCALARS = (str, int, bool, type(None))
# Sidekiq parses jobs with Ruby's JSON.parse, which refuses documents nested deeper than
# 100 arrays and objects; the job object and its args array are two of them.
MAX_ARG_NESTING = 98
# Bounded reprs: a bad value may be huge or nested thousands of levels deep.
_short = reprlib.Repr()  # keyword arguments need Python 3.12
_short.maxlevel, _short.maxstring, _short.maxother = 3, 60, 60
_ALLOWED = ("Job arguments must be str, int, float, bool, None, list or dict with str "
            "keys; pass an id or a string instead.")


def _native(value, depth: int = 0) -> bool:
    """True if `value` is JSON-native by exact type (the fast path of every push)."""
    kind = type(value)
    if kind in _NATIVE_SCALARS:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= MAX_ARG_NESTING:
        return False
    if kind is list:
        for item in value:
            if not _native(item, depth + 1):
                return False
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _native(item, depth + 1):
                return False
        return True
    return False


def _first_bad_value(value, path: str, depth: int = 0):
    """Return (path, value, reason) for the first non-JSON-native value, else None."""
    kind = type(value)
    if kind in _NATIVE_SCALARS:
        return None
    if kind is float:
        return None if math.isfinite(value) else (path, value, "is not a finite number")
    if depth >= MAX_ARG_NESTING and kind in (list, dict):
        return _too_deep(path, value)
    if kind is list:
        return _first_in_items(enumerate(value), path, depth, _first_bad_value)
    if kind is dict:
        for key in value:
            if type(key) is not str:
                return (f"{path} key {key!r}", key, "is not a str dict key")
        return _first_in_items(value.items(), path, depth, _first_bad_value)
    return (path, value, "is not JSON-native")


def _first_unencodable(value, path: str, depth: int = 0):
    """Return (path, value, reason) for the first value JSON cannot write at all, else
    None. Looser than `_first_bad_value`: tuples and subclasses of str, int, float, list
    and dict are written as their plain JSON forms."""
    if isinstance(value, str):
        return _surrogate_problem(value, path)
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value, "is not a finite number")
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_ARG_NESTING:
        return _too_deep(path, value)
    if isinstance(value, (list, tuple)):
        return _first_in_items(enumerate(value), path, depth, _first_unencodable)
    if isinstance(value, dict):
        for key in value:
            if isinstance(key, str):
                found = _surrogate_problem(key, f"{path} key {key!r}")
            elif key is None or isinstance(key, (bool, int, float)):
                found = None  # JSON writes these keys as strings
            else:
                found = (f"{path} key {key!r}", key, "cannot be a JSON object key")
            if found:
                return found
        return _first_in_items(value.items(), path, depth, _first_unencodable)
    return (path, value, "cannot be written as JSON")


def _too_deep(path: str, value):
    # Named by its top-level argument or option: a path a hundred levels long says less.
    return (path.partition("[")[0], value, f"is nested more than {MAX_ARG_NESTING} levels "
                                           f"deep, past what Sidekiq's JSON parser reads")


def _first_in_items(items, path: str, depth: int, walk):
    for key, item in items:
        found = walk(item, f"{path}[{key!r}]", depth + 1)
        if found:
            return found
    return None


def _surrogate_problem(text: str, path: str):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return (path, text, "holds a lone surrogate, which UTF-8 cannot encode")
    return None


def _first_unencodable_arg(args: list):
    for position, value in enumerate(args):
        found = _first_unencodable(value, f"argument {position}")
        if found:
            return found
    return None


def _describe(found) -> str:
    path, bad, reason = found
    return (f"{path} of type {type(bad).__module__}.{type(bad).__qualname__} {reason}: "
            f"{_short.repr(bad)}.")


def check_args(args: list, mode) -> None:
    """Enforce JSON-native arguments: `"raise"` raises, `"warn"` warns, False skips.

    "warn" pushes what JSON can write (a tuple becomes a list, an IntEnum its int),
    after a warning; a value it cannot write at all (a set, a datetime, NaN) still
    raises JobArgumentError, since no faithful encoding exists.
    """
    if not mode:
        return
    for position, value in enumerate(args):
        if _native(value):
            continue
        message = f"{_describe(_first_bad_value(value, f'argument {position}'))} {_ALLOWED}"
        if mode != "warn":
            raise JobArgumentError(message)
        warnings.warn(message, stacklevel=4)
        unencodable = _first_unencodable_arg(args)
        if unencodable:
            raise JobArgumentError(f"{_describe(unencodable)} JSON cannot write it, so the "
                                   f"job is not pushed, even with ON_COMPLEX_ARGUMENTS='warn'.")
        return


def encode_job(job: dict) -> bytes:
    """`dumps(job)`, with a failure told as a JobArgumentError naming its argument (for
    paths off the hot one; the client inlines the same try)."""
    try:
        return dumps(job)
    except (TypeError, ValueError, RecursionError) as exc:
        raise encode_error(job, exc) from None


def encode_error(job: dict, exc: BaseException) -> JobArgumentError:
    """Why `dumps(job)` failed, naming the argument or option at fault.

    Called only after an encode failed (a lone surrogate, nesting past the recursion
    limit, a value the argument check was told to skip), so the hot path pays nothing.
    """
    args = job.get("args")
    found = _first_unencodable_arg(args) if isinstance(args, list) else None
    for key, value in job.items():
        if found is None and key != "args":
            found = _first_unencodable(value, f"job option {key!r}")
    if found is None:
        return JobArgumentError(f"the job cannot be written as JSON: "
                                f"{type(exc).__name__}: {exc}")
    return JobArgumentError(f"{_describe(found)} The job cannot be written as JSON.")


# --- failure fields -----------------------------------------------------------

def error_message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a user's __str__ may raise anything
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
