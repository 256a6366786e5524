"""Config: the spec's defaults, validation messages, queue modes and capsules, copies, hooks."""

import dataclasses
import logging
import os

import pytest

import wurk_django
from wurk_django.core import Config, ConfigurationError, WurkError, get_default_config
from wurk_django.core.config import LIFECYCLE_EVENTS, default_error_handler, parse_queue
from wurk_django.core.middleware import Chain


class Marker:
    def call(self, *args):
        return args[-1]()


# --- defaults -----------------------------------------------------------------------

def test_defaults_follow_the_spec_table(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    config = Config()
    assert config.redis_url == "redis://localhost:6379/0"
    assert config.concurrency == 5
    assert config.queues == (("default", 0),)
    assert dict(config.capsules) == {}
    assert config.shutdown_timeout_s == 25
    assert config.poll_interval_average_s is None
    assert config.average_scheduled_poll_interval_s == 5
    assert config.heartbeat_interval_s == 10
    assert config.max_retries == 25
    assert config.dead_max_jobs == 10_000
    assert config.dead_timeout_in_seconds == 15_552_000
    assert config.on_complex_arguments == "raise"
    assert config.default_job_options == {"retry": True, "queue": "default"}
    assert list(config.default_job_options) == ["retry", "queue"]
    assert config.error_handlers == [default_error_handler]
    assert config.death_handlers == []
    assert config.lifecycle_events == {
        "startup": [], "quiet": [], "shutdown": [], "exit": [], "heartbeat": [], "beat": [],
        "leader": []}
    assert config.backtrace_cleaner(["a.py:1:in 'f'"]) == ["a.py:1:in 'f'"]
    assert list(config.logged_job_attributes) == ["bid", "tags"]
    assert config.labels == frozenset()
    assert config.tag == os.path.basename(os.getcwd())
    assert config.skip_default_job_logging is False
    assert config.verbose is False
    assert config.reloader(lambda: 42) == 42
    assert len(config.client_middleware) == 0 and len(config.server_middleware) == 0
    assert config.embedded is False
    assert config.total_concurrency == 5


def test_redis_url_comes_from_the_environment_unless_given(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://from-env:6390/3")
    assert Config().redis_url == "redis://from-env:6390/3"
    assert Config(redis_url="redis://explicit:1/0").redis_url == "redis://explicit:1/0"


def test_each_config_owns_its_mutable_defaults():
    first, second = Config(), Config()
    first.error_handlers.append(print)
    first.on("beat", print)
    first.client_middleware.add(Marker)
    first.default_job_options["tags"] = ["x"]
    assert second.error_handlers == [default_error_handler]
    assert second.lifecycle_events["beat"] == []
    assert Marker not in second.client_middleware
    assert "tags" not in second.default_job_options


def test_default_job_options_merge_over_the_built_in_defaults():
    config = Config(default_job_options={"backtrace": True, "retry": 3})
    assert config.default_job_options == {"retry": 3, "queue": "default", "backtrace": True}


def test_from_url_sets_the_url_and_passes_other_options():
    config = Config.from_url("redis://example:6400/2", concurrency=2, tag="web")
    assert (config.redis_url, config.concurrency, config.tag) == \
        ("redis://example:6400/2", 2, "web")


# --- validation ---------------------------------------------------------------------

@pytest.mark.parametrize("value", [0, -1, "5", 2.5, True, None])
def test_concurrency_must_be_a_positive_whole_number(value):
    with pytest.raises(ConfigurationError, match=r"concurrency must be a whole number >= 1, got"):
        Config(concurrency=value)


@pytest.mark.parametrize("queues, message", [
    ("default", "queues must be a list of entries, not one string"),
    ([], "queues must name at least one queue"),
    ((), "queues must name at least one queue"),
    (["critical,x"], "the weight must be a whole number"),
    (["critical,2.5"], "the weight must be a whole number"),
    ([("critical", "heavy")], "the weight must be a whole number"),
    (["critical,-1"], "the weight must not be negative"),
    ([("critical", -3)], "the weight must not be negative"),
    ([",3"], "has an empty name"),
    (["  "], "has an empty name"),
    ([42], "must be 'name', 'name,weight' or \\('name', weight\\)"),
    ([("a", 1, 2)], "must be 'name', 'name,weight' or \\('name', weight\\)"),
])
def test_bad_queue_lists_are_rejected_with_a_clear_message(queues, message):
    with pytest.raises(ConfigurationError, match=message):
        Config(queues=queues)


@pytest.mark.parametrize("value", ["strict", "Raise", True, None, "ignore"])
def test_on_complex_arguments_accepts_only_raise_warn_or_false(value):
    with pytest.raises(ConfigurationError,
                       match="on_complex_arguments must be 'raise', 'warn' or False"):
        Config(on_complex_arguments=value)


@pytest.mark.parametrize("value", ["raise", "warn", False])
def test_on_complex_arguments_valid_values(value):
    assert Config(on_complex_arguments=value).on_complex_arguments is value


def test_unknown_fetch_is_rejected():
    with pytest.raises(ConfigurationError, match=r"fetch must be one of .*got 'turbo'"):
        Config(fetch="turbo")


@pytest.mark.parametrize("changes, message", [
    ({"redis_url": ""}, "redis_url must be a non-empty string"),
    ({"redis_url": None}, "redis_url must be a non-empty string"),
    ({"default_job_options": {"queue": ""}}, "default_job_options must name a non-empty queue"),
    ({"max_retries": -1}, "max_retries must be a whole number >= 0"),
    ({"dead_max_jobs": 0}, "dead_max_jobs must be a whole number >= 1"),
    ({"dead_timeout_in_seconds": 0}, "dead_timeout_in_seconds must be a whole number >= 1"),
    ({"shutdown_timeout_s": -1}, "shutdown_timeout_s must be a number >= 0"),
    ({"average_scheduled_poll_interval_s": "5"},
     "average_scheduled_poll_interval_s must be a number >= 0"),
    ({"poll_interval_average_s": -2}, "poll_interval_average_s must be a number >= 0"),
    ({"heartbeat_interval_s": 0}, "heartbeat_interval_s must be > 0"),
])
def test_other_settings_are_validated(changes, message):
    with pytest.raises(ConfigurationError, match=message):
        Config(**changes)


def test_configuration_error_is_a_value_error_and_a_wurk_error():
    with pytest.raises(ValueError):
        Config(concurrency=0)
    assert issubclass(ConfigurationError, WurkError)
    assert wurk_django.ConfigurationError is ConfigurationError


# --- queues, modes, capsules ------------------------------------------------------------

@pytest.mark.parametrize("entry, parsed", [
    ("critical", ("critical", 0)),
    ("critical,3", ("critical", 3)),
    (" low , 2 ", ("low", 2)),
    ("low,", ("low", 0)),
    (("bulk", 4), ("bulk", 4)),
    (["bulk", "4"], ("bulk", 4)),
])
def test_parse_queue(entry, parsed):
    assert parse_queue(entry) == parsed


def test_all_zero_weights_is_strict_mode():
    capsule = Config(queues=["critical", "default", "low"]).capsules_[0]
    assert capsule.mode == "strict"
    assert capsule.queue_names == ["critical", "default", "low"]
    assert capsule.weights == {"critical": 0, "default": 0, "low": 0}


def test_all_weights_one_is_random_mode():
    capsule = Config(queues=["a,1", ("b", 1)]).capsules_[0]
    assert capsule.mode == "random"
    assert capsule.weights == {"a": 1, "b": 1}


def test_mixed_weights_are_weighted_and_a_missing_weight_counts_once():
    capsule = Config(queues=["critical,3", "default,2", "low"]).capsules_[0]
    assert capsule.mode == "weighted"
    assert capsule.weights == {"critical": 3, "default": 2, "low": 0}  # raw, as Sidekiq
    assert capsule.info() == {"concurrency": 5, "mode": "weighted",
                              "weights": {"critical": 3, "default": 2, "low": 0}}


def test_extra_capsules_have_their_own_concurrency_queues_and_mode():
    config = Config(concurrency=4, queues=["default"], capsules={
        "serial": {"concurrency": 1, "queues": ["serial"]},
        "bulk": {"concurrency": 2, "queues": ["bulk,2", "slow"]},
    })
    names = [c.name for c in config.capsules_]
    assert names == ["default", "serial", "bulk"]
    serial, bulk = config.capsules_[1], config.capsules_[2]
    assert (serial.concurrency, serial.queue_names, serial.mode) == (1, ["serial"], "strict")
    assert (bulk.concurrency, bulk.mode) == (2, "weighted")
    assert config.total_concurrency == 7


@pytest.mark.parametrize("capsules, message", [
    ({"default": {"queues": ["x"]}}, "the capsule name 'default' is taken"),
    ({"serial": {"concurrency": 1}}, "capsule 'serial' needs a 'queues' list"),
    ({"serial": ["serial"]}, "capsule 'serial' needs a 'queues' list"),
    ({"serial": {"queues": []}}, "capsule 'serial' must name at least one queue"),
    ({"serial": {"queues": "serial"}}, "capsule 'serial'.*list of entries, not one string"),
    ({"serial": {"queues": ["s"], "concurrency": 0}}, "capsule 'serial' concurrency must be"),
])
def test_bad_capsules_are_rejected(capsules, message):
    with pytest.raises(ConfigurationError, match=message):
        Config(capsules=capsules)


def test_unroutable_queue_names_are_reported_not_rejected():
    config = Config(queues=["good_name:1.x-y", "UPPER", "has space", "ünï"],
                    capsules={"c": {"queues": ["slash/name"]}})
    assert config.unroutable_queues() == ["has space", "ünï", "slash/name"]


# --- frozen, replace ------------------------------------------------------------------

def test_config_is_frozen():
    config = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.concurrency = 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.redis_url = "redis://elsewhere/0"


def test_replace_merges_default_job_options_and_leaves_the_original_alone():
    config = Config(default_job_options={"retry": 3})
    copy = config.replace(default_job_options={"backtrace": True}, concurrency=2)
    assert copy.default_job_options == {"retry": 3, "queue": "default", "backtrace": True}
    assert copy.concurrency == 2
    assert config.default_job_options == {"retry": 3, "queue": "default"}
    assert config.concurrency == 5


def test_replace_validates_again_and_keeps_parsed_queues():
    config = Config(queues=["critical,3", "low"])
    assert config.replace(tag="x").queues == (("critical", 3), ("low", 0))
    with pytest.raises(ConfigurationError, match="concurrency"):
        config.replace(concurrency=0)


def test_a_replaced_copy_does_not_share_hooks_with_its_original():
    # A launcher seals the copy it runs; registering on the original afterwards must not
    # reach into the sealed copy's lists or chains.
    config = Config()
    config.on("startup", print)
    copy = config.replace(tag="copy")
    copy.seal()
    config.on("beat", print)
    config.error_handlers.append(print)
    config.client_middleware.add(Marker)
    assert copy.lifecycle_events["beat"] == []
    assert copy.lifecycle_events["startup"] == [print]
    assert copy.error_handlers == [default_error_handler]
    assert Marker not in copy.client_middleware
    copy.fire_event("startup")  # one-shot: clears the copy's list only
    assert config.lifecycle_events["startup"] == [print]


def test_strict_args_sets_the_mode_on_the_default_config(config):
    wurk_django.strict_args("warn")
    assert get_default_config().on_complex_arguments == "warn"
    assert get_default_config().redis_url == config.redis_url
    wurk_django.strict_args(False)
    assert get_default_config().on_complex_arguments is False


# --- lifecycle hooks and error handlers ----------------------------------------------------

def test_on_rejects_unknown_events_and_lists_the_valid_ones():
    with pytest.raises(ConfigurationError, match="unknown lifecycle event 'boot'") as info:
        Config().on("boot", print)
    for event in LIFECYCLE_EVENTS:
        assert event in str(info.value)


def test_on_raises_once_the_config_is_sealed():
    config = Config()
    config.on("startup", print)
    config.seal()
    with pytest.raises(ConfigurationError, match="running launcher"):
        config.on("quiet", print)
    assert config.lifecycle_events["quiet"] == []


def test_events_fire_in_order_and_one_shot_events_clear():
    config = Config()
    calls = []
    for name in ("a", "b"):
        config.on("quiet", lambda name=name: calls.append(("quiet", name)))
        config.on("beat", lambda name=name: calls.append(("beat", name)))
    config.fire_event("quiet", reverse=True)
    config.fire_event("beat")
    config.fire_event("beat")
    config.fire_event("quiet")
    assert calls == [("quiet", "b"), ("quiet", "a"), ("beat", "a"), ("beat", "b"),
                     ("beat", "a"), ("beat", "b")]
    assert config.lifecycle_events["quiet"] == []
    assert len(config.lifecycle_events["beat"]) == 2


def test_a_failing_handler_is_reported_and_startup_reraises():
    reported = []
    config = Config(error_handlers=[lambda exc, ctx, cfg: reported.append((exc, ctx))])

    def broken():
        raise RuntimeError("boom")

    config.on("beat", broken)
    config.fire_event("beat")
    assert str(reported[0][0]) == "boom"
    assert reported[0][1] == {"context": "Exception during Wurk lifecycle event beat"}
    config.on("startup", broken)
    with pytest.raises(RuntimeError, match="boom"):
        config.fire_event("startup", reraise=True)


def test_a_raising_error_handler_is_logged_and_the_others_still_run(caplog):
    seen = []

    def bad(exc, context, config):
        raise ValueError("handler broke")

    config = Config(error_handlers=[bad, lambda exc, ctx, cfg: seen.append(exc)])
    with caplog.at_level(logging.ERROR, logger="wurk"):
        config.handle_exception(KeyError("k"), {"context": "test"})
    assert len(seen) == 1
    assert "ERROR HANDLER THREW AN ERROR" in caplog.text


def test_default_error_handler_logs_at_info_with_traceback_only_when_verbose(caplog):
    try:
        raise ValueError("card declined")
    except ValueError as exc:
        error = exc
    with caplog.at_level(logging.INFO, logger="wurk"):
        default_error_handler(error, {"context": "Job raised exception", "job": {"x": 1}},
                              Config())
        default_error_handler(error, {"context": "Job raised exception"}, Config(verbose=True))
    quiet, verbose = caplog.records
    assert quiet.levelno == logging.INFO
    assert "ValueError: card declined" in quiet.getMessage()
    assert "'x'" not in quiet.getMessage()  # the job itself is not dumped into the log
    assert quiet.exc_info is None
    assert verbose.exc_info is not None and verbose.exc_info[1] is error


def test_chain_fields_are_chains():
    config = Config()
    assert isinstance(config.client_middleware, Chain)
    assert isinstance(config.server_middleware, Chain)


def test_a_heartbeat_slower_than_half_the_process_ttl_is_refused():
    # Beats 60 s or more apart let the identity hash expire while the process runs:
    # it drops off the dashboard and another host's reaper takes its running jobs.
    Config(heartbeat_interval_s=30)
    for interval in (31, 60, 120):
        with pytest.raises(ConfigurationError, match="heartbeat_interval_s") as refused:
            Config(heartbeat_interval_s=interval)
        assert refused.value.field == "heartbeat_interval_s"
