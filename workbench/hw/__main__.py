"""``python -m workbench.hw --write-schema``: regenerate ``hardware/schema.json``."""

import sys

from workbench.hw.loader import main

sys.exit(main())
