"""The job-hash codec: JSON bytes, jids, timestamps, the interval rule, argument checks,
and the failure fields (error message, class, backtrace)."""

import base64
import enum
import inspect
import json
import re
import time
import uuid
import warnings
import zlib
from collections import OrderedDict, defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from wurk_django.core import JobArgumentError, WurkError, payload
from wurk_django.core.payload import (
    backtrace_lines,
    check_args,
    decode_backtrace,
    dumps,
    encode_backtrace,
    error_class,
    error_message,
    loads,
    new_jid,
    now_ms,
    scheduled_at,
    to_datetime,
    to_epoch_seconds,
)

# --- JSON codec -----------------------------------------------------------------------

def test_dumps_is_compact_utf8_bytes_in_insertion_order():
    encoded = dumps({"zeta": "Zürich ✓ 🚀", "alpha": [1, 2.5, None, True], "m": {"k": "v"}})
    assert isinstance(encoded, bytes)
    assert encoded == '{"zeta":"Zürich ✓ 🚀","alpha":[1,2.5,null,true],"m":{"k":"v"}}'.encode()
    assert b"\\u" not in encoded  # raw UTF-8, never \u escapes
    assert b" " not in dumps({"a": [1, {"b": 2}]})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_raise(value):
    with pytest.raises(ValueError):
        dumps({"args": [value]})


def test_int_and_float_stay_distinct_through_a_round_trip():
    raw = b'{"created_at":1739522580123,"at":1739522580.0,"f":2.0,"i":2}'
    decoded = loads(raw)
    assert type(decoded["created_at"]) is int
    assert type(decoded["at"]) is float and type(decoded["f"]) is float
    assert type(decoded["i"]) is int
    assert dumps(decoded) == raw


def test_loads_accepts_bytes_and_str():
    assert loads(b'{"a":"\xc3\xa9"}') == {"a": "é"} == loads('{"a":"é"}')


