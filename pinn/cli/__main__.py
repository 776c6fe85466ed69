"""``python -m pinn.cli``: the command line."""

import sys

from pinn.cli import main

sys.exit(main())
