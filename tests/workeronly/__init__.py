"""A worker-only Django project for tests: no URLconf, no TASKS, one app with a `@task`."""
