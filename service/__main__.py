"""``python -m service``: the same as ``roi serve``."""

import sys

if __name__ == "__main__":
    from service.server import main

    sys.exit(main())
