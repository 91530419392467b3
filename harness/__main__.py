"""``python -m harness``: see :mod:`harness.cli`."""

import sys

from .cli import main

sys.exit(main())