def test_jid_is_24_lowercase_hex_characters_and_random():
    jids = {new_jid() for _ in range(200)}
    assert len(jids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{24}", jid) for jid in jids)


def test_now_ms_is_integer_wall_clock_milliseconds():
    before = time.time()
    value = now_ms()
    after = time.time()
    assert type(value) is int
    assert before * 1000 - 1 <= value <= after * 1000 + 1


# --- timestamps -----------------------------------------------------------------------

@pytest.mark.parametrize("value, seconds", [
    (1739522580.123456, 1739522580.123456),   # float: seconds (Sidekiq < 8)
    (1739522580123, 1739522580.123),          # int: milliseconds
    (1739522580, 1739522580.0),               # small int: can only be seconds
    (99_999_999_999, 99_999_999_999.0),       # just under the threshold: seconds
    (100_000_000_000, 100_000_000.0),         # at the threshold: milliseconds
    ("1739522580123", 1739522580.123),        # a JSON number stored as text
    ("1739522580.5", 1739522580.5),
])
def test_timestamp_reader_rules(value, seconds):
    assert to_epoch_seconds(value) == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize("value", [None, True, False, "soon", [], {}])
def test_unreadable_timestamps_give_none(value):
    assert to_epoch_seconds(value) is None


def test_to_datetime_reads_both_formats_as_utc():
    expected = datetime(2025, 2, 14, 8, 43, 0, 123000, tzinfo=UTC)
    assert to_datetime(1739522580123) == expected
    assert to_datetime(1739522580.123) == expected
    assert to_datetime(None) is None


# --- the interval rule --------------------------------------------------------------------

def test_small_numbers_are_seconds_from_now():
    before = time.time()
    at = scheduled_at(60)
    after = time.time()
    assert type(at) is float
    assert before + 60 <= at <= after + 60


def test_a_timedelta_is_relative():
    before = time.time()
    at = scheduled_at(timedelta(minutes=2))
    assert before + 120 <= at <= time.time() + 120


def test_large_numbers_and_datetimes_are_absolute():
    future = time.time() + 3600
    assert scheduled_at(future) == future
    when = datetime.now(UTC) + timedelta(hours=2)
    assert scheduled_at(when) == when.timestamp()


def test_the_threshold_between_relative_and_absolute_is_one_billion():
    before = time.time()
    assert scheduled_at(999_999_999) >= before + 999_999_999     # relative: ~31 years ahead
    assert scheduled_at(1_000_000_000) is None                    # absolute: the year 2001


@pytest.mark.parametrize("interval", [
    0, -5, 0.0, timedelta(0), timedelta(seconds=-30),
    1_000_000_000, 1_500_000_000.0,
    datetime(2020, 1, 1, tzinfo=UTC),
])
def test_now_or_the_past_means_run_immediately(interval):
    assert scheduled_at(interval) is None


def test_the_rule_applies_to_a_datetime_after_normalising_it():
    # As in Sidekiq (`interval.to_f`): a datetime before 2001-09-09 reads as relative.
    before = time.time()
    assert scheduled_at(datetime(1970, 1, 1, 0, 1, tzinfo=UTC)) >= before + 60


@pytest.mark.parametrize("interval", ["60", True, None, Decimal("5")])
def test_other_interval_types_are_rejected(interval):
    with pytest.raises(JobArgumentError, match="a schedule must be seconds, a timedelta"):
        scheduled_at(interval)


# --- argument checks -----------------------------------------------------------------------

class Color(enum.IntEnum):
    RED = 1


class Mode(str, enum.Enum):  # noqa: UP042 - the (str, Enum) mix-in applications write
    FAST = "fast"


@pytest.mark.parametrize("bad, type_name", [
    ((1, 2), "builtins.tuple"),
    ({1, 2}, "builtins.set"),
    (frozenset([1]), "builtins.frozenset"),
    (b"raw", "builtins.bytes"),
    (Decimal("1.50"), "decimal.Decimal"),
    (datetime(2025, 2, 14, 8, 43), "datetime.datetime"),
    (uuid.UUID(int=7), "uuid.UUID"),
    (OrderedDict(a=1), "collections.OrderedDict"),
    (defaultdict(list), "collections.defaultdict"),
    (Color.RED, "tests.core.test_payload.Color"),
    (Mode.FAST, "tests.core.test_payload.Mode"),
    (object(), "builtins.object"),
    (float("nan"), "builtins.float"),
    (float("inf"), "builtins.float"),
])
def test_raise_mode_names_the_argument_position_and_type(bad, type_name):
    with pytest.raises(JobArgumentError) as info:
        check_args(["fine", bad], "raise")
    message = str(info.value)
    assert message.startswith("argument 1 of type " + type_name)
    assert "Job arguments must be str, int, float, bool, None, list or dict with str keys" \
        in message


def test_non_str_dict_keys_are_named():
    with pytest.raises(JobArgumentError, match=r"^argument 0 key 1 of type builtins\.int "
                                               r"is not a str dict key"):
        check_args([{1: "one"}], "raise")


def test_nested_values_are_found_with_their_path():
    with pytest.raises(JobArgumentError,
                       match=r"^argument 2\['rows'\]\[1\]\['when'\] of type decimal\.Decimal"):
        check_args([1, "x", {"rows": [{"ok": 1}, {"when": Decimal("3")}]}], "raise")
    with pytest.raises(JobArgumentError, match=r"^argument 0\[0\]\[1\] of type builtins\.tuple"):
        check_args([[["a", (1,)]]], "raise")


def test_json_native_arguments_pass():
    check_args(["s", 1, -2.5, True, None, [1, [2, {"k": [None]}]], {"a": {"b": "é"}}, [], {}],
               "raise")


def test_warn_mode_warns_and_carries_on():
    with pytest.warns(UserWarning, match=r"argument 0 of type builtins\.tuple"):
        check_args([(1, 2)], "warn")


def test_false_skips_the_check():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_args([(1, 2), {1: b"x"}], False)


def test_job_argument_error_is_a_type_error_and_a_value_error():
    assert issubclass(JobArgumentError, TypeError)
    assert issubclass(JobArgumentError, ValueError)
    assert issubclass(JobArgumentError, WurkError)


# --- failure fields -------------------------------------------------------------------

class Declined(Exception):
    pass


class Outer:
    class Inner(Exception):
        pass


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("cannot render")


def test_error_message_is_truncated_to_ten_thousand_characters():
    assert error_message(ValueError("x" * 25_000)) == "x" * 10_000
    assert error_message(ValueError("é" * 10_001)) == "é" * 10_000
    assert error_message(ValueError("card declined")) == "card declined"
    assert error_message(ValueError()) == ""


def test_error_message_when_rendering_it_raises():
    assert error_message(Unprintable()) == "!!! ERROR MESSAGE THREW AN ERROR !!!"


def test_error_message_is_valid_utf8():
    message = error_message(ValueError("bad \ud800 surrogate"))
    message.encode("utf-8")  # must not raise
    assert message.startswith("bad ") and message.endswith(" surrogate")


@pytest.mark.parametrize("exc, name", [
    (ValueError("x"), "ValueError"),
    (KeyError("x"), "KeyError"),
    (Declined(), "tests.core.test_payload.Declined"),
    (Outer.Inner(), "tests.core.test_payload.Outer.Inner"),
    (json.JSONDecodeError("m", "doc", 0), "json.decoder.JSONDecodeError"),
])
def test_error_class_names_builtins_bare_and_others_by_module(exc, name):
    assert error_class(exc) == name


def _innermost():
    raise Declined("deep")


def _middle():
    _innermost()


def _outermost():
    _middle()


def test_backtrace_lines_are_innermost_first_in_ruby_format():
    with pytest.raises(Declined) as info:
        _outermost()
    lines = backtrace_lines(info.value)
    names = [re.search(r":in '(.+)'$", line).group(1) for line in lines]
    assert names[:4] == ["_innermost", "_middle", "_outermost",
                         "test_backtrace_lines_are_innermost_first_in_ruby_format"]
    raise_line = inspect.getsourcelines(_innermost)[1] + 1
    assert lines[0] == f"{__file__}:{raise_line}:in '_innermost'"
    assert all(re.fullmatch(r".+:\d+:in '[^']+'", line) for line in lines)


def test_encode_backtrace_is_strict_base64_of_zlib_compact_json():
    lines = ["app/jobs.py:12:in 'perform'", "wurk/processor.py:90:in 'process'"]
    encoded = encode_backtrace(lines)
    assert isinstance(encoded, str)
    assert "\n" not in encoded
    raw = base64.b64decode(encoded, validate=True)
    assert raw[:1] == b"\x78"  # a zlib header (RFC 1950), not raw deflate
    assert zlib.decompress(raw) == b'["app/jobs.py:12:in \'perform\'",' \
                                   b'"wurk/processor.py:90:in \'process\'"]'
    assert encoded == base64.b64encode(zlib.compress(json.dumps(
        lines, separators=(",", ":")).encode())).decode()


def test_decode_backtrace_reads_every_sidekiq_form():
    lines = [f"app/file_{i}.rb:{i}:in 'method_{i}'" for i in range(40)]
    strict = encode_backtrace(lines)
    mime = base64.encodebytes(zlib.compress(json.dumps(lines).encode())).decode()
    assert "\n" in mime.strip()  # older Sidekiq wrapped its base64 in short lines
    assert decode_backtrace(strict) == lines
    assert decode_backtrace(mime) == lines
    assert decode_backtrace(lines) == lines  # very old Sidekiq: a plain array
    assert decode_backtrace(None) == []
    assert decode_backtrace("not base64 at all!") == []


def test_interval_threshold_constant():
    assert payload.INTERVAL_THRESHOLD == 1_000_000_000
    assert payload.ERROR_MESSAGE_MAX == 10_000
