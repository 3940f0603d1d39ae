"""``python -m topos``: the command line of :mod:`topos.cli`."""

from topos.cli import main

raise SystemExit(main())
