"""`python -m tinygpt ...`: see tinygpt/cli/."""

import sys

from .cli.commands import main

sys.exit(main())
