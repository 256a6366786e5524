"""The dashboard's batch endpoints against real batches: the list (newest first, paged,
filtered by tag or description), dead batches, a batch's page, the invalidate and delete
actions under the permission and read-only rules, and the polling endpoint."""

import pytest
from django.test import Client, RequestFactory

from tests.django.dashboard_helpers import Api, ok, problem_of, users_fixture  # noqa: F401
from wurk_django.core import Batch, BatchStatus, keys
from wurk_django.core import Client as JobClient
from wurk_django.core.batch_callbacks import evaluate, fire_death
from wurk_django.core.batch_redis import batch_keys, call
from wurk_django.core.redis import connection_for
from wurk_django.dashboard.api.batches import batch_status_view

pytestmark = pytest.mark.django_db


class Callbacks:
    def on_success(self, status, options):
        pass

    def on_death(self, status, options):
        pass


def make(description: str, jobs: int = 2, tags=()) -> tuple[Batch, list[str]]:
    with Batch(description=description, tags=list(tags), on_success=Callbacks,
               on_death=(Callbacks, {"page": "ops"})) as batch:
        jids = [_push() for _ in range(jobs)]
    return batch, jids


def _push() -> str:
    return JobClient().push({"class": "shop.tasks.charge", "args": [1]})


def succeed(config, bid: str, jid: str) -> None:
    """What a worker does when a batch job succeeds."""
    connection = connection_for(config)
    call(connection, "batch_ack_success", batch_keys(bid, "jids", "failed", "pkids", "skids"),
         [jid])
    evaluate(connection, config, bid)


def fail(config, bid: str, jid: str) -> None:
    call(connection_for(config), "batch_ack_failed", batch_keys(bid, "jids", "failed"), [jid])


def die(config, bid: str, jid: str) -> None:
    connection = connection_for(config)
    call(connection, "batch_ack_complete", batch_keys(bid, "jids", "died", "failed", "pkids"),
         [jid])
    fire_death(connection, config, bid)


@pytest.fixture
def tree(config):
    """A parent with a child, a batch with a failing and a dead job, a finished one."""
    with Batch(description="Nightly import", tags=["import"]) as parent:
        _push()
        with Batch(description="Import shard 1", tags=["import"]) as child:
            _push()
    broken, (failing, dying) = make("Invoices for May", 2, tags=["billing"])
    fail(config, broken.bid, failing)
    fail(config, broken.bid, dying)
    die(config, broken.bid, dying)
    done, (finished, _) = make("Reports", 2)
    succeed(config, done.bid, finished)
    return {"parent": parent, "child": child, "broken": broken, "done": done,
            "failing": failing, "dying": dying}


def test_the_list_is_newest_first_paged_and_filtered(tree, users):
    api = Api(users["viewer"])
    body = ok(api.get("batches", count=2))
    assert (body["total"], body["pages"], len(body["items"])) == (4, 2, 2)
    assert [row["description"] for row in body["items"]] == ["Reports", "Invoices for May"]
    rest = ok(api.get("batches", count=2, page=2))["items"]
    assert [row["description"] for row in rest] == ["Import shard 1", "Nightly import"]
    row = body["items"][1]
    assert (row["total"], row["pending"], row["failures"], row["done"]) == (2, 2, 1, 0)
    assert row["dead"] and row["tags"] == ["billing"] and row["created_at_ms"] > 0
    tagged = ok(api.get("batches", tag="import"))
    assert {item["bid"] for item in tagged["items"]} == {tree["parent"].bid, tree["child"].bid}
    assert [item["bid"] for item in ok(api.get("batches", q="INVOICES"))["items"]] == [
        tree["broken"].bid]
    both = ok(api.get("batches", tag="import", q="shard"))
    assert [item["bid"] for item in both["items"]] == [tree["child"].bid]
    assert not both["truncated"] and both["tag"] == "import" and both["q"] == "shard"


