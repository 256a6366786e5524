"""`manage.py wurk_deploy [LABEL]`: record a deploy mark for the dashboard's charts."""

from django.core.management.base import BaseCommand, CommandError

from wurk_django import conf
from wurk_django.core import deploy
from wurk_django.core.errors import WurkError


class Command(BaseCommand):
    help = ("Mark a deploy at the current minute (UTC). The label defaults to the last git "
            "commit (`git log -1 --format=\"%h %s\"`). Safe to run from every process of a "
            "deploy: one mark per label and minute is kept.")

    def add_arguments(self, parser):
        parser.add_argument("label", nargs="?", help="what was deployed, e.g. 'v1.4.2'")

    def handle(self, *args, label=None, **options):
        try:
            stamp = deploy.mark(label, config=conf.build_config())
        except WurkError as exc:
            raise CommandError(f"wurk_deploy: {exc}") from None
        if stamp is None:
            self.stdout.write("No mark written: no label (and no git commit to name one), "
                              "or this label was marked less than 60 s ago.")
        else:
            self.stdout.write(f"Deploy marked at {stamp}")
