"""Middleware chains: the list operations, call order, fresh instances, the config attribute."""

import pytest

from wurk_django import Client
from wurk_django.core import keys
from wurk_django.core.middleware import Chain
from wurk_django.core.payload import loads


class Recording:
    """Base for test middleware: records its name around the rest of the chain."""

    log = []

    def __init__(self, label="", *, extra=None):
        self.label = label
        self.extra = extra

    def call(self, *args):
        next_ = args[-1]
        Recording.log.append(("enter", type(self).__name__, self.label))
        result = next_()
        Recording.log.append(("exit", type(self).__name__, self.label))
        return result


class A(Recording):
    pass


class B(Recording):
    pass


class C(Recording):
    pass


class D(Recording):
    pass


class WantsConfig(Recording):
    config = None
    instances = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        WantsConfig.instances.append(self)


@pytest.fixture(autouse=True)
def reset_logs():
    Recording.log.clear()
    WantsConfig.instances.clear()


def classes(chain):
    return [entry[0] for entry in chain.entries]


# --- chain operations ------------------------------------------------------------

def test_add_appends_and_keeps_constructor_arguments():
    chain = Chain()
    chain.add(A)
    chain.add(B, "b", extra=1)
    assert chain.entries == [(A, (), {}), (B, ("b",), {"extra": 1})]
    assert len(chain) == 2


def test_add_removes_an_existing_entry_then_appends():
    chain = Chain()
    chain.add(A, "first")
    chain.add(B)
    chain.add(A, "second")
    assert chain.entries == [(B, (), {}), (A, ("second",), {})]


def test_prepend_puts_the_entry_first():
    chain = Chain()
    chain.add(A)
    chain.add(B)
    chain.prepend(C)
    chain.prepend(B)
    assert classes(chain) == [B, C, A]


def test_insert_before_and_after_an_existing_entry():
    chain = Chain()
    chain.add(A)
    chain.add(B)
    chain.insert_before(B, C)
    assert classes(chain) == [A, C, B]
    chain.insert_after(A, D, "d")
    assert classes(chain) == [A, D, C, B]
    assert chain.entries[1] == (D, ("d",), {})


def test_insert_moves_an_entry_that_is_already_present():
    chain = Chain()
    for cls in (A, B, C):
        chain.add(cls)
    chain.insert_before(A, C)
    assert classes(chain) == [C, A, B]
    chain.insert_after(B, C)
    assert classes(chain) == [A, B, C]


def test_insert_with_a_missing_anchor_goes_to_the_front_or_the_end():
    chain = Chain()
    chain.add(A)
    chain.add(B)
    chain.insert_before(D, C)
    assert classes(chain) == [C, A, B]
    chain.insert_after(D, WantsConfig)
    assert classes(chain) == [C, A, B, WantsConfig]


def test_remove_contains_and_clear():
    chain = Chain()
    chain.add(A)
    chain.add(B)
    assert A in chain and C not in chain
    chain.remove(A)
    chain.remove(C)  # removing what is absent is a no-op
    assert A not in chain and classes(chain) == [B]
    chain.clear()
    assert chain.entries == [] and len(chain) == 0
    assert chain  # an empty chain is still truthy: never read it as "no chain"


def test_copy_is_independent_and_entries_is_a_snapshot():
    chain = Chain()
    chain.add(A)
    copy = chain.copy()
    copy.add(B)
    chain.entries.append((C, (), {}))
    assert classes(chain) == [A]
    assert classes(copy) == [A, B]


# --- invocation ------------------------------------------------------------------

def test_entry_zero_is_the_outermost():
    chain = Chain()
    chain.add(A)
    chain.add(B)
    chain.prepend(C)
    result = chain.invoke(None, ("job",), lambda: Recording.log.append(("final",)) or "done")
    assert result == "done"
    assert Recording.log == [("enter", "C", ""), ("enter", "A", ""), ("enter", "B", ""),
                             ("final",),
                             ("exit", "B", ""), ("exit", "A", ""), ("exit", "C", "")]


def test_arguments_reach_call_and_the_constructor():
    seen = []

    class Spy:
        def __init__(self, tag, *, flag):
            self.tag, self.flag = tag, flag

        def call(self, job_class, job, queue, redis, next_):
            seen.append((self.tag, self.flag, job_class, job, queue, redis))
            return next_()

    chain = Chain()
    chain.add(Spy, "t", flag=True)
    chain.invoke(None, ("K", {"a": 1}, "q", "conn"), lambda: True)
    assert seen == [("t", True, "K", {"a": 1}, "q", "conn")]


def test_a_fresh_instance_is_built_for_every_call():
    chain = Chain()
    chain.add(WantsConfig)
    for _ in range(3):
        chain.invoke(None, (), lambda: None)
    assert len(WantsConfig.instances) == 3
    assert len({id(i) for i in WantsConfig.instances}) == 3


def test_config_is_set_only_on_middleware_that_has_the_attribute():
    config = object()
    chain = Chain()
    chain.add(WantsConfig)
    chain.add(A)
    instances = chain.build(config)
    assert instances[0].config is config
    assert not hasattr(instances[1], "config")
    chain.invoke(config, (), lambda: None)
    assert WantsConfig.instances[-1].config is config


def test_not_calling_next_halts_the_rest_of_the_chain():
    class Stop:
        def call(self, next_):
            return None

    chain = Chain()
    chain.add(A)
    chain.add(Stop)
    chain.add(B)
    ran = []
    assert chain.invoke(None, (), lambda: ran.append(1) or True) is None
    assert ran == []
    assert ("enter", "B", "") not in Recording.log


def test_an_empty_chain_runs_the_final_step():
    assert Chain().invoke(None, (), lambda: 7) == 7


# --- client middleware on a real push -------------------------------------------------------

class AddRequestId:
    config = None

    def call(self, job_class, job, queue, redis, next_):
        job.setdefault("request_id", f"req-{self.config.tag}")
        job["args"].append("added")
        return next_()


class HaltAll:
    def call(self, job_class, job, queue, redis, next_):
        return None


def test_client_middleware_may_change_the_job(config, redis_client):
    config.client_middleware.add(AddRequestId)
    Client().push({"class": "MiddlewareTestJob", "args": [1]})
    job = loads(redis_client.rpop(keys.queue("default")))
    assert job["request_id"] == "req-tests"
    assert job["args"] == [1, "added"]


def test_halting_client_middleware_means_no_push(config, redis_client):
    config.client_middleware.add(HaltAll)
    assert Client().push({"class": "MiddlewareTestJob", "args": [1]}) is None
    assert Client().push_bulk({"class": "MiddlewareTestJob", "args": [[1], [2]]}) == [None, None]
    assert redis_client.dbsize() == 0
