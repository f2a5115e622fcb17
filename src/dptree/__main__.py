"""``python -m dptree``: the same as the ``dptree`` command (and ``python -m dptree.cli``)."""

import sys

from dptree.cli.main import main

sys.exit(main())
