"""Queue order for each fetch: strict, weighted and random, as Sidekiq draws it."""

from collections import Counter

from wurk_django.core import Config
from wurk_django.core.fetch import BasicFetch


def first_choices(queues, draws=6000):
    config = Config(queues=queues)
    fetcher = BasicFetch(config, config.capsules_[0], connection=None)
    return Counter(fetcher.queue_order()[0] for _ in range(draws)), fetcher


def test_strict_order_is_the_configured_order():
    counts, fetcher = first_choices(["critical", "default", "low", "default"], draws=50)
    assert counts == {"critical": 50}
    assert fetcher.queue_order() == ["critical", "default", "low"]


def test_weighted_order_puts_queues_first_in_proportion_to_weight():
    counts, fetcher = first_choices(["critical,3", "default,2", "low"])
    assert fetcher.capsule.mode == "weighted"
    share = {name: count / 6000 for name, count in counts.items()}
    assert abs(share["critical"] - 0.5) < 0.05
    assert abs(share["default"] - 1 / 3) < 0.05
    assert abs(share["low"] - 1 / 6) < 0.05
    assert sorted(fetcher.queue_order()) == ["critical", "default", "low"]


def test_random_order_when_every_weight_is_one():
    counts, fetcher = first_choices(["a,1", "b,1", "c,1"])
    assert fetcher.capsule.mode == "random"
    assert all(abs(count / 6000 - 1 / 3) < 0.05 for count in counts.values())
