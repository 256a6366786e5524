"""A model the Django-side tests write from worker threads."""

from django.db import models


class Order(models.Model):
    number = models.IntegerField()
    note = models.CharField(max_length=100, blank=True)
