"""Shared by the dashboard API tests: users with each permission level and a JSON client."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

BASE = "/admin/wurk/api/"


class Api:
    """The Django test client speaking the dashboard's JSON API as the SPA does."""

    def __init__(self, user=None, *, csrf: bool = False):
        self.client = Client(enforce_csrf_checks=csrf)
        if user is not None:
            self.client.force_login(user)

    def get(self, path: str, **params):
        return self.client.get(BASE + path, params)

    def post(self, path: str, body=None, **headers):
        return self.client.post(BASE + path, json.dumps({} if body is None else body),
                                content_type="application/json", headers=headers)

    def delete(self, path: str, body=None, **headers):
        return self.client.delete(BASE + path, json.dumps({} if body is None else body),
                                  content_type="application/json", headers=headers)

    def call(self, method: str, path: str, body=None):
        if method == "GET":
            return self.get(path)
        return (self.post if method == "POST" else self.delete)(path, body)


def grant(user, codename: str):
    user.user_permissions.add(Permission.objects.get(content_type__app_label="wurk",
                                                     codename=codename))
    return type(user).objects.get(pk=user.pk)  # drop the cached permissions


@pytest.fixture(name="users")
def users_fixture(django_user_model):
    """Import `users_fixture` into a test module to get the `users` fixture."""
    make = django_user_model.objects.create_user
    changer = make("changer", is_staff=True)
    return {
        # No passwords: hashing one costs about a second per user.
        "superuser": django_user_model.objects.create_superuser("root", "root@example.com",
                                                                None),
        "changer": grant(changer, "change_dashboard"),
        "viewer": make("viewer", is_staff=True),
        "outsider": make("outsider"),
    }


def problem_of(response, status: int, slug: str) -> dict:
    """Assert a problem+json answer with this status and slug; return its body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response["X-Content-Type-Options"] == "nosniff"
    body = response.json()
    assert body["type"] == slug and body["status"] == status and body["detail"]
    return body


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert response["X-Content-Type-Options"] == "nosniff"
    return response.json()


def redis_snapshot(redis_client) -> dict:
    """Every key with its type and serialized value: equal snapshots mean no writes."""
    return {key: (redis_client.type(key), redis_client.dump(key))
            for key in sorted(redis_client.keys("*"))}
