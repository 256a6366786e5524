"""Autodiscovered by wurk_django's AppConfig.ready(): tasks used by the Django tests."""

from wurk_django import wurk_task


@wurk_task(queue="django")
def mark_order(order_id, note):
    from .models import Order
    Order.objects.filter(id=order_id).update(note=note)
