"""`manage.py wurk_encryption_keys`: how many stored jobs hold an argument encrypted
under each key version, so an operator knows when an old key can be dropped."""

from django.core.management.base import BaseCommand, CommandError

from wurk_django import conf
from wurk_django.core.api.key_versions import KeyVersionScan
from wurk_django.core.encryption import settings_for
from wurk_django.core.errors import WurkError


class Command(BaseCommand):
    help = ("Count the stored jobs (queues, in-flight, schedule, retry, dead) whose encrypted "
            "argument uses each key version.")

    def handle(self, *args, **options):
        try:
            config = conf.build_config()
            found = KeyVersionScan(config).run()
        except WurkError as exc:
            raise CommandError(f"wurk_encryption_keys: {exc}") from None
        settings = settings_for(config)
        active = settings["active_version"] if settings else None
        self.stdout.write(report(found, active))


def report(found, active) -> str:
    lines = [(f"Scanned {found.scanned:,} stored jobs in {found.places:,} places (queues, "
              f"in-flight lists, schedule, retry, dead).")]
    if not found.counts:
        lines.append("No stored job holds an encrypted argument.")
    for version in sorted(found.counts, key=str):
        mark = " (active)" if version == active else ""
        lines.append(f"  key version {version}{mark}: {found.counts[version]:,} jobs")
    lines.append(f"Active key version: {active if active is not None else 'none configured'}.")
    old = [v for v in found.counts if isinstance(v, int) and v != active]
    if old:
        lines.append(f"Keep the keys of version(s) {', '.join(map(str, sorted(old)))}: jobs "
                     f"still need them. A version not listed can be dropped.")
    elif found.counts:
        lines.append("Only the active key is in use: older keys can be dropped.")
    lines += [f"Skipped {key}: it holds another type than a job list or set."
              for key in found.skipped]
    return "\n".join(lines)
