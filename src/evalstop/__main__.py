"""``python -m evalstop``: the same as the ``evalstop`` command."""

import sys

from evalstop.cli import main

sys.exit(main())
