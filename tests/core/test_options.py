"""Job options: one table decides what each option is, where it may be given and its type."""

import warnings
from datetime import timedelta

import pytest

from wurk_django import Job, wurk_task
from wurk_django.core import Config, JobArgumentError, keys
from wurk_django.core.errors import ConfigurationError
from wurk_django.core.options import OPTIONS, TRANSIENT_KEYS, UNSUPPORTED, UnknownOptionWarning
from wurk_django.core.payload import loads
from wurk_django.core.registry import REGISTRY

CALLS = []


@wurk_task(queue="options-q")
def plain(*args):
    CALLS.append(args)


@pytest.fixture
def defined():
    """Define throwaway tasks; each is unregistered afterwards."""
    made = []

    def define(**options):
        task = wurk_task(**options)(lambda *args: CALLS.append(args))
        made.append(task.name)
        return task

    yield define
    for name in made:
        REGISTRY.unregister(name)
    CALLS.clear()


def _queued(redis_client, queue):
    return [loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


# --- guarantees Wurk does not give yet -------------------------------------------------

GUARANTEES = [("pool", "shard-2", "Redis pool"), ("client_class", "X", "client class")]


@pytest.mark.parametrize("name, value, consequence", GUARANTEES)
def test_a_guarantee_option_is_refused_on_a_task(name, value, consequence):
    with pytest.raises(JobArgumentError, match=rf"{name}' option is not supported yet.*"
                                               rf"{consequence}"):
        wurk_task(**{name: value})(lambda: None)
    with pytest.raises(JobArgumentError, match="not supported yet"):
        type("GuaranteeJob", (Job,), {"wurk_options": {name: value}, "__module__": __name__,
                                      "perform": lambda self: None})


@pytest.mark.parametrize("name, value, consequence", GUARANTEES)
def test_a_guarantee_option_is_refused_in_set(config, redis_client, name, value, consequence):
    with pytest.raises(JobArgumentError, match=rf"plain.set\(\): the '{name}' option is "
                                               rf"not supported yet"):
        plain.set(**{name: value}).perform_async(1)
    assert redis_client.dbsize() == 0  # nothing pushed that would break the promise


def test_asking_for_no_guarantee_is_fine(config, redis_client):
    plain.set(encrypt=False, unique_for=None, expires_in=None).perform_async(1)
    [job] = _queued(redis_client, "options-q")
    assert (job["encrypt"], job["unique_for"], job["expires_in"]) == (False, False, None)


def test_every_unsupported_option_says_what_is_missing():
    unsupported = {name for name, option in OPTIONS.items() if option.kind == UNSUPPORTED}
    assert unsupported == {"pool", "client_class"}
    assert all(OPTIONS[name].missing for name in unsupported)


# --- the job guarantees' options: checked once, where they are given -------------------

@pytest.mark.parametrize("options, kept", [
    ({"unique_for": 600}, {"unique_for": 600}),
    ({"unique_for": timedelta(minutes=10)}, {"unique_for": 600}),
    ({"unique_for": 0.2}, {"unique_for": 1}),  # Redis's EX takes whole seconds: rounded up
    ({"unique_for": 60, "unique_until": "start"}, {"unique_for": 60, "unique_until": "start"}),
    ({"expires_in": timedelta(hours=1)}, {"expires_in": 3600}),
    ({"expires_in": 0.5}, {"expires_in": 0.5}),
    ({"encrypt": True}, {"encrypt": True}),
])
def test_a_guarantee_option_is_kept_in_its_wire_form(defined, options, kept):
    task = defined(**options)
    assert {key: task.job_class.resolved_options[key] for key in kept} == kept


@pytest.mark.parametrize("options, message", [
    ({"unique_for": 0}, "'unique_for' must be more than 0"),
    ({"unique_for": -5}, "'unique_for' must be more than 0"),
    ({"unique_for": "10m"}, "'unique_for' must be seconds or a timedelta"),
    ({"unique_for": True}, "'unique_for' must be seconds or a timedelta"),
    ({"unique_until": "finish"}, "'unique_until' must be 'success'"),
    ({"expires_in": 0}, "'expires_in' must be more than 0"),
    ({"expires_in": float("nan")}, "'expires_in' must be seconds or a timedelta"),
    ({"encrypt": "yes"}, "'encrypt' must be True or False"),
    ({"unique_context": "not callable"}, "'unique_context' must be callable"),
])
def test_a_bad_guarantee_option_is_refused_where_it_is_given(options, message):
    with pytest.raises(JobArgumentError, match=message):
        wurk_task(**options)(lambda: None)


# --- custom keys and typos -----------------------------------------------------------

def test_custom_keys_pass_through_to_the_payload(config, redis_client, defined):
    task = defined(queue="custom-q", tenant="acme")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a key far from every option does not warn
        task.set(request_id="r-1").perform_async()
    [job] = _queued(redis_client, "custom-q")
    assert (job["tenant"], job["request_id"]) == ("acme", "r-1")


@pytest.mark.parametrize("typo, meant", [("queu", "queue"), ("retyr", "retry"),
                                         ("tag", "tags"), ("dead_", "dead")])
def test_a_key_one_edit_from_an_option_warns_did_you_mean(defined, typo, meant):
    with pytest.warns(UnknownOptionWarning, match=rf"{typo}'.*did you mean '{meant}'"):
        task = defined(**{typo: "x"})
    with pytest.warns(UnknownOptionWarning, match=rf"did you mean '{meant}'"):
        task.set(**{typo: "x"})
    assert task.job_class.resolved_options[typo] == "x"  # still kept, as a custom key


def test_on_commit_is_refused_naming_transactional(defined):
    with pytest.raises(JobArgumentError, match="'on_commit' is not an option; use "
                                               "'transactional'"):
        plain.set(on_commit=False)
    with pytest.raises(JobArgumentError, match="use 'transactional'"):
        defined(on_commit=False)


# --- where an option may be given ----------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"cron": "* * * * *"}, "'cron' cannot be given in .set\\(\\); give it on a task"),
    ({"name": "Other"}, "'name' cannot be given in .set\\(\\)"),
    ({"retry_in": lambda *a: 5}, "'retry_in' cannot be given in .set\\(\\)"),
])
def test_task_only_options_are_refused_per_call(options, message):
    # Before, each was dropped without a word: a per-call hook or name did nothing.
    with pytest.raises(JobArgumentError, match=message):
        plain.set(**options)


