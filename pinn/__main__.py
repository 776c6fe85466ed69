"""``python -m pinn``: the command line (the same as ``pinn`` and ``python -m pinn.cli``)."""

import sys

from pinn.cli import main

sys.exit(main())
