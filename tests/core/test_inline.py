"""`perform_inline` returns what the task returns, as calling the task would."""

from wurk_django import Job, wurk_task


@wurk_task
def inline_add(a, b):
    return a + b


@wurk_task
async def inline_async_double(value):
    return value * 2


class InlineReport(Job):
    def perform(self, report_id):
        return {"report": report_id, "jid": self.jid}


class Halter:
    def call(self, job_instance, job, queue, next_):
        return None


def test_a_function_task_returns_its_value(config, redis_client):
    assert inline_add.perform_inline(2, 3) == 5
    assert inline_add.set(queue="low").perform_inline(4, 5) == 9
    assert redis_client.dbsize() == 0


def test_an_async_task_returns_the_awaited_value(config):
    assert inline_async_double.perform_inline(21) == 42


def test_a_job_class_returns_what_perform_returns(config):
    value = InlineReport.perform_inline(7)
    assert value["report"] == 7 and len(value["jid"]) == 24


def test_a_halted_job_returns_none(config):
    config.server_middleware.add(Halter)
    assert inline_add.perform_inline(2, 3) is None