def test_per_call_options_are_refused_on_a_task():
    with pytest.raises(JobArgumentError, match="'wait' cannot be given on a task; give it in "
                                               ".set"):
        wurk_task(wait=60)(lambda: None)


@pytest.mark.parametrize("options", [{"transactional": False}, {"sync": True},
                                     {"retry_in": print}])
def test_default_job_options_take_only_payload_options(options):
    with pytest.raises(ConfigurationError, match="default_job_options: .*cannot be given in "
                                                 "default_job_options") as info:
        Config(default_job_options=options)
    assert info.value.field == "default_job_options"


# --- types -------------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"retry": "5"}, "'retry' must be True, False or a number of retries"),
    ({"retry": -1}, "'retry' must be True, False or a number of retries"),
    ({"dead": "no"}, "'dead' must be True or False"),
    ({"backtrace": 2.5}, "'backtrace' must be True, False or a whole number"),
    ({"tags": ["a", 1]}, "'tags' must be a list of strings"),
    ({"retry_queue": ""}, "'retry_queue' must be a non-empty string"),
    ({"sync": 1}, "'sync' must be True or False"),
    ({"transactional": 0}, "'transactional' must be True, False, None or a database alias"),
    ({"retry_for": float("inf")}, "'retry_for' must be seconds or a timedelta"),
])
def test_option_types_are_checked_in_set_and_on_tasks(options, message):
    with pytest.raises(JobArgumentError, match=message):
        plain.set(**options)
    with pytest.raises(JobArgumentError, match=message):
        wurk_task(**options)(lambda: None)


# --- options that act on each call ---------------------------------------------------

def test_a_tasks_own_sync_option_runs_each_call_inline(config, redis_client, defined):
    # Before, only .set(sync=True) worked; the task's own option was silently ignored.
    task = defined(sync=True)
    task.perform_async(7)
    assert CALLS == [(7,)]
    assert redis_client.dbsize() == 0
    assert task.set(sync=False).perform_async(8) is not None  # a call may still opt out
    assert CALLS == [(7,)]


def test_transient_keys_come_from_the_table():
    assert {"name", "sync", "transactional", "retry_in", "retries_exhausted", "cron",
            "cron_args", "cron_tz", "pool", "client_class"} <= TRANSIENT_KEYS
    assert not {"bid", "tags", "wrapped", "display_class", "locale", "encrypt",
                "on_commit"} & TRANSIENT_KEYS
