"""The shop's background jobs, one of each kind a real app has."""

import hashlib
import random
import time

from wurk_django import Job, wurk_task


@wurk_task(queue="default")
def fetch_exchange_rate(currency):
    """I/O-like: waits on a (simulated) remote API, so threads overlap well."""
    time.sleep(random.uniform(0.05, 0.3))
    return {"currency": currency, "rate": round(random.uniform(0.5, 1.5), 4)}


@wurk_task(queue="low")
def crunch_report(rounds):
    """CPU-bound: hashes in a loop; use `wurk_worker --processes N` for these."""
    digest = b"wurk"
    for _ in range(int(rounds)):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


@wurk_task(queue="critical", retry=5, backtrace=10)
def charge_order(order_id):
    """Fails now and then, like a payment gateway; Wurk retries it with backoff."""
    from .models import Order
    if random.random() < 0.3:
        raise ConnectionError(f"payment gateway timed out for order {order_id}")
    Order.objects.filter(pk=order_id).update(status="charged")


@wurk_task(queue="low", cron="*/5 * * * *")
def summarize_orders():
    """A cron loop: every five minutes the cluster's leader fires it, exactly once."""
    from django.db.models import Count

    from .models import Order
    return dict(Order.objects.values_list("status").annotate(n=Count("id")))


class HardJob(Job):
    """Shares its name with a Ruby Sidekiq class, so either language can push it."""

    wurk_options = {"name": "HardJob", "queue": "default", "retry": 3}

    def perform(self, name, count):
        self.logger.info("HardJob for %s x%s", name, count)
