"""The shop's one model: orders that background jobs charge and report on."""

from django.db import models


class Order(models.Model):
    customer = models.CharField(max_length=100)
    cents = models.PositiveIntegerField()
    status = models.CharField(max_length=20, default="new")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Order {self.pk} ({self.customer}, {self.status})"
