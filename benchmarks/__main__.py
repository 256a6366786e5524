"""Entry point of `python -m benchmarks` (from the checkout's root)."""

import sys

from .cli import main

sys.exit(main())
