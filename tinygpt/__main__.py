"""`python -m tinygpt ...`: see tinygpt/cli.py."""

import sys

from .cli import main

sys.exit(main())
