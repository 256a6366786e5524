"""Entry point of `python -m wurk_django.core`."""

import sys

from .cli import main

sys.exit(main())
