"""``python -m topos.digest``: check or regenerate the committed digest table."""

import sys

from topos.digest.table import main

sys.exit(main())
