"""``python -m dsh_memory_tui`` opens the app."""

import sys

from .app.main import main

sys.exit(main())
