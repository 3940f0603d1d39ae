"""``python -m topos``: the command line of :mod:`topos.cli`."""

import sys

try:
    from topos.cli import main

    status = main()
except KeyboardInterrupt:
    # Ctrl-C before main() can catch it (while numpy and topos import, or arguments parse):
    # the same status and one line as a Ctrl-C later, not a traceback.
    sys.stderr.write("topos: interrupted (KeyboardInterrupt) while starting\n")
    status = 130
raise SystemExit(status)
