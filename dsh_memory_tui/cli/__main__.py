"""``python -m dsh_memory_tui.cli``: the ``dsh-memory`` command."""

import sys

from . import main

sys.exit(main())
