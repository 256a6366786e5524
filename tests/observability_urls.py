"""A view that pushes a job, for the request -> push -> job tracing test."""

from django.http import JsonResponse
from django.urls import path

from tests.observability import traced


def push_view(request):
    return JsonResponse({"jid": traced.perform_async(request.GET["marker"])})


urlpatterns = [path("push", push_view)]
