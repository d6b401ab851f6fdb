"""``python -m descent.cli``: the ``descent`` command."""

import sys

from descent.cli import main

sys.exit(main())