def test_dead_batches_are_listed_by_their_death(tree, users):
    body = ok(Api(users["viewer"]).get("batches/dead"))
    assert [row["bid"] for row in body["items"]] == [tree["broken"].bid]
    assert body["items"][0]["death_at_ms"] > 0


def test_a_batch_page_shows_progress_failures_callbacks_and_family(tree, users):
    api = Api(users["viewer"])
    broken = ok(api.get(f"batches/{tree['broken'].bid}"))
    assert broken["failed"] == {"items": [tree["failing"]], "total": 1}
    assert broken["dead_jids"] == {"items": [tree["dying"]], "total": 1}
    assert broken["callbacks"] == [
        {"event": "success", "target": f"{__name__}.Callbacks", "options": "{}",
         "fired": False},
        {"event": "death", "target": f"{__name__}.Callbacks", "options": '{"page": "ops"}',
         "fired": True}]
    parent = ok(api.get(f"batches/{tree['parent'].bid}"))
    assert [kid["bid"] for kid in parent["children"]["items"]] == [tree["child"].bid]
    assert parent["children"]["total"] == 1 and parent["pending_children"] == 1
    child = ok(api.get(f"batches/{tree['child'].bid}"))
    assert child["parent"]["description"] == "Nightly import"
    done = ok(api.get(f"batches/{tree['done'].bid}"))
    assert (done["done"], done["total"], done["live"]) == (1, 2, 1)
    problem_of(api.get("batches/nope"), 404, "not_found")


def test_a_batch_of_many_failures_lists_only_the_first_ones(config, users):
    batch, jids = make("Big", 250)
    for jid in jids:
        fail(config, batch.bid, jid)
    body = ok(Api(users["viewer"]).get(f"batches/{batch.bid}"))
    assert body["failed"]["total"] == 250 and len(body["failed"]["items"]) == 100


def test_invalidate_and_delete_follow_the_permission_and_read_only_rules(tree, users,
                                                                         settings,
                                                                         redis_client):
    bid = tree["parent"].bid
    problem_of(Api(users["viewer"]).post(f"batches/{bid}/invalidate"), 403, "forbidden")
    problem_of(Api(users["viewer"]).delete(f"batches/{bid}"), 403, "forbidden")
    answer = ok(Api(users["changer"]).post(f"batches/{bid}/invalidate"))
    assert (answer["invalidated"], answer["done"]) == (2, 1)  # the child too
    assert BatchStatus(tree["child"].bid).invalidated
    problem_of(Api(users["changer"]).post("batches/nope/invalidate"), 404, "not_found")
    settings.WURK = {**settings.WURK, "DASHBOARD": {"READ_ONLY": True}}
    problem_of(Api(users["superuser"]).delete(f"batches/{bid}"), 403, "read_only")
    settings.WURK = {key: value for key, value in settings.WURK.items() if key != "DASHBOARD"}
    assert ok(Api(users["superuser"]).delete(f"batches/{bid}"))["done"] == 1
    assert not redis_client.exists(keys.batch(bid))
    assert ok(Api(users["superuser"]).delete(f"batches/{bid}"))["missing"] == 1


def test_the_polling_endpoint_answers_the_batch_status(tree, users):
    bid = tree["done"].bid
    client = Client()
    client.force_login(users["viewer"])
    response = client.get(f"/admin/wurk/batch_status/{bid}.json")
    assert response.status_code == 200
    data = response.json()
    assert (data["bid"], data["total"], data["pending"], data["description"]) == (
        bid, 2, 1, "Reports")
    assert Client().get(f"/admin/wurk/batch_status/{bid}.json").status_code == 401
    assert client.get("/admin/wurk/batch_status/nope.json").status_code == 404
    # The plain view, for a project to mount behind its own rules.
    plain = batch_status_view(RequestFactory().get("/"), bid)
    assert plain.status_code == 200 and b'"total": 2' in plain.content
    assert batch_status_view(RequestFactory().get("/"), "nope").status_code == 404
