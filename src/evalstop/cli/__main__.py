"""``python -m evalstop.cli``."""

import sys

from evalstop.cli import main

sys.exit(main())
