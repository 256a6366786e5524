"""A Django `@task`, autodiscovered by Wurk as every installed app's tasks module is."""

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task
def total(*numbers):
    return sum(numbers)
