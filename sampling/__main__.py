import sys

from sampling.cli import main

sys.exit(main())
