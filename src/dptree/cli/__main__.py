"""``python -m dptree.cli``: the same as the ``dptree`` command."""

import sys

from dptree.cli.main import main

sys.exit(main())
