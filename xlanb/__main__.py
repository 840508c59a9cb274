import sys

from xlanb.cli import main

sys.exit(main())
