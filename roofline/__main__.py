"""`python -m roofline ...`: the same command as the installed `roofline`."""

import sys

from roofline.cli import main

sys.exit(main())
