"""``python -m workbench`` runs the CLI."""

import sys

from workbench.cli import main

sys.exit(main())
