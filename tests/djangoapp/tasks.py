"""Autodiscovered by wurk_django's AppConfig.ready(): tasks used by the Django tests."""

import time

from wurk_django import wurk_task


@wurk_task(queue="django")
def mark_order(order_id, note):
    from .models import Order
    Order.objects.filter(id=order_id).update(note=note)


@wurk_task(queue="django")
def take_time(seconds):
    time.sleep(seconds)  # a job of known least duration, for the logged elapsed time
