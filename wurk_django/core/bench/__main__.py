"""Entry point of `python -m wurk_django.core.bench`."""

import sys

from .cli import main

sys.exit(main())
