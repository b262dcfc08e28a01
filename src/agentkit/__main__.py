"""`python -m agentkit ...` runs the same CLI as the `agentkit` script."""

import sys

from agentkit.cli import main

sys.exit(main())
